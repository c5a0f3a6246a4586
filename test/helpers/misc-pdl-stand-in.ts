import type { ReceivedRequest, StandInAnswer } from './provider-stand-in.js'

/**
 * Routes of a People Data Labs stand-in, answering in the shapes of https://docs.peopledatalabs.com
 * (Person Enrichment: { status, likelihood, data }; Company Enrichment: a flat record with likelihood;
 * errors: { status, error: { type, message } }). Needs `X-Api-Key: PDL_TOKEN`.
 */
export const PDL_TOKEN = 'pdl-test-key'

const error = (status: number, type: string, message: string): StandInAnswer => ({
  status,
  json: { status, error: { type, message } },
})

export const SEAN = {
  id: 'qEnOZ5Oh0poWnQ1luFBfVw_0000',
  full_name: 'sean thorne',
  first_name: 'sean',
  last_name: 'thorne',
  sex: 'male',
  linkedin_url: 'linkedin.com/in/seanthorne',
  twitter_url: 'twitter.com/seanthorne5',
  github_url: null,
  facebook_url: 'facebook.com/deseanthorne',
  work_email: true,
  personal_emails: true,
  mobile_phone: true,
  industry: 'computer software',
  job_title: 'co-founder and chief executive officer',
  job_title_role: null,
  job_title_levels: ['cxo', 'owner'],
  job_company_name: 'people data labs',
  job_company_website: 'peopledatalabs.com',
  job_company_industry: 'computer software',
  job_company_size: '51-200',
  job_start_date: '2015-03',
  location_name: 'san francisco, california, united states',
  location_locality: 'san francisco',
  location_region: 'california',
  location_country: 'united states',
  location_street_address: true,
  skills: Array.from({ length: 25 }, (_, i) => `skill ${i + 1}`),
  experience: Array.from({ length: 7 }, (_, i) => ({
    company: { name: `company ${i + 1}`, website: `company${i + 1}.com` },
    title: { name: `title ${i + 1}` },
    start_date: `20${10 + i}-01`,
    end_date: i === 0 ? null : `20${11 + i}-01`,
    is_primary: i === 0,
  })),
  education: [
    {
      school: { name: 'university of oregon' },
      degrees: ['bachelors'],
      majors: ['entrepreneurship'],
      start_date: '2007',
      end_date: '2011',
    },
  ],
}

export const GOOGLE = {
  status: 200,
  name: 'google',
  display_name: 'Google',
  size: '10001+',
  employee_count: 271000,
  id: 'aKCIYBNF9ey6o5CjHCCO4goHYKlf',
  founded: 1998,
  industry: 'internet',
  naics: [{ naics_code: '519130', sector: 'information' }],
  location: {
    name: 'mountain view, california, united states',
    locality: 'mountain view',
    region: 'california',
    metro: 'san jose, california',
    country: 'united states',
    continent: 'north america',
    street_address: '1600 amphitheatre parkway',
    postal_code: '94043',
    geo: '37.38,-122.08',
  },
  linkedin_id: '1441',
  linkedin_url: 'linkedin.com/company/google',
  facebook_url: 'facebook.com/google',
  twitter_url: 'twitter.com/google',
  profiles: ['linkedin.com/company/google'],
  website: 'google.com',
  ticker: 'googl',
  type: 'public',
  summary: 'a problem isn’t truly solved until it’s solved for all.',
  headline: 'search and advertising',
  tags: Array.from({ length: 30 }, (_, i) => `tag ${i + 1}`),
  alternative_domains: ['google.org'],
  likelihood: 9,
}

export function pdlStandIn(req: ReceivedRequest): StandInAnswer {
  if (req.headers['x-api-key'] !== PDL_TOKEN) return error(401, 'authentication_error', 'Invalid API key')
  const q = req.query
  if (req.path === '/v5/person/enrich') {
    if ([...q.keys()].length === 0)
      return error(400, 'invalid_request_error', 'Request needs at least one of: email, profile, name + company')
    if (q.get('email') === 'unknown@nowhere.example')
      return error(404, 'not_found', 'No records were found matching your request')
    if (q.get('email') === 'bad-for-pdl@example.com') return error(400, 'invalid_request_error', 'email is not valid')
    return { json: { status: 200, likelihood: 8, data: SEAN } }
  }
  if (req.path === '/v5/company/enrich') {
    if (q.get('website') === 'no-such-company.example' || q.get('name') === 'no such company')
      return error(404, 'not_found', 'No records were found matching your request')
    return { json: GOOGLE }
  }
  return error(404, 'not_found', 'route')
}
