import { callProvider, joinUrl, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  domain?: string
  company?: string
  firstName?: string
  lastName?: string
  fullName?: string
  limit?: number
  type?: 'personal' | 'generic'
}

const PROVIDER = 'Hunter'
const MAX_LIMIT = 50

/**
 * Hunter API v2 shapes (https://hunter.io/api-documentation/v2, "Email Finder" and "Domain Search"):
 *   /v2/email-finder → { data: { first_name, last_name, email, score, domain, accept_all, position, company,
 *     twitter, linkedin_url, phone_number, sources: [{ domain, uri, extracted_on, last_seen_on, still_on_page }],
 *     verification: { date, status } }, meta: { params } }  (email null when none was found)
 *   /v2/domain-search → { data: { domain, disposable, webmail, accept_all, pattern, organization, emails: [{ value,
 *     type, confidence, sources, first_name, last_name, position, seniority, department, linkedin, twitter,
 *     phone_number, verification: { date, status } }] }, meta: { results, limit, offset } }
 *   errors → HTTP 4xx { errors: [{ id, code, details }] }; 451 when the person asked not to be processed.
 */
interface Source {
  domain?: string
  uri?: string
  extracted_on?: string
  last_seen_on?: string
  still_on_page?: boolean
}
interface Verification {
  date?: string | null
  status?: string | null
}
interface FinderData {
  first_name?: string | null
  last_name?: string | null
  email?: string | null
  score?: number | null
  domain?: string | null
  accept_all?: boolean | null
  position?: string | null
  company?: string | null
  twitter?: string | null
  linkedin_url?: string | null
  sources?: Source[]
  verification?: Verification | null
}
interface DomainEmail {
  value?: string
  type?: string
  confidence?: number
  sources?: Source[]
  first_name?: string | null
  last_name?: string | null
  position?: string | null
  seniority?: string | null
  department?: string | null
  linkedin?: string | null
  twitter?: string | null
  verification?: Verification | null
}
interface DomainData {
  domain?: string
  disposable?: boolean
  webmail?: boolean
  accept_all?: boolean
  pattern?: string | null
  organization?: string | null
  emails?: DomainEmail[]
}
interface HunterAnswer<T> {
  data?: T
  meta?: { results?: number; limit?: number; offset?: number }
  errors?: Array<{ id?: string; code?: number; details?: string }>
}

