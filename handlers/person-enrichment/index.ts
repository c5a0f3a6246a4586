import { num, pdlEnrich, str, strings } from '../_shared/misc-pdl.js'
import { parsePublicUrl } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  email?: string
  profile?: string
  name?: string
  company?: string
  location?: string
  minLikelihood?: number
}

/**
 * `GET /v5/person/enrich` answer (https://docs.peopledatalabs.com/docs/person-enrichment-api):
 *   { status: 200, likelihood: 1–10, data: { id, full_name, first_name, last_name, sex, linkedin_url, twitter_url,
 *     github_url, facebook_url, industry, job_title, job_title_role, job_title_levels, job_company_name,
 *     job_company_website, job_company_industry, job_company_size, job_start_date, location_name,
 *     location_locality, location_region, location_country, skills, experience[], education[], ... } }
 */
interface PersonAnswer {
  likelihood?: number
  data?: Record<string, unknown> & {
    experience?: Array<{
      company?: { name?: string; website?: string }
      title?: { name?: string }
      start_date?: string
      end_date?: string
      is_primary?: boolean
    }>
    education?: Array<{
      school?: { name?: string }
      degrees?: string[]
      majors?: string[]
      start_date?: string
      end_date?: string
    }>
  }
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}\.[^\s@]{2,63}$/

