/**
 * `signIn`: an x402 `sign-in-with-x` proof from the agent wallet instead of a payment, where the
 * seller offers one bound to the URL's origin and the agent may pay that seller (the same checks
 * as `pay`: its allowlist, this deployment's network, the payee checked by the platform), and the
 * seller itself offers that sign-in: this platform's registry says the endpoint sells access, or
 * the host's own 402 (fetched by the platform) declares the same domain, uri and statement.
 * Nothing is reserved or spent.
 */
import { privateKeyToAccount } from 'viem/accounts'
import { signInHeader, signInOffer, type SignInOffer } from '../../../client/sign-in.js'
import { appError } from '../../../errors.js'
import type { AgentRow } from '../../accounts/agent-auth.js'
import { chooseRequirement, type PayBody } from '../choose-requirement.js'
import { checked } from './checked.js'
import type { AgentPaymentsContext } from './context.js'

export async function signIn(ctx: AgentPaymentsContext, who: string | AgentRow, body: PayBody) {
  const agent = typeof who === 'string' ? await ctx.auth.load(who) : who
  const choice = chooseRequirement(agent, body, ctx.terms)
  const { ch, url } = choice
  await checked(ctx, choice)
  const offer = signInOffer([{ parsed: ch }], url.toString())
  if (!offer)
    throw appError(
      'invalid_parameter',
      {
        param: 'challenge',
        detail: "the challenge declares no sign-in-with-x for an EVM chain bound to the url's origin",
      },
      { details: { param: 'challenge' } },
    )
  await confirmSignIn(ctx, url, choice.method, offer)
  const account = privateKeyToAccount(`0x${ctx.keys.privateKeyOf(agent).toString('hex')}`)
  const value = await signInHeader(offer, account.address, (message) => account.signMessage({ message }))
  return {
    object: 'agent_sign_in' as const,
    header: 'SIGN-IN-WITH-X' as const,
    value,
    payer: account.address,
    uri: offer.uri,
  }
}

/** Refuses a sign-in the seller at `url` does not offer itself (`seller_not_allowed`). */
async function confirmSignIn(ctx: AgentPaymentsContext, url: URL, method: string, offer: SignInOffer): Promise<void> {
  const refuse = (why: string) =>
    appError(
      'seller_not_allowed',
      { detail: `the agent signs in only where the seller itself offers it: ${why}` },
      { details: { pay_to: null, host: url.hostname, namespace: null } },
    )
  if (url.origin === ctx.proxyOrigin) {
    const e = await ctx.platform.endpointAt(url)
    if (!e?.access) throw refuse(`${url.pathname} on this platform sells no paid access`)
    const statement = `Sign in with the wallet that paid for access to ${e.path}`
    if (offer.info.statement !== statement || offer.uri !== e.resourceUrl)
      throw refuse(`the sign-in is not the one ${e.path} offers (its uri or statement differ)`)
    return
  }
  const seen = await ctx.seenChallenges.seen(url, method).catch(() => undefined)
  if (!seen) throw refuse(`the platform could not fetch ${url.host}'s own 402 challenge`)
  const theirs = signInOffer(seen.offered, url.toString())
  if (
    !theirs ||
    theirs.info.domain !== offer.info.domain ||
    theirs.uri !== offer.uri ||
    theirs.info.statement !== offer.info.statement
  )
    throw refuse(`${url.host}'s own 402 challenge offers no such sign-in (domain, uri and statement must match)`)
}
