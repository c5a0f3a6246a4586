import type { PaymentScheme } from '../../schemes/scheme.js'
import type { Challenge } from '../../x402/challenge.js'
import type { CallRequest, ResolvedCall } from './call.js'

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/

/**
 * The challenge a refused or unpaid call is answered with, for the buyer that named itself. The
 * x402 `deferred` scheme lets a buyer send `PAYER-IDENTIFIER: <address>` (no proof: a voucher must
 * still be signed by that address) and answers with its escrow account and latest voucher, so the
 * buyer can aggregate onto it. Without the header, or for an endpoint whose schemes do not tailor
 * their requirement, the endpoint's precomputed challenge.
 */
export function createPayerChallenge(schemes: readonly PaymentScheme[]) {
  const tailoring = schemes.filter((s) => s.forPayer !== undefined)
  return async function payerChallenge(call: ResolvedCall, req: CallRequest): Promise<Challenge> {
    const header = req.headers['payer-identifier']
    if (tailoring.length === 0 || typeof header !== 'string' || !ADDRESS_RE.test(header.trim())) return call.challenge
    const payer = header.trim().toLowerCase() as `0x${string}`
    // exact's requirement comes first and is the same for everyone; the others follow it
    const others = call.challenge.v2.accepts.slice(1)
    if (!others.some((a) => tailoring.some((s) => s.name === a.scheme))) return call.challenge
    const tailored = await Promise.all(
      others.map((a) => {
        const scheme = tailoring.find((s) => s.name === a.scheme)
        return scheme ? scheme.forPayer!(a, payer, req.log) : a
      }),
    )
    return call.entry.challengeWith(call.method, tailored)
  }
}
