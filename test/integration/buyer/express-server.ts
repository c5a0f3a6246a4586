import express from 'express'
import type { Server } from 'node:http'
import { createWalletClient, http, publicActions } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { x402Facilitator } from '@x402/core/facilitator'
import { paymentMiddleware, x402ResourceServer } from '@x402/express'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { registerExactEvmScheme } from '@x402/evm/exact/facilitator'
import { toFacilitatorEvmSigner } from '@x402/evm'
import type { Devnet } from '../../../src/chain/devnet.js'

/**
 * The official `@x402/express` server on the devnet, with an in-process facilitator
 * (`x402Facilitator` + @x402/evm's exact scheme) that verifies and settles on the same chain:
 * no network beyond the local anvil.
 */
export async function startOfficialExpressServer(
  devnet: Devnet,
  payTo: `0x${string}`,
  facilitatorKey: `0x${string}`,
): Promise<{ url: string; close(): Promise<void> }> {
  const account = privateKeyToAccount(facilitatorKey)
  const client = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) }).extend(
    publicActions,
  )
  const signer = toFacilitatorEvmSigner({ ...client, address: account.address } as unknown as Parameters<
    typeof toFacilitatorEvmSigner
  >[0])
  const facilitator = new x402Facilitator()
  registerExactEvmScheme(facilitator, { signer, networks: 'eip155:84532' })
  const resourceServer = new x402ResourceServer(facilitator as never).register(
    'eip155:84532',
    new ExactEvmServerScheme(),
  )
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /weather': {
          accepts: { scheme: 'exact', price: '$0.001', network: 'eip155:84532', payTo, maxTimeoutSeconds: 60 },
          description: 'weather',
        },
      },
      resourceServer,
    ),
  )
  app.get('/weather', (_req, res) => {
    res.json({ weather: 'sunny' })
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const port = (server.address() as { port: number }).port
  return { url: `http://127.0.0.1:${port}/weather`, close: () => new Promise((r) => server.close(() => r())) }
}
