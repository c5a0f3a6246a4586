/**
 * The reference x402 stack for bench:proxy: the official `@x402/express` middleware with an
 * in-process facilitator (`x402Facilitator` + @x402/evm's exact scheme) on the same devnet,
 * serving the same trivial work as the proxy's echo handler. It verifies through RPC and settles
 * each payment on-chain before answering, as the reference middleware does.
 */
import type { Server } from 'node:http'
import { x402Facilitator } from '@x402/core/facilitator'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { registerExactEvmScheme } from '@x402/evm/exact/facilitator'
import { ExactEvmScheme } from '@x402/evm/exact/server'
import { paymentMiddleware, x402ResourceServer } from '@x402/express'
import express from 'express'
import { createWalletClient, http, publicActions, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Devnet } from '../src/chain/devnet.js'

export async function startReferenceStack(
  devnet: Devnet,
  payTo: `0x${string}`,
  facilitatorKey: Hex,
): Promise<{ url: string; close(): Promise<void> }> {
  const account = privateKeyToAccount(facilitatorKey)
  const client = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) }).extend(
    publicActions,
  )
  const signer = toFacilitatorEvmSigner({ ...client, address: account.address } as unknown as Parameters<
    typeof toFacilitatorEvmSigner
  >[0])
  const network = `eip155:${devnet.chain.id}` as const
  const facilitator = new x402Facilitator()
  registerExactEvmScheme(facilitator, { signer, networks: network })
  const resourceServer = new x402ResourceServer(facilitator as never).register(network, new ExactEvmScheme())
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /echo': {
          accepts: { scheme: 'exact', price: '$0.001', network, payTo, maxTimeoutSeconds: 300 },
          description: 'echo',
        },
      },
      resourceServer,
    ),
  )
  app.get('/echo', (req, res) => {
    res.json({ echo: req.query })
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const port = (server.address() as { port: number }).port
  return { url: `http://127.0.0.1:${port}/echo?msg=hi`, close: () => new Promise((r) => server.close(() => r())) }
}
