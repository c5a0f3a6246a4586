import { readFileSync } from 'node:fs'
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config.js'
import { PROVIDER_SETTINGS } from '../../src/handler-providers.js'
import { settingNames } from '../../src/pool/handler-contract.js'
import { loadHandlerRegistry } from '../../src/pool/handler-registry.js'

const docs = readFileSync(new URL('../../docs/hosted-services.md', import.meta.url), 'utf8')

t.test('every provider setting is documented, and every setting a handler needs is one of them', async (t) => {
  const names = new Set(PROVIDER_SETTINGS.map((p) => p.name))
  t.equal(names.size, PROVIDER_SETTINGS.length, 'no setting listed twice')
  for (const p of PROVIDER_SETTINGS)
    t.match(docs, new RegExp(`^\\| \`${p.name}\``, 'm'), `${p.name} has a row in docs/hosted-services.md`)
  const known = new Set([...names, ...Object.keys(loadConfig({}).handlerProviders)])
  for (const [slug, h] of await loadHandlerRegistry()) {
    for (const name of settingNames(h.module)) t.ok(known.has(name), `${slug} needs ${name}, which config reads`)
  }
})

t.test(
  'defaults: public base URLs for keyless APIs, nothing for accounts, the platform RPC for chain data',
  async (t) => {
    const p = loadConfig({ RPC_URL: 'http://127.0.0.1:8545' }).handlerProviders
    t.equal(p.RDAP_URL, 'https://rdap.org')
    t.equal(p.CHAIN_DATA_RPC_URL, 'http://127.0.0.1:8545', 'chain data reads the platform chain unless told otherwise')
    t.equal(p.LLM_MODEL, 'gpt-4o-mini')
    for (const s of PROVIDER_SETTINGS.filter((s) => s.kind === 'secret'))
      t.equal(p[s.name], undefined, `${s.name} has no default`)
    const set = loadConfig({
      BRAVE_SEARCH_API_KEY: ' key ',
      COINGECKO_API_URL: 'https://pro-api.coingecko.com/api/v3/',
    }).handlerProviders
    t.equal(set.BRAVE_SEARCH_API_KEY, 'key')
    t.equal(set.COINGECKO_API_URL, 'https://pro-api.coingecko.com/api/v3')
  },
)

t.test('a bad provider URL is reported with the others, without its credentials', async (t) => {
  const err = t.throws(() =>
    loadConfig({ RDAP_URL: 'ftp://rdap.example', LLM_API_URL: 'https://user:hunter2@llm.example:bad' }),
  ) as unknown as ConfigError
  t.type(err, ConfigError)
  const text = err.problems.join('\n')
  t.match(text, /RDAP_URL/)
  t.match(text, /LLM_API_URL/)
  t.notMatch(text, /hunter2/)
})
