/**
 * The official reference stack for bench:batch: `@x402/express` with the official `batch-settlement`
 * server scheme (its in-memory channel storage) and an in-process facilitator (`x402Facilitator` +
 * the official batch-settlement facilitator scheme, whose authorizer key signs as the
 * receiverAuthorizer) on the same devnet, serving a trivial JSON answer.
 */
import type { Server } from 'node:http'
import { x402Facilitator } from '@x402/core/facilitator'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme as FacilitatorScheme } from '@x402/evm/batch-settlement/facilitator'
import { BatchSettlementEvmScheme as ServerScheme } from '@x402/evm/batch-settlement/server'
import { paymentMiddleware, x402ResourceServer } from '@x402/express'
import express from 'express'
import { createWalletClient, http, publicActions, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Devnet } from '../src/chain/devnet.js'

export async function startBatchReference(
  devnet: Devnet,
  payTo: `0x${string}`,
  facilitatorKey: Hex,
  authorizerKey: Hex,
): Promise<{ url: string; close(): Promise<void> }> {
  const account = privateKeyToAccount(facilitatorKey)
  const client = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) }).extend(
    publicActions,
  )
  const signer = toFacilitatorEvmSigner({ ...client, address: account.address } as unknown as Parameters<
    typeof toFacilitatorEvmSigner
  >[0])
  const network = `eip155:${devnet.chain.id}` as const
  const authorizer = privateKeyToAccount(authorizerKey)
  const facilitator = new x402Facilitator().register(network, new FacilitatorScheme(signer, authorizer as never))
  const resourceServer = new x402ResourceServer(facilitator as never).register(network, new ServerScheme(payTo))
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /echo': {
          accepts: { scheme: 'batch-settlement', price: '$0.001', network, payTo, maxTimeoutSeconds: 300 },
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
