/**
 * The buyer's side of x402 `sign-in-with-x`: reads the extension a 402 declares, checks it is bound
 * to the origin that answered (as the official client's `assertSIWxChallengeBoundToOrigin`), and
 * builds the `SIGN-IN-WITH-X` proof: the challenge's fields, the wallet's address and chain, and an
 * EIP-191 signature over the EIP-4361 message (x402/sign-in-with-x.ts, the same text the proxy checks).
 */
import { SIGN_IN_WITH_X, signInMessage, type SignInInfo, type SignInPayload } from '../x402/sign-in-with-x.js'
import type { ParsedChallenge } from './challenge.js'

/** A sign-in the 402 offers this buyer: the challenge to sign, on the chain it pays on. */
export interface SignInOffer {
  info: SignInInfo
  /** CAIP-2, e.g. eip155:84532 */
  chainId: string
  /** the resource the access is for (the challenge's `uri`) */
  uri: string
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * The sign-in a v2 challenge offers, when it declares `sign-in-with-x` for an EVM chain, bound to
 * `requestUrl`'s origin; undefined otherwise (nothing to sign, or a challenge for another origin,
 * which is never signed).
 */
export function signInOffer(
  offered: readonly { parsed: ParsedChallenge }[],
  requestUrl: string,
): SignInOffer | undefined {
  const v2 = offered.find((o) => o.parsed.version === 2)?.parsed
  const ext = v2?.extensions?.[SIGN_IN_WITH_X]
  if (!isObject(ext) || !isObject(ext.info) || !Array.isArray(ext.supportedChains)) return undefined
  const info = ext.info as unknown as SignInInfo
  for (const f of ['domain', 'uri', 'version', 'nonce', 'issuedAt'] as const)
    if (typeof info[f] !== 'string') return undefined
  const origin = new URL(requestUrl)
  let uri: URL
  try {
    uri = new URL(info.uri)
  } catch {
    return undefined
  }
  if (info.domain !== origin.host || uri.origin !== origin.origin) return undefined
  // the chain the seller is paid on first, as the official wrapFetchWithSIWx picks it
  const networks = v2!.accepts.map((a) => a.network)
  const chains = (ext.supportedChains as unknown[]).filter(
    (c): c is { chainId: string; type: string } =>
      isObject(c) && typeof c.chainId === 'string' && c.type === 'eip191' && /^eip155:\d+$/.test(c.chainId),
  )
  const chain = chains.find((c) => networks.includes(c.chainId)) ?? chains[0]
  if (!chain) return undefined
  return { info, chainId: chain.chainId, uri: `${uri.origin}${uri.pathname}` }
}

/**
 * The `SIGN-IN-WITH-X` header value for an offer, signed by `signMessage` (a local key's EIP-191
 * personal_sign, or the platform's for a custodial wallet).
 */
export async function signInHeader(
  offer: SignInOffer,
  address: string,
  signMessage: (message: string) => Promise<string>,
): Promise<string> {
  const { info } = offer
  const unsigned: Omit<SignInPayload, 'signature'> = {
    domain: info.domain,
    address,
    uri: info.uri,
    version: info.version,
    chainId: offer.chainId,
    type: 'eip191',
    nonce: info.nonce,
    issuedAt: info.issuedAt,
    ...(info.statement !== undefined ? { statement: info.statement } : {}),
    ...(info.expirationTime !== undefined ? { expirationTime: info.expirationTime } : {}),
    ...(info.notBefore !== undefined ? { notBefore: info.notBefore } : {}),
    ...(info.requestId !== undefined ? { requestId: info.requestId } : {}),
    ...(info.resources !== undefined ? { resources: info.resources } : {}),
  }
  const signature = await signMessage(signInMessage({ ...unsigned, signature: '' }))
  return Buffer.from(JSON.stringify({ ...unsigned, signature })).toString('base64')
}
