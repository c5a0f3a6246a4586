/**
 * upto (usage-based price): a Permit2 authorization for the requirement's maximum from the
 * custodial key, the wallet's Permit2 approval sent first when missing (agent-permit2.ts). The
 * caps and the wallet's unsettled total reserve the maximum; the outcome (or the sweep) lowers
 * the caps' count to the charge the proxy recorded, and a failed call releases it all.
 */
import { privateKeyToAccount } from 'viem/accounts'
import { signUpto } from '../../../client/sign-upto.js'
import { balanceError } from '../spend-answers.js'
import type { Unsettled } from '../spend-windows.js'
import type { AgentPaymentsContext } from './context.js'
import { requirementColumns } from './pay-inputs.js'
import { transferPayment } from './pay-transfer.js'
import type { Paying, SignedPayment } from './types.js'

export async function payUpto(ctx: AgentPaymentsContext, p: Paying): Promise<SignedPayment> {
  const { agent, c, w, at } = p
  const { req } = c
  const usdc = ctx.config.chain.usdc
  const balance = await ctx.balances.balanceOf(agent.address)
  if (balance < req.amount) throw balanceError(balance, 0n, req.amount)
  const key = ctx.keys.privateKeyOf(agent)
  const token = req.extra ?? { name: usdc.name, version: usdc.version }
  await ctx.permit2.ensure(agent.address, key, { address: req.asset, ...token })
  const nowSeconds = Math.floor(at.getTime() / 1000)
  const signed = await signUpto(
    privateKeyToAccount(`0x${key.toString('hex')}`),
    { ...req, maxTimeoutSeconds: ctx.validFor(req) },
    nowSeconds,
  )
  const pay: Unsettled = {
    payer: agent.address.toLowerCase(),
    nonce: signed.nonce,
    amount: req.amount,
    validBefore: signed.deadline,
  }
  return transferPayment(ctx, p, {
    balance,
    pay,
    nowSeconds,
    async record() {
      const id = await ctx.writer.write({
        ...requirementColumns(agent, 2, c.url, c.method, req),
        max_amount: req.amount.toString(),
        nonce: signed.nonce,
        valid_after: signed.validAfter.toString(),
        valid_before: signed.deadline.toString(),
        day_window: w.day,
        month_window: w.month,
        scheme: 'upto',
      })
      return { id, payload: signed.payload }
    },
  })
}
