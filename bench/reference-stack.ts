/**
 * The reference x402 stack for bench:proxy: the official `@x402/express` middleware with an
 * in-process facilitator (`x402Facilitator` + @x402/evm's exact scheme) on the same devnet,
 * serving the same trivial work as the proxy's echo handler. It verifies through RPC and settles
 * each payment on-chain before answering, as the reference middleware does. The facilitator's
 * account uses viem's nonce manager (the queue the official signer accepts).
 */
import type { Server } from 'node:http'
import { x402Facilitator } from '@x402/core/facilitator'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { registerExactEvmScheme } from '@x402/evm/exact/facilitator'
import { ExactEvmScheme } from '@x402/evm/exact/server'
import { UptoEvmScheme as UptoFacilitatorScheme } from '@x402/evm/upto/facilitator'
import { UptoEvmScheme as UptoServerScheme } from '@x402/evm/upto/server'
import { paymentMiddleware, setSettlementOverrides, x402ResourceServer } from '@x402/express'
import express from 'express'
import { createWalletClient, http, publicActions, type Hex } from 'viem'
import { nonceManager, privateKeyToAccount } from 'viem/accounts'
import type { Devnet } from '../src/chain/devnet.js'

/**
 * `scheme` `upto`: the official upto server scheme and facilitator (Permit2 through the x402 upto
 * proxy, which the devnet installs at its canonical address); the route settles half the maximum,
 * as a metered call that used half its allowance.
 */
export async function startReferenceStack(
  devnet: Devnet,
  payTo: `0x${string}`,
  facilitatorKey: Hex,
  scheme: 'exact' | 'upto' = 'exact',
): Promise<{ url: string; close(): Promise<void> }> {
  // viem's nonce manager hands out the facilitator account's nonces in order, so concurrent
  // settlements queue instead of all reading the same pending nonce (without it, at 32 connections
  // almost every settlement failed with "nonce too low" and the middleware answered 402)
  const account = privateKeyToAccount(facilitatorKey, { nonceManager })
  const client = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) }).extend(
    publicActions,
  )
  const signer = toFacilitatorEvmSigner({ ...client, address: account.address } as unknown as Parameters<
    typeof toFacilitatorEvmSigner
  >[0])
  const network = `eip155:${devnet.chain.id}` as const
  const facilitator = new x402Facilitator()
  if (scheme === 'exact') registerExactEvmScheme(facilitator, { signer, networks: network })
  else facilitator.register(network, new UptoFacilitatorScheme(signer))
  const resourceServer = new x402ResourceServer(facilitator as never).register(
    network,
    scheme === 'exact' ? new ExactEvmScheme() : new UptoServerScheme(),
  )
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /echo': {
          accepts: { scheme, price: '$0.001', network, payTo, maxTimeoutSeconds: 300 },
          description: 'echo',
        },
      },
      resourceServer,
    ),
  )
  app.get('/echo', (req, res) => {
    if (scheme === 'upto') setSettlementOverrides(res, { amount: '50%' })
    res.json({ echo: req.query })
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const port = (server.address() as { port: number }).port
  return { url: `http://127.0.0.1:${port}/echo?msg=hi`, close: () => new Promise((r) => server.close(() => r())) }
}
