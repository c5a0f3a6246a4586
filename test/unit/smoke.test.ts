import t from 'tap'
import { loadConfig } from '../../src/config.js'
t.test('config loads defaults', async (t) => {
  const c = loadConfig({})
  t.equal(c.chain.chainId, 84532)
})
