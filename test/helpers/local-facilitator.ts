import Fastify from 'fastify'
import { createWalletClient, getAddress, http, parseSignature, size, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Devnet } from '../../src/chain/devnet.js'
import { usdcAbi } from '../../src/chain/usdc-abi.js'

export interface LocalFacilitator {
  url: string
  /** every /settle body received, in order */
  requests: Array<Record<string, any>>
  /** transactions it submitted */
  submitted: Hex[]
  /** makes the next n /settle calls answer 503 without submitting (unreachable facilitator) */
  failNext(n: number): void
}

/**
 * A small x402 facilitator for tests: `POST /settle` submits `transferWithAuthorization` on the
 * devnet from `key` (one transaction at a time, so its nonces never collide) and answers the
 * x402 SettleResponse once the chain has mined it. `GET /supported` lists exact on the devnet.
 */
export async function startLocalFacilitator(
  t: { teardown(fn: () => unknown): void },
  devnet: Devnet,
  key: Hex,
): Promise<LocalFacilitator> {
  const account = privateKeyToAccount(key)
  const wallet = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) })
  const requests: LocalFacilitator['requests'] = []
  const submitted: Hex[] = []
  let failing = 0
  let tail: Promise<unknown> = Promise.resolve()
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn)
    tail = run.catch(() => {})
    return run
  }

  const app = Fastify({ logger: false })
  app.get('/supported', async () => ({
    kinds: [{ x402Version: 2, scheme: 'exact', network: `eip155:${devnet.chain.id}` }],
    extensions: [],
    signers: {},
  }))
  app.post('/settle', async (request, reply) => {
    const body = request.body as Record<string, any>
    requests.push(body)
    if (failing > 0) {
      failing--
      return reply.code(503).send('down')
    }
    const req = body.paymentRequirements ?? {}
    const network = String(req.network ?? '')
    const auth = body.paymentPayload?.payload?.authorization
    const sig = body.paymentPayload?.payload?.signature as Hex | undefined
    if (!auth || !sig || typeof body.x402Version !== 'number')
      return reply.code(400).send({ success: false, errorReason: 'invalid_payload', transaction: '', network })
    const base = [
      getAddress(auth.from),
      getAddress(auth.to),
      BigInt(auth.value),
      BigInt(auth.validAfter),
      BigInt(auth.validBefore),
      auth.nonce as Hex,
    ] as const
    try {
      const hash = await serial(async () => {
        if (size(sig) === 65) {
          const { r, s, v, yParity } = parseSignature(sig)
          const vv = Number(v ?? 27n + BigInt(yParity ?? 0))
          return wallet.writeContract({
            address: getAddress(req.asset),
            abi: usdcAbi,
            functionName: 'transferWithAuthorization',
            args: [...base, vv, r, s],
          })
        }
        return wallet.writeContract({
          address: getAddress(req.asset),
          abi: usdcAbi,
          functionName: 'transferWithAuthorization',
          args: [...base, sig],
        })
      })
      submitted.push(hash)
      return { success: true, payer: getAddress(auth.from), transaction: hash, network }
    } catch (err) {
      const m = String((err as Error).message)
      const errorReason = /balance/i.test(m)
        ? 'insufficient_funds'
        : /authorization is used|used or canceled/i.test(m)
          ? 'invalid_exact_evm_payload_authorization_nonce_used'
          : 'unexpected_settle_error'
      return {
        success: false,
        errorReason,
        errorMessage: m.split('\n')[0],
        payer: getAddress(auth.from),
        transaction: '',
        network,
      }
    }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const { port } = app.server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, requests, submitted, failNext: (n) => void (failing = n) }
}
