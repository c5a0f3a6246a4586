/** exact: an EIP-3009 transferWithAuthorization from the agent's custodial key. */
import { randomNonce, signTransferAuth } from '../../../chain/sign-transfer-auth.js'
import type { HexString } from '../../../x402/types.js'
import { balanceError } from '../spend-answers.js'
import type { Unsettled } from '../spend-windows.js'
import type { AgentPaymentsContext } from './context.js'
import { requirementColumns } from './pay-inputs.js'
import { transferPayment } from './pay-transfer.js'
import type { Paying, SignedPayment } from './types.js'

export async function payExact(ctx: AgentPaymentsContext, p: Paying): Promise<SignedPayment> {
  const { agent, c, w, at } = p
  const { config } = ctx
  const { url, method, req } = c
  const balance = await ctx.balances.balanceOf(agent.address)
  if (balance < req.amount) throw balanceError(balance, 0n, req.amount)
  const nowSeconds = Math.floor(at.getTime() / 1000)
  // as the official clients: valid from 10 minutes ago until the requirement's timeout (bounded)
  const a = {
    from: agent.address as HexString,
    to: req.payTo as HexString,
    value: req.amount.toString(),
    validAfter: String(nowSeconds - 600),
    validBefore: String(nowSeconds + ctx.validFor(req)),
    nonce: randomNonce() as HexString,
  }
  const pay: Unsettled = {
    payer: agent.address.toLowerCase(),
    nonce: a.nonce,
    amount: req.amount,
    validBefore: BigInt(a.validBefore),
  }
  return transferPayment(ctx, p, {
    balance,
    pay,
    nowSeconds,
    async record() {
      const token = req.extra ?? { name: config.chain.usdc.name, version: config.chain.usdc.version }
      const signature = signTransferAuth(
        ctx.keys.privateKeyOf(agent),
        { name: token.name, version: token.version, chainId: config.chain.chainId, verifyingContract: req.asset },
        { ...a, value: req.amount, validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore) },
      )
      const id = await ctx.writer.write({
        ...requirementColumns(agent, req.version, url, method, req),
        nonce: a.nonce,
        valid_after: a.validAfter,
        valid_before: a.validBefore,
        day_window: w.day,
        month_window: w.month,
        scheme: 'exact',
      })
      return { id, payload: { signature, authorization: a } }
    },
  })
}
