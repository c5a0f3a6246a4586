/** `tollgate devnet`: the embedded dev chain alone (anvil, test USDC, Multicall3, the deferred escrow) until Ctrl-C. */
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const DEVNET_HELP =
  'usage: tollgate devnet [--port 8545] [--json]\n\nStarts anvil with test USDC, Multicall3 and the deferred-scheme escrow, prints the RPC URL and accounts, runs until Ctrl-C.\n'

export async function devnetCommand(args: string[], cmd: Command): Promise<number> {
  const { values: v } = parseOptions(args, { port: { type: 'string' } }, DEVNET_HELP)
  if (v.help) {
    cmd.io.stdout(DEVNET_HELP)
    return EXIT.ok
  }
  const port = Number(v.port ?? 8545)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be 0..65535\n\n${DEVNET_HELP}`)
  const { startDevnet } = await import('../../chain/devnet.js')
  const devnet = await startDevnet({ port })
  const a = devnet.accounts
  const accounts = { relayer: a.relayer, demoPayer: a.demoPayer, receiver: a.receiver, faucet: a.faucet }
  cmd.out.result(
    {
      object: 'devnet',
      rpc_url: devnet.rpcUrl,
      chain_id: devnet.chainId,
      usdc: devnet.usdcAddress,
      multicall3: devnet.multicall3Address,
      deferred_escrow: devnet.deferredEscrowAddress,
      accounts: Object.fromEntries(
        Object.entries(accounts).map(([k, x]) => [k, { address: x.address, private_key: x.privateKey }]),
      ),
    },
    [
      `RPC URL   ${devnet.rpcUrl}`,
      `chain id  ${devnet.chainId}`,
      `USDC      ${devnet.usdcAddress}`,
      `Multicall3 ${devnet.multicall3Address}`,
      `escrow    ${devnet.deferredEscrowAddress}  (DeferredPaymentEscrow, deferred scheme)`,
      'accounts (anvil dev keys: public, never use them elsewhere):',
      ...Object.entries(accounts).map(([k, x]) => `  ${k.padEnd(10)} ${x.address}  ${x.privateKey}`),
      'Ctrl-C to stop',
    ],
  )
  await (cmd.io.untilStopped ?? waitForSignal)()
  await devnet.stop()
  return EXIT.ok
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve())
    process.once('SIGTERM', () => resolve())
  })
}
