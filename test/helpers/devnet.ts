import { startDevnet, type Devnet, type StartDevnetOptions } from '../../src/chain/devnet.js'
import { timedSetup } from './setup-timing.js'

/**
 * Starts a private devnet (anvil on a free port) for one tap test and stops it in the test's
 * teardown, so each test file gets its own chain and leaves no process behind.
 *
 * @example
 * t.test('settles', async (t) => { const devnet = await withDevnet(t); ... })
 */
export async function withDevnet(
  t: { teardown(fn: () => unknown): void },
  opts: Omit<StartDevnetOptions, 'port'> = {},
): Promise<Devnet> {
  const devnet = await timedSetup('devnet', () => startDevnet({ ...opts, port: 0 }))
  t.teardown(() => devnet.stop())
  return devnet
}
