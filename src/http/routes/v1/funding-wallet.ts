import type { FastifyInstance } from 'fastify'
import { appError } from '../../../errors.js'
import { atomicAmount } from '../../../services/accounts/validate.js'
import { readBalances } from '../../../services/wallets/balances.js'
import { FAUCET_MAX, faucetAvailable, mintTestUsdc } from '../../../services/wallets/faucet.js'
import { ensureFundingWallet } from '../../../services/wallets/funding-wallet.js'
import { requireMasterKey } from '../../../secrets/wallet-crypto.js'
import type { V1Context } from './context.js'
import { atomic, authErrors, errorResponse, idempotencyHeader, ok } from './schemas.js'

/** The user's funding wallet (source of agent top-ups) and, on the dev chain, its faucet. */
export async function fundingWalletRoutes(app: FastifyInstance, ctx: V1Context) {
  const { db, config } = ctx.deps
  const tags = ['funding wallet']
  app.get(
    '/funding-wallet',
    {
      schema: {
        tags,
        summary: 'The funding wallet (created on first use) and its balances',
        response: { 200: ok('the wallet'), ...authErrors },
      },
    },
    async (request) => {
      const w = await ensureFundingWallet(db, requireMasterKey(config), request.principal!.userId)
      // the wallet is still worth showing when the chain does not answer: balance null, and why
      let balance = null
      let balanceError: string | null = null
      try {
        balance = await readBalances(ctx.deps, w.address as `0x${string}`)
      } catch (err) {
        balanceError = (err as Error).message
      }
      return {
        object: 'funding_wallet',
        address: w.address,
        created_at: w.created_at.toISOString(),
        balance,
        balance_error: balanceError,
        faucet_available: faucetAvailable(config),
      }
    },
  )
  app.post<{ Body: { amount?: string } }>(
    '/funding-wallet/faucet',
    {
      config: { idempotent: true },
      schema: {
        tags,
        summary: 'Dev chain only: mint test USDC into the funding wallet (default 100 USDC, at most 1,000)',
        headers: idempotencyHeader,
        body: { type: 'object', properties: { amount: atomic } },
        response: { 201: ok('the mint'), 403: errorResponse, ...authErrors },
      },
    },
    async (request, reply) => {
      if (!faucetAvailable(config)) throw appError('faucet_unavailable')
      const amount = BigInt(atomicAmount('amount', request.body?.amount ?? '100000000', { positive: true })!)
      if (amount > FAUCET_MAX)
        throw appError(
          'invalid_parameter',
          { param: 'amount', detail: `at most ${FAUCET_MAX} (1,000 USDC) per call` },
          { details: { param: 'amount' } },
        )
      const w = await ensureFundingWallet(db, requireMasterKey(config), request.principal!.userId)
      const txHash = await mintTestUsdc(ctx.deps, w.address as `0x${string}`, amount)
      return reply
        .code(201)
        .send({ object: 'faucet_mint', address: w.address, amount: amount.toString(), tx_hash: txHash })
    },
  )
}
