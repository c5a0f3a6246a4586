import { isIP } from 'node:net'
import { callProvider, joinUrl, parsePublicUrl, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'
import { isPrivateAddress } from '../../src/net/ssrf-guard.js'

interface Input {
  url: string
  domain?: string
}

const PROVIDER = 'Bitly'

/**
 * Bitly API v4 `POST /v4/shorten` (https://dev.bitly.com/api-reference, "Shorten a Link"):
 *   request { long_url, domain? } with `Authorization: Bearer <token>`
 *   200 / 201 → { created_at, id: "bit.ly/3AbCdEf", link: "https://bit.ly/3AbCdEf", custom_bitlinks: [], long_url,
 *     archived, tags, deeplinks, references: { group } }
 *   errors → { message: "INVALID_ARG_LONG_URL" | "FORBIDDEN" | "RATE_LIMIT_EXCEEDED" | ..., description, resource, errors: [{ field, error_code }] }
 */
interface BitlinkAnswer {
  created_at?: string
  id?: string
  link?: string
  long_url?: string
  message?: string
  description?: string
  errors?: Array<{ field?: string; error_code?: string }>
}

/** Host names that only mean something inside a network. */
const internalName = (h: string) =>
  h === 'localhost' || /\.(localhost|local|internal|lan|home|corp|intranet)$/.test(h) || (!h.includes('.') && !isIP(h))

/** Shortens a public http(s) URL with Bitly. */
export default defineHandler<Input>({
  slug: 'url-shortener',
  description:
    'Shorten a public http(s) URL with Bitly and get the short link back (link, id and the long URL as Bitly stored it).',
  providers: ['BITLY_API_URL', 'BITLY_TOKEN'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['url'],
    properties: {
      url: {
        type: 'string',
        minLength: 10,
        maxLength: 2048,
        description:
          'The long URL to shorten: absolute http or https, on a public host (no localhost, private or internal addresses).',
      },
      domain: {
        type: 'string',
        maxLength: 253,
        pattern: '^[A-Za-z0-9.-]+$',
        description:
          'Short domain to use, e.g. bit.ly (default) or a branded domain configured on the operator’s Bitly account.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'link (the short URL), id (domain/hash), longUrl (as Bitly stored it), createdAt (ISO time from Bitly).',
    schema: {
      type: 'object',
      properties: {
        link: { type: 'string' },
        id: { type: 'string' },
        longUrl: { type: 'string' },
        createdAt: { type: ['string', 'null'] },
      },
    },
    example: {
      link: 'https://bit.ly/3Zk8Qab',
      id: 'bit.ly/3Zk8Qab',
      longUrl: 'https://en.wikipedia.org/wiki/URL_shortening',
      createdAt: '2024-11-23T10:15:30+0000',
    },
  },
  example: { url: 'https://en.wikipedia.org/wiki/URL_shortening' },
  // it acts outside (mail sent, a link created, a request sent): recorded before it runs
  effects: true,
  async run(input, ctx) {
    const base = providerSetting(ctx, 'BITLY_API_URL', 'URL shortening')
    const token = providerSetting(ctx, 'BITLY_TOKEN', 'URL shortening')
    const url = parsePublicUrl(input.url, 'url')
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
    // Bitly never fetches the page for us, so this is a policy check on the literal host, not a DNS one
    if (isIP(host) ? isPrivateAddress(host) : internalName(host))
      throw new HandlerInputError(
        'url',
        'url must point at a public host (no localhost, private, loopback or internal addresses)',
      )
    const domain = input.domain?.trim().toLowerCase()

    const r = await callProvider(PROVIDER, joinUrl(base, '/v4/shorten'), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: { long_url: url.toString(), domain },
      acceptStatus: [400, 422],
    })
    const a = r.json as BitlinkAnswer | undefined
    if (!a || typeof a !== 'object')
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered something that is not JSON`)
    if (r.status === 400 || r.status === 422) {
      const code = typeof a.message === 'string' ? a.message.slice(0, 60) : 'INVALID_ARG'
      const field = a.errors?.[0]?.field === 'domain' || /DOMAIN/.test(code) ? 'domain' : 'url'
      if (field === 'url' && !/LONG_URL/.test(code) && !(a.errors?.[0]?.field === 'long_url'))
        throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} refused the request (${code})`)
      throw new HandlerInputError(field, `${field}: ${PROVIDER} refused it (${code})`)
    }
    if (typeof a.link !== 'string' || typeof a.id !== 'string')
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered without a link`)
    return { body: { link: a.link, id: a.id, longUrl: a.long_url ?? url.toString(), createdAt: a.created_at ?? null } }
  },
})
