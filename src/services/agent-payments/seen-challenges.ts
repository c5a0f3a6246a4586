/**
 * The 402 challenge a seller elsewhere answers, fetched by the platform itself (through the SSRF
 * guard), so that an allowlist entry naming a host binds the payee too: the agent may pay there
 * only a `payTo` the host itself asks for, never one written into the challenge the agent hands
 * over, and it signs in there only with the sign-in the host itself offers. Answers are kept
 * `ttlMs` (default 60 s) per method and resource, at most 1,000.
 */
import { Agent, request } from 'undici'
import { offeredChallenges, sameResource, type OfferedChallenge } from '../../client/challenge.js'
import { guardedLookup } from '../../net/ssrf-guard.js'

const MAX_BODY = 64 * 1024
const TIMEOUT_MS = 5000

export interface SeenChallenge {
  /** lower-case payees of the requirements for the resource */
  payTo: ReadonlySet<string>
  offered: OfferedChallenge[]
}

export function createSeenChallenges(o: { allowPrivate: boolean; ttlMs?: number }) {
  const ttlMs = o.ttlMs ?? 60_000
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(o.allowPrivate) } })
  const cache = new Map<string, { at: number; seen: SeenChallenge }>()

  async function fetchChallenge(url: URL, method: string): Promise<SeenChallenge> {
    const res = await request(url.toString(), {
      method: method as 'GET',
      dispatcher,
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
      maxRedirections: 0,
    } as Parameters<typeof request>[1])
    let text = ''
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString('utf8')
      if (text.length > MAX_BODY) break
    }
    const header = res.headers['payment-required']
    let body: unknown
    try {
      body = res.statusCode === 402 ? JSON.parse(text) : undefined
    } catch {
      body = undefined
    }
    const offered =
      res.statusCode === 402 ? offeredChallenges(typeof header === 'string' ? header : undefined, body) : []
    const payTo = new Set<string>()
    for (const c of offered)
      for (const r of c.parsed.accepts) if (sameResource(url.href, r.resourceUrl)) payTo.add(r.payTo.toLowerCase())
    return { payTo, offered }
  }

  return {
    /** The host's own challenge for `method url` (cached); rejects when the host cannot be reached. */
    async seen(url: URL, method: string): Promise<SeenChallenge> {
      const k = `${method} ${url.origin}${url.pathname}`
      const hit = cache.get(k)
      if (hit && Date.now() - hit.at < ttlMs) return hit.seen
      const seen = await fetchChallenge(url, method)
      if (cache.size >= 1000) cache.clear()
      cache.set(k, { at: Date.now(), seen })
      return seen
    },
    async close(): Promise<void> {
      cache.clear()
      await dispatcher.close()
    },
  }
}