const DOMAIN = /^(?=.{3,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i

/** Sources are summarized: their count, and the first few pages where the address was seen. */
const sourcesOf = (s: Source[] | undefined) => ({
  sourcesCount: Array.isArray(s) ? s.length : 0,
  sources: (Array.isArray(s) ? s : [])
    .filter((x) => x !== null && typeof x === 'object')
    .slice(0, 5)
    .map((x) => ({
      uri: x.uri ?? null,
      extractedOn: x.extracted_on ?? null,
      lastSeenOn: x.last_seen_on ?? null,
      stillOnPage: x.still_on_page ?? null,
    })),
})
const verificationOf = (v: Verification | null | undefined) => ({ status: v?.status ?? null, date: v?.date ?? null })

/** Finds a person's professional e-mail address (or a domain's addresses) through Hunter.io. */
export default defineHandler<Input>({
  slug: 'email-finder',
  description:
    "Find a person's professional e-mail address from their name and company domain, or list the addresses Hunter.io knows at a domain; with Hunter's confidence score, sources and verification status.",
  providers: ['HUNTER_API_URL', 'HUNTER_API_KEY'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      domain: {
        type: 'string',
        minLength: 3,
        maxLength: 253,
        description:
          'Company domain, e.g. "reddit.com". Required for a domain search; for a person, give domain or company.',
      },
      company: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: 'Company name instead of the domain (person search only), e.g. "Reddit".',
      },
      firstName: {
        type: 'string',
        minLength: 1,
        maxLength: 100,
        description: "Person's first name (with lastName). Giving a name selects the person search (email finder).",
      },
      lastName: { type: 'string', minLength: 1, maxLength: 100, description: "Person's last name (with firstName)." },
      fullName: {
        type: 'string',
        minLength: 3,
        maxLength: 200,
        description: "Person's full name, instead of firstName + lastName.",
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_LIMIT,
        description: `Domain search: how many addresses to return (1–${MAX_LIMIT}, default 10; Hunter's plan may cap it lower).`,
      },
      type: {
        type: 'string',
        enum: ['personal', 'generic'],
        description: 'Domain search: only personal (jane@) or generic (contact@) addresses.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'Person: { mode: "finder", found, email, score (Hunter confidence 0–100), firstName, lastName, domain, company, position, acceptAll, linkedin, twitter, sourcesCount, sources[] (first 5: uri, extractedOn, lastSeenOn, stillOnPage), verification { status, date } as Hunter gives it, reason when not found }. ' +
      'Domain: { mode: "domain-search", domain, organization, pattern, acceptAll, webmail, disposable, total (addresses Hunter knows), emails[] { email, type, confidence, firstName, lastName, position, seniority, department, linkedin, twitter, sourcesCount, verification } }.',
    schema: {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: ['finder', 'domain-search'] },
        found: { type: 'boolean' },
        email: { type: ['string', 'null'] },
        score: { type: ['number', 'null'] },
        emails: { type: 'array' },
      },
    },
    example: {
      mode: 'finder',
      found: true,
      email: 'alexis@reddit.com',
      score: 97,
      firstName: 'Alexis',
      lastName: 'Ohanian',
      domain: 'reddit.com',
      company: 'Reddit',
      position: 'Cofounder',
      acceptAll: false,
      linkedin: null,
      twitter: 'alexisohanian',
      sourcesCount: 7,
      sources: [
        { uri: 'http://example.com/page-0', extractedOn: '2015-07-29', lastSeenOn: '2017-07-01', stillOnPage: true },
        { uri: 'http://example.com/page-1', extractedOn: '2015-07-29', lastSeenOn: '2017-07-01', stillOnPage: false },
        { uri: 'http://example.com/page-2', extractedOn: '2015-07-29', lastSeenOn: '2017-07-01', stillOnPage: true },
      ],
      verification: { status: 'valid', date: '2019-12-06' },
    },
  },
  example: { domain: 'reddit.com', firstName: 'Alexis', lastName: 'Ohanian' },
  async run(input, ctx) {
    const base = providerSetting(ctx, 'HUNTER_API_URL', 'e-mail finding')
    const key = providerSetting(ctx, 'HUNTER_API_KEY', 'e-mail finding')
    const domain = input.domain
      ?.trim()
      .toLowerCase()
      .replace(/^https?:\/\//, '')
      .replace(/\/.*$/, '')
      .replace(/^www\./, '')
    if (domain !== undefined && !DOMAIN.test(domain))
      throw new HandlerInputError('domain', 'domain must be a domain name such as example.com')
    const person = input.firstName !== undefined || input.lastName !== undefined || input.fullName !== undefined

    if (!person) {
      if (input.company !== undefined)
        throw new HandlerInputError(
          'firstName',
          'company is for a person search: give firstName + lastName or fullName, or a domain for a domain search',
        )
      if (domain === undefined)
        throw new HandlerInputError(
          'domain',
          'domain is required (or a person: firstName + lastName or fullName, with domain or company)',
        )
      const limit = input.limit ?? 10
      const a = await hunter<DomainData>(base, '/v2/domain-search', {
        domain,
        limit,
        offset: 0,
        type: input.type,
        api_key: key,
      })
      if (a.status !== 200 || !a.body.data)
        return {
          body: {
            mode: 'domain-search',
            domain,
            organization: null,
            pattern: null,
            acceptAll: null,
            webmail: null,
            disposable: null,
            total: 0,
            emails: [],
          },
        }
      const d = a.body.data
      const emails = (Array.isArray(d.emails) ? d.emails : [])
        .filter((e) => e !== null && typeof e === 'object')
        .slice(0, limit)
        .map((e) => ({
          email: e.value ?? null,
          type: e.type ?? null,
          confidence: typeof e.confidence === 'number' ? e.confidence : null,
          firstName: e.first_name ?? null,
          lastName: e.last_name ?? null,
          position: e.position ?? null,
          seniority: e.seniority ?? null,
          department: e.department ?? null,
          linkedin: e.linkedin ?? null,
          twitter: e.twitter ?? null,
          sourcesCount: Array.isArray(e.sources) ? e.sources.length : 0,
          verification: verificationOf(e.verification),
        }))
      return {
        body: {
          mode: 'domain-search',
          domain: d.domain ?? domain,
          organization: d.organization ?? null,
          pattern: d.pattern ?? null,
          acceptAll: d.accept_all ?? null,
          webmail: d.webmail ?? null,
          disposable: d.disposable ?? null,
          total: typeof a.body.meta?.results === 'number' ? a.body.meta.results : emails.length,
          emails,
        },
      }
    }

    if (input.limit !== undefined || input.type !== undefined)
      throw new HandlerInputError(
        input.limit !== undefined ? 'limit' : 'type',
        'limit and type are for a domain search (without a name)',
      )
    if (input.fullName === undefined && (input.firstName === undefined || input.lastName === undefined)) {
      throw new HandlerInputError(
        input.firstName === undefined ? 'firstName' : 'lastName',
        'a person search needs firstName and lastName (or fullName)',
      )
    }
    if (input.fullName !== undefined && (input.firstName !== undefined || input.lastName !== undefined))
      throw new HandlerInputError('fullName', 'give fullName or firstName + lastName, not both')
    if (domain === undefined && input.company === undefined)
      throw new HandlerInputError('domain', 'a person search needs domain or company')
    const a = await hunter<FinderData>(base, '/v2/email-finder', {
      domain,
      company: domain === undefined ? input.company?.trim() : undefined,
      first_name: input.firstName?.trim(),
      last_name: input.lastName?.trim(),
      full_name: input.fullName?.trim(),
      api_key: key,
    })
    const who = {
      firstName: input.firstName ?? null,
      lastName: input.lastName ?? null,
      fullName: input.fullName ?? null,
      domain: domain ?? null,
      company: input.company ?? null,
    }
    if (a.status === 451)
      return {
        body: {
          mode: 'finder',
          found: false,
          ...who,
          email: null,
          reason: 'this person asked Hunter not to process their data',
        },
      }
    const d = a.body.data
    if (a.status !== 200 || !d || !d.email)
      return {
        body: { mode: 'finder', found: false, ...who, email: null, reason: 'Hunter found no address for this person' },
      }
    return {
      body: {
        mode: 'finder',
        found: true,
        email: d.email,
        score: typeof d.score === 'number' ? d.score : null,
        firstName: d.first_name ?? null,
        lastName: d.last_name ?? null,
        domain: d.domain ?? domain ?? null,
        company: d.company ?? null,
        position: d.position ?? null,
        acceptAll: d.accept_all ?? null,
        linkedin: d.linkedin_url ?? null,
        twitter: d.twitter ?? null,
        ...sourcesOf(d.sources),
        verification: verificationOf(d.verification),
      },
    }
  },
})

/** One Hunter call: 200, 404 and 451 come back; a 400 about the input is the buyer's; anything else is a 502. */
async function hunter<T>(
  base: string,
  path: string,
  query: Record<string, string | number | undefined>,
): Promise<{ status: number; body: HunterAnswer<T> }> {
  const r = await callProvider(PROVIDER, joinUrl(base, path, query), { acceptStatus: [400, 404, 422, 451] })
  const body = r.json as HunterAnswer<T> | undefined
  if (!body || typeof body !== 'object')
    throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered something that is not JSON`)
  if (r.status === 400 || r.status === 422) {
    const e = body.errors?.[0]
    const details = typeof e?.details === 'string' ? e.details.slice(0, 200) : 'invalid parameters'
    const field = /domain/i.test(`${e?.id} ${details}`)
      ? 'domain'
      : /company/i.test(details)
        ? 'company'
        : /full.?name/i.test(details)
          ? 'fullName'
          : /first.?name/i.test(details)
            ? 'firstName'
            : /last.?name/i.test(details)
              ? 'lastName'
              : 'domain'
    // an api_key problem is ours, not the buyer's
    if (/api.?key/i.test(`${e?.id} ${details}`))
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} refused the configured API key`)
    throw new HandlerInputError(field, `${field}: ${PROVIDER} refused the request (${details})`)
  }
  return { status: r.status, body }
}
