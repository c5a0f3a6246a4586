/** Which of the requirements the agent may pay the platform confirmed itself (the payee check before any signature). */
import type { Requirement } from '../../../client/challenge.js'
import { appError } from '../../../errors.js'
import type { Choice } from '../choose-requirement.js'
import type { AgentPaymentsContext } from './context.js'

/**
 * The chosen requirements the platform checked itself: for its own proxy, those equal to the
 * registry's (platform-terms.ts); for a seller elsewhere allowed by a `host` entry only, those
 * whose payee the host itself asks for (seen-challenges.ts). Throws when none is left.
 */
export async function checked(ctx: AgentPaymentsContext, c: Choice): Promise<Requirement[]> {
  if (c.url.origin === ctx.proxyOrigin) return ctx.platform.matching(c.url, c.payable)
  if (c.hostOnly.size === 0) return c.payable
  let payees: ReadonlySet<string> | undefined
  try {
    payees = (await ctx.seenChallenges.seen(c.url, c.method)).payTo
  } catch {
    payees = undefined
  }
  const ok = c.payable.filter((r) => !c.hostOnly.has(r) || payees?.has(r.payTo.toLowerCase()))
  if (ok.length > 0) return ok
  const r = c.payable[0]!
  throw appError(
    'seller_not_allowed',
    {
      detail: payees
        ? `payTo ${r.payTo} is not a payee ${c.url.host} asks for itself (the platform fetched its 402 challenge); only its host entry allows it`
        : `the platform could not fetch ${c.url.host}'s own 402 challenge to confirm the payee ${r.payTo}; add a pay_to entry for it, or retry`,
    },
    { details: { pay_to: r.payTo, host: c.url.hostname, namespace: null } },
  )
}
