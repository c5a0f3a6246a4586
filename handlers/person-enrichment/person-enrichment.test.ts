import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { PDL_TOKEN, pdlStandIn } from '../../test/helpers/misc-pdl-stand-in.js'
import { standIn } from '../../test/helpers/provider-stand-in.js'
import handler from './index.js'

t.test('against a People Data Labs stand-in', async (t) => {
  const p = await standIn(t, pdlStandIn)
  const providers = { PDL_API_URL: p.url, PDL_API_KEY: PDL_TOKEN }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('the example maps the documented subset and the likelihood', async (t) => {
    const out = okBody(await run(handler.example))
    t.equal(out.found, true)
    t.equal(out.likelihood, 8)
    t.match(out.person, {
      id: 'qEnOZ5Oh0poWnQ1luFBfVw_0000',
      fullName: 'sean thorne',
      jobTitle: 'co-founder and chief executive officer',
      jobTitleRole: null,
      jobTitleLevels: ['cxo', 'owner'],
      jobCompanyName: 'people data labs',
      jobCompanyWebsite: 'peopledatalabs.com',
      jobCompanySize: '51-200',
      jobStartDate: '2015-03',
      industry: 'computer software',
      location: {
        name: 'san francisco, california, united states',
        locality: 'san francisco',
        region: 'california',
        country: 'united states',
      },
      linkedinUrl: 'linkedin.com/in/seanthorne',
      githubUrl: null,
    })
    t.equal(out.person.skills.length, 20, 'skills capped at 20')
    t.equal(out.person.experience.length, 5, 'experience capped at 5')
    t.same(out.person.experience[0], {
      company: 'company 1',
      companyWebsite: 'company1.com',
      title: 'title 1',
      startDate: '2010-01',
      endDate: null,
      isPrimary: true,
    })
    t.same(out.person.education, [
      {
        school: 'university of oregon',
        degrees: ['bachelors'],
        majors: ['entrepreneurship'],
        startDate: '2007',
        endDate: '2011',
      },
    ])
    t.notOk(
      'workEmail' in out.person || 'personalEmails' in out.person || 'mobilePhone' in out.person,
      'no contact details',
    )
    t.notMatch(JSON.stringify(out), /street/)
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/v5/person/enrich')
    t.equal(sent.headers['x-api-key'], PDL_TOKEN)
    t.equal(sent.query.get('profile'), 'https://www.linkedin.com/in/seanthorne')
    t.equal(sent.query.get('api_key'), null, 'the key travels in the header only')
  })

  t.test('by email, and by name + company with a minimum likelihood', async (t) => {
    okBody(await run({ email: 'sean@peopledatalabs.com' }))
    t.equal(p.received.at(-1)!.query.get('email'), 'sean@peopledatalabs.com')
    okBody(await run({ name: 'Sean Thorne', company: 'People Data Labs', minLikelihood: '6' }, 'query'))
    const q = p.received.at(-1)!.query
    t.equal(q.get('name'), 'Sean Thorne')
    t.equal(q.get('company'), 'People Data Labs')
    t.equal(q.get('min_likelihood'), '6')
    okBody(await run({ profile: 'linkedin.com/in/seanthorne' }))
    t.equal(
      p.received.at(-1)!.query.get('profile'),
      'linkedin.com/in/seanthorne',
      'PDL-style profile without a scheme is sent as given',
    )
  })

  t.test('PDL 404 is found:false', async (t) => {
    t.match(okBody(await run({ email: 'unknown@nowhere.example' })), {
      found: false,
      likelihood: null,
      person: null,
      reason: /No records were found/,
    })
  })

  t.test('PDL 400 is 400 naming the field', async (t) => {
    t.match(await run({ email: 'bad-for-pdl@example.com' }), {
      ok: false,
      status: 400,
      field: 'email',
      message: /email is not valid/,
    })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'email' })
    t.match(await run({ email: 'not-an-email' }), { ok: false, status: 400, field: 'email' })
    t.match(await run({ profile: 'ftp://linkedin.com/in/x' }), { ok: false, status: 400, field: 'profile' })
    t.match(await run({ name: 'Sean Thorne' }), { ok: false, status: 400, field: 'company' })
    t.match(await run({ name: '   ab  ', company: 'x' }), { ok: false, status: 400, field: 'name' })
    t.match(await run({ email: 'a@b.co', minLikelihood: 11 }), { ok: false, status: 400, field: 'minLikelihood' })
    t.match(await run({ email: `${'a'.repeat(250)}@b.co` }), { ok: false, status: 400, field: 'email' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /PDL_API_URL/,
  })
  const p = await standIn(t, pdlStandIn)
  await t.rejects(runInline(handler, handler.example, { providers: { PDL_API_URL: p.url } }), {
    code: 'upstream_not_configured',
    message: /PDL_API_KEY/,
  })
  const err = await runInline(handler, handler.example, {
    providers: { PDL_API_URL: p.url, PDL_API_KEY: 'wrong-pdl-key' },
  }).catch((e) => e)
  t.match(err, { code: 'upstream_failed', message: /401/ })
  t.notMatch(err.message, /wrong-pdl-key/)
  const credits = await standIn(t, () => ({
    status: 402,
    json: {
      status: 402,
      error: { type: 'payment_required', message: 'You have hit your account maximum for person enrichment' },
    },
  }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { PDL_API_URL: credits.url, PDL_API_KEY: PDL_TOKEN } }),
    { code: 'upstream_failed', message: /402/ },
  )
  const garbage = await standIn(t, () => ({ text: 'gateway timeout' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { PDL_API_URL: garbage.url, PDL_API_KEY: PDL_TOKEN } }),
    { code: 'upstream_failed', message: /not JSON/ },
  )
})

t.test('null entries in experience and education are skipped, not a crash', async (t) => {
  const odd = await standIn(t, () => ({
    json: {
      status: 200,
      likelihood: 8,
      data: {
        full_name: 'sean thorne',
        experience: [null, { company: { name: 'people data labs' }, title: { name: 'ceo' } }],
        education: [null],
      },
    },
  }))
  const out = okBody(
    await runInline(handler, handler.example, { providers: { PDL_API_URL: odd.url, PDL_API_KEY: PDL_TOKEN } }),
  )
  t.match(out, {
    found: true,
    likelihood: 8,
    person: { fullName: 'sean thorne', experience: [{ company: 'people data labs', title: 'ceo' }], education: [] },
  })
  t.equal(out.person.experience.length, 1)
})
