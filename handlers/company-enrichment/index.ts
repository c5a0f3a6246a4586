import { num, pdlEnrich, str, strings } from '../_shared/misc-pdl.js'
import { parsePublicUrl } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  website?: string
  name?: string
  profile?: string
  ticker?: string
}

/**
 * `GET /v5/company/enrich` answer (https://docs.peopledatalabs.com/docs/company-enrichment-api), a flat record:
 *   { status: 200, likelihood, id, name, display_name, website, industry, size, employee_count, founded, type,
 *     ticker, headline, summary, tags[], location: { name, locality, region, country, continent, ... },
 *     linkedin_url, twitter_url, facebook_url, alternative_domains[], ... }
 */
type CompanyAnswer = Record<string, unknown> & { location?: Record<string, unknown> | null }

const DOMAIN = /^(?=.{3,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i

/** Enriches a company (by website, name or social profile) from People Data Labs. */
export default defineHandler<Input>({
  slug: 'company-enrichment',
  description:
    'A company profile from People Data Labs, by website, name, social profile or ticker: name, domain, industry, size and employee count, founding year, location, LinkedIn and tags, with the match likelihood.',
  providers: ['PDL_API_URL', 'PDL_API_KEY'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      website: {
        type: 'string',
        maxLength: 253,
        description: 'The company website or domain, e.g. "google.com". Give website, name, profile or ticker.',
      },
      name: { type: 'string', minLength: 2, maxLength: 150, description: 'The company name, e.g. "Google".' },
      profile: {
        type: 'string',
        maxLength: 300,
        description: 'A social profile URL of the company, e.g. https://www.linkedin.com/company/google.',
      },
      ticker: { type: 'string', pattern: '^[A-Za-z0-9.-]{1,10}$', description: 'Stock ticker, e.g. GOOGL.' },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'found, likelihood (PDL match confidence 1–10), company { id, name, displayName, domain, alternativeDomains[] (first 10), industry, size (range), employeeCount, founded (year), type, ticker, headline, summary, ' +
      'location { name, locality, region, country, continent }, linkedinUrl, twitterUrl, facebookUrl, tags[] (first 20) }. Values are as PDL stores them; a field PDL does not have is null. found:false with a reason when PDL has no match.',
    schema: {
      type: 'object',
      properties: {
        found: { type: 'boolean' },
        likelihood: { type: ['integer', 'null'] },
        company: { type: ['object', 'null'] },
        reason: { type: 'string' },
      },
    },
    example: {
      found: true,
      likelihood: 9,
      company: {
        id: 'aKCIYBNF9ey6o5CjHCCO4goHYKlf',
        name: 'google',
        displayName: 'Google',
        domain: 'google.com',
        alternativeDomains: ['google.org'],
        industry: 'internet',
        size: '10001+',
        employeeCount: 271000,
        founded: 1998,
        type: 'public',
        ticker: 'googl',
        headline: 'search and advertising',
        summary: 'a problem isn’t truly solved until it’s solved for all.',
        location: {
          name: 'mountain view, california, united states',
          locality: 'mountain view',
          region: 'california',
          country: 'united states',
          continent: 'north america',
        },
        linkedinUrl: 'linkedin.com/company/google',
        twitterUrl: 'twitter.com/google',
        facebookUrl: 'facebook.com/google',
        tags: ['tag 1', 'tag 2', 'tag 3'],
      },
    },
  },
  example: { website: 'google.com' },
  async run(input, ctx) {
    const website = input.website
      ?.trim()
      .toLowerCase()
      .replace(/^https?:\/\//, '')
      .replace(/[/?#].*$/, '')
      .replace(/^www\./, '')
    const name = input.name?.trim()
    const profile = input.profile?.trim()
    const ticker = input.ticker?.trim()
    if (!website && !name && !profile && !ticker)
      throw new HandlerInputError('website', 'give website, name, profile or ticker')
    if (website !== undefined && !DOMAIN.test(website))
      throw new HandlerInputError('website', 'website must be a domain or URL such as example.com')
    if (name !== undefined && name.length < 2)
      throw new HandlerInputError('name', 'name must have at least 2 characters')
    if (profile !== undefined)
      parsePublicUrl(/^[a-z][a-z0-9+.-]*:/i.test(profile) ? profile : `https://${profile}`, 'profile')

    const r = await pdlEnrich<CompanyAnswer>(
      ctx,
      '/v5/company/enrich',
      { website, name, profile, ticker },
      website ? 'website' : name ? 'name' : profile ? 'profile' : 'ticker',
    )
    if (!r.found)
      return {
        body: { found: false, likelihood: null, company: null, reason: `People Data Labs has no match (${r.message})` },
      }
    const c = r.body
    const loc = c.location && typeof c.location === 'object' ? c.location : {}
    return {
      body: {
        found: true,
        likelihood: num(c.likelihood),
        company: {
          id: str(c.id),
          name: str(c.name),
          displayName: str(c.display_name),
          domain: str(c.website),
          alternativeDomains: strings(c.alternative_domains, 10),
          industry: str(c.industry),
          size: str(c.size),
          employeeCount: num(c.employee_count),
          founded: num(c.founded),
          type: str(c.type),
          ticker: str(c.ticker),
          headline: str(c.headline),
          summary: str(c.summary),
          location: {
            name: str(loc.name),
            locality: str(loc.locality),
            region: str(loc.region),
            country: str(loc.country),
            continent: str(loc.continent),
          },
          linkedinUrl: str(c.linkedin_url),
          twitterUrl: str(c.twitter_url),
          facebookUrl: str(c.facebook_url),
          tags: strings(c.tags, 20),
        },
      },
    }
  },
})