/** Enriches a person (by e-mail, social profile URL, or name + company) from People Data Labs. */
export default defineHandler<Input>({
  slug: 'person-enrichment',
  description:
    "A person's professional profile from People Data Labs, by e-mail, social profile URL, or name + company: current job, company, industry, location, social profiles, skills, recent experience and education, with PDL's match likelihood.",
  providers: ['PDL_API_URL', 'PDL_API_KEY'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      email: {
        type: 'string',
        maxLength: 254,
        description: 'An e-mail address of the person. Give email, profile, or name + company (or name + location).',
      },
      profile: {
        type: 'string',
        maxLength: 300,
        description: 'A social profile URL of the person, e.g. https://www.linkedin.com/in/seanthorne.',
      },
      name: {
        type: 'string',
        minLength: 3,
        maxLength: 150,
        description: "The person's full name, with company or location.",
      },
      company: {
        type: 'string',
        maxLength: 150,
        description: 'Company name or domain the person works at (with name).',
      },
      location: {
        type: 'string',
        maxLength: 150,
        description: 'Where the person lives or works, e.g. "san francisco, california" (with name).',
      },
      minLikelihood: {
        type: 'integer',
        minimum: 1,
        maximum: 10,
        description: "Only accept a match of at least this PDL likelihood (1–10; PDL's default applies when absent).",
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'found, likelihood (PDL match confidence 1–10), person { id, fullName, firstName, lastName, jobTitle, jobTitleRole, jobTitleLevels[], jobStartDate, jobCompanyName, jobCompanyWebsite, jobCompanyIndustry, jobCompanySize, industry, ' +
      'location { name, locality, region, country }, linkedinUrl, twitterUrl, githubUrl, facebookUrl, skills[] (first 20), experience[] (first 5: company, companyWebsite, title, startDate, endDate, isPrimary), education[] (first 3: school, degrees, majors, startDate, endDate) }. ' +
      'Values are as PDL stores them (lower case); a field PDL does not have (or does not show on the plan) is null. Contact details (e-mails, phone numbers, street addresses) are not returned. found:false with a reason when PDL has no match.',
    schema: {
      type: 'object',
      properties: {
        found: { type: 'boolean' },
        likelihood: { type: ['integer', 'null'] },
        person: { type: ['object', 'null'] },
        reason: { type: 'string' },
      },
    },
    example: {
      found: true,
      likelihood: 8,
      person: {
        id: 'qEnOZ5Oh0poWnQ1luFBfVw_0000',
        fullName: 'sean thorne',
        firstName: 'sean',
        lastName: 'thorne',
        jobTitle: 'co-founder and chief executive officer',
        jobTitleRole: null,
        jobTitleLevels: ['cxo', 'owner'],
        jobStartDate: '2015-03',
        jobCompanyName: 'people data labs',
        jobCompanyWebsite: 'peopledatalabs.com',
        jobCompanyIndustry: 'computer software',
        jobCompanySize: '51-200',
        industry: 'computer software',
        location: {
          name: 'san francisco, california, united states',
          locality: 'san francisco',
          region: 'california',
          country: 'united states',
        },
        linkedinUrl: 'linkedin.com/in/seanthorne',
        twitterUrl: 'twitter.com/seanthorne5',
        githubUrl: null,
        facebookUrl: 'facebook.com/deseanthorne',
        skills: ['skill 1', 'skill 2', 'skill 3'],
        experience: [
          {
            company: 'company 1',
            companyWebsite: 'company1.com',
            title: 'title 1',
            startDate: '2010-01',
            endDate: null,
            isPrimary: true,
          },
          {
            company: 'company 2',
            companyWebsite: 'company2.com',
            title: 'title 2',
            startDate: '2011-01',
            endDate: '2012-01',
            isPrimary: false,
          },
          {
            company: 'company 3',
            companyWebsite: 'company3.com',
            title: 'title 3',
            startDate: '2012-01',
            endDate: '2013-01',
            isPrimary: false,
          },
        ],
        education: [
          {
            school: 'university of oregon',
            degrees: ['bachelors'],
            majors: ['entrepreneurship'],
            startDate: '2007',
            endDate: '2011',
          },
        ],
      },
    },
  },
  example: { profile: 'https://www.linkedin.com/in/seanthorne' },
  async run(input, ctx) {
    const email = input.email?.trim()
    const profile = input.profile?.trim()
    const name = input.name?.trim()
    if (!email && !profile && !name)
      throw new HandlerInputError('email', 'give email, profile, or name + company (or name + location)')
    if (email !== undefined && !EMAIL.test(email))
      throw new HandlerInputError('email', 'email is not an e-mail address')
    if (profile !== undefined)
      parsePublicUrl(/^[a-z][a-z0-9+.-]*:/i.test(profile) ? profile : `https://${profile}`, 'profile')
    if (name !== undefined && name.length < 3)
      throw new HandlerInputError('name', 'name must have at least 3 characters')
    if (name && !email && !profile && !input.company?.trim() && !input.location?.trim())
      throw new HandlerInputError('company', 'with name alone the match is too loose: add company or location')

    const r = await pdlEnrich<PersonAnswer>(
      ctx,
      '/v5/person/enrich',
      {
        email,
        profile,
        name,
        company: input.company?.trim() || undefined,
        location: input.location?.trim() || undefined,
        min_likelihood: input.minLikelihood,
      },
      email ? 'email' : profile ? 'profile' : 'name',
    )
    if (!r.found)
      return {
        body: { found: false, likelihood: null, person: null, reason: `People Data Labs has no match (${r.message})` },
      }
    const d = r.body.data
    if (!d || typeof d !== 'object')
      return {
        body: { found: false, likelihood: null, person: null, reason: 'People Data Labs answered without a record' },
      }
    const person = {
      id: str(d.id),
      fullName: str(d.full_name),
      firstName: str(d.first_name),
      lastName: str(d.last_name),
      jobTitle: str(d.job_title),
      jobTitleRole: str(d.job_title_role),
      jobTitleLevels: strings(d.job_title_levels, 10),
      jobStartDate: str(d.job_start_date),
      jobCompanyName: str(d.job_company_name),
      jobCompanyWebsite: str(d.job_company_website),
      jobCompanyIndustry: str(d.job_company_industry),
      jobCompanySize: str(d.job_company_size),
      industry: str(d.industry),
      location: {
        name: str(d.location_name),
        locality: str(d.location_locality),
        region: str(d.location_region),
        country: str(d.location_country),
      },
      linkedinUrl: str(d.linkedin_url),
      twitterUrl: str(d.twitter_url),
      githubUrl: str(d.github_url),
      facebookUrl: str(d.facebook_url),
      skills: strings(d.skills, 20),
      experience: (Array.isArray(d.experience) ? d.experience : [])
        .filter((x) => x !== null && typeof x === 'object')
        .slice(0, 5)
        .map((x) => ({
          company: str(x.company?.name),
          companyWebsite: str(x.company?.website),
          title: str(x.title?.name),
          startDate: str(x.start_date),
          endDate: str(x.end_date),
          isPrimary: typeof x.is_primary === 'boolean' ? x.is_primary : null,
        })),
      education: (Array.isArray(d.education) ? d.education : [])
        .filter((x) => x !== null && typeof x === 'object')
        .slice(0, 3)
        .map((x) => ({
          school: str(x.school?.name),
          degrees: strings(x.degrees, 5),
          majors: strings(x.majors, 5),
          startDate: str(x.start_date),
          endDate: str(x.end_date),
        })),
    }
    return { body: { found: true, likelihood: num(r.body.likelihood), person } }
  },
})
