import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn, type ReceivedRequest } from '../../test/helpers/provider-stand-in.js'
import handler from './index.js'

const LICENCE = 'Data © OpenStreetMap contributors, ODbL 1.0. http://osm.org/copyright'
// Nominatim jsonv2 + addressdetails shape, https://nominatim.org/release-docs/latest/api/Output/
const DOWNING = {
  place_id: 100927811,
  licence: LICENCE,
  osm_type: 'way',
  osm_id: 1879842,
  lat: '51.50344025',
  lon: '-0.12770820958562096',
  category: 'building',
  type: 'yes',
  place_rank: 30,
  importance: 0.6081,
  addresstype: 'building',
  name: 'Prime Minister’s Office',
  display_name:
    'Prime Minister’s Office, 10, Downing Street, Westminster, London, Greater London, England, SW1A 2AA, United Kingdom',
  address: {
    office: 'Prime Minister’s Office',
    house_number: '10',
    road: 'Downing Street',
    quarter: 'Westminster',
    city: 'London',
    state_district: 'Greater London',
    state: 'England',
    'ISO3166-2-lvl4': 'GB-ENG',
    postcode: 'SW1A 2AA',
    country: 'United Kingdom',
    country_code: 'gb',
  },
  boundingbox: ['51.5032573', '51.5036483', '-0.1278356', '-0.1273038'],
}
const STREET = {
  place_id: 5,
  licence: LICENCE,
  osm_type: 'way',
  osm_id: 4244999,
  lat: '51.5035',
  lon: '-0.1276',
  category: 'highway',
  type: 'residential',
  place_rank: 26,
  importance: 0.4,
  addresstype: 'road',
  name: 'Downing Street',
  display_name: 'Downing Street, Westminster, London, SW1A 2AB, United Kingdom',
  address: {
    road: 'Downing Street',
    city: 'London',
    postcode: 'SW1A 2AB',
    country: 'United Kingdom',
    country_code: 'gb',
  },
  boundingbox: ['51.5', '51.6', '-0.13', '-0.12'],
}
const TOWN = {
  ...STREET,
  place_id: 6,
  category: 'place',
  type: 'village',
  place_rank: 19,
  addresstype: 'village',
  name: 'Tiny',
  address: { village: 'Tiny', county: 'Simcoe County', country: 'Canada', country_code: 'ca' },
}

function nominatim(req: ReceivedRequest) {
  if (req.path === '/reverse') {
    if (req.query.get('lat') === '0') return { json: { error: 'Unable to geocode' } }
    return { json: DOWNING }
  }
  if (req.path !== '/search') return { status: 404, text: 'not found' }
  const q = req.query.get('q') ?? req.query.get('street') ?? ''
  if (/nowhere/i.test(q)) return { json: [] }
  if (q === 'Tiny') return { json: [TOWN] }
  if (/^Downing Street/.test(q)) return { json: [STREET] }
  return { json: [DOWNING, STREET, TOWN].slice(0, Number(req.query.get('limit') ?? 10)) }
}

t.test('against a Nominatim stand-in', async (t) => {
  const p = await standIn(t, nominatim)
  const providers = { NOMINATIM_URL: p.url, NOMINATIM_CONTACT: 'ops@example.org' }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('the example validates to house level with normalized components', async (t) => {
    const out = okBody(await run(handler.example))
    t.match(out, { mode: 'search', found: true, validated: true, precision: 'house', issues: [] })
    t.same(out.match.components, {
      houseNumber: '10',
      road: 'Downing Street',
      neighbourhood: 'Westminster',
      city: 'London',
      county: null,
      state: 'England',
      postcode: 'SW1A 2AA',
      country: 'United Kingdom',
      countryCode: 'GB',
    })
    t.equal(out.match.latitude, 51.50344025)
    t.equal(out.match.longitude, -0.12770820958562096)
    t.same(out.match.matchType, { category: 'building', type: 'yes', addressType: 'building', placeRank: 30 })
    t.equal(out.match.importance, 0.6081)
    t.same(out.match.osm, { type: 'way', id: 1879842 })
    t.same(out.match.boundingBox, [51.5032573, 51.5036483, -0.1278356, -0.1273038])
    t.same(out.alternatives, [])
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/search')
    t.equal(sent.query.get('q'), '10 Downing Street, London, SW1A 2AA')
    t.equal(sent.query.get('format'), 'jsonv2')
    t.equal(sent.query.get('addressdetails'), '1')
    t.equal(sent.query.get('limit'), '1')
    t.equal(sent.query.get('email'), 'ops@example.org')
    t.match(sent.headers['user-agent'], /ops@example\.org/, 'an identifying User-Agent, per the usage policy')
  })

  t.test('a street-only match is found but not validated', async (t) => {
    const out = okBody(await run({ query: 'Downing Street, London' }))
    t.match(out, { found: true, validated: false, precision: 'street' })
    t.match(out.issues[0], /street-precise/)
    t.equal(out.match.components.houseNumber, null)
  })

  t.test('a town match is locality-precise; the components pick village as the city', async (t) => {
    const out = okBody(await run({ query: 'Tiny' }))
    t.match(out, { validated: false, precision: 'locality' })
    t.match(out.match.components, { city: 'Tiny', county: 'Simcoe County', countryCode: 'CA' })
  })

  t.test('structured fields; a postal code that differs blocks validation', async (t) => {
    const out = okBody(
      await run({ street: '10 Downing St', city: 'London', postalcode: 'sw1a 2ab', countryCodes: 'GB' }),
    )
    t.match(out, { found: true, precision: 'house', validated: false })
    t.match(out.issues, [/postal code of the match \(SW1A 2AA\) differs/])
    const sent = p.received.at(-1)!
    t.equal(sent.query.get('street'), '10 Downing St')
    t.equal(sent.query.get('city'), 'London')
    t.equal(sent.query.get('postalcode'), 'sw1a 2ab')
    t.equal(sent.query.get('countrycodes'), 'gb')
    t.equal(sent.query.get('q'), null)
    const same = okBody(await run({ street: '10 Downing St', city: 'London', postalcode: 'sw1a2aa' }))
    t.equal(same.validated, true, 'the same postal code, spacing and case aside')
  })

  t.test('more candidates with limit', async (t) => {
    const out = okBody(await run({ query: '10 Downing Street', limit: 3 }))
    t.equal(out.alternatives.length, 2)
    t.equal(out.alternatives[0].precision, 'street')
    t.equal(p.received.at(-1)!.query.get('limit'), '3')
  })

  t.test('no match is found:false, not an error', async (t) => {
    const out = okBody(await run({ query: 'Nowhere Lane 99' }))
    t.match(out, { found: false, validated: false, match: null, precision: null })
  })

  t.test('reverse geocoding', async (t) => {
    const out = okBody(await run({ latitude: '51.5034', longitude: '-0.1277' }, 'query'))
    t.match(out, { mode: 'reverse', found: true, validated: true, match: { components: { road: 'Downing Street' } } })
    const sent = p.received.at(-1)!
    t.equal(sent.path, '/reverse')
    t.equal(sent.query.get('lat'), '51.5034')
    t.equal(sent.query.get('lon'), '-0.1277')
    const sea = okBody(await run({ latitude: 0, longitude: 0 }))
    t.match(sea, { mode: 'reverse', found: false, match: null })
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'query' })
    t.match(await run({ query: 'x' }), { ok: false, status: 400, field: 'query' })
    t.match(await run({ query: '   ab   ' }), { ok: false, status: 400, field: 'query' })
    t.match(await run({ query: 'a'.repeat(301) }), { ok: false, status: 400, field: 'query' })
    t.match(await run({ query: '10 Downing Street', city: 'London' }), { ok: false, status: 400, field: 'query' })
    t.match(await run({ latitude: 51 }), { ok: false, status: 400, field: 'longitude' })
    t.match(await run({ latitude: 100, longitude: 0 }), { ok: false, status: 400, field: 'latitude' })
    t.match(await run({ query: 'London', countryCodes: 'gbr' }), { ok: false, status: 400, field: 'countryCodes' })
    t.match(await run({ query: 'London', limit: 6 }), { ok: false, status: 400, field: 'limit' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /NOMINATIM_URL/,
  })
  const p = await standIn(t, nominatim)
  await t.rejects(runInline(handler, handler.example, { providers: { NOMINATIM_URL: p.url } }), {
    code: 'upstream_not_configured',
    message: /NOMINATIM_CONTACT/,
  })
  const limited = await standIn(t, () => ({ status: 429, text: 'Too Many Requests' }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { NOMINATIM_URL: limited.url, NOMINATIM_CONTACT: 'x@y.z' } }),
    { code: 'upstream_failed', message: /429/ },
  )
  const garbage = await standIn(t, () => ({ json: { unexpected: true } }))
  await t.rejects(
    runInline(handler, handler.example, { providers: { NOMINATIM_URL: garbage.url, NOMINATIM_CONTACT: 'x@y.z' } }),
    { code: 'upstream_failed' },
  )
  const noCoords = await standIn(t, () => ({ json: [{ ...DOWNING, lat: 'n/a' }] }))
  await t.rejects(
    runInline(handler, handler.example, {
      providers: { NOMINATIM_URL: noCoords.url, NOMINATIM_CONTACT: 'https://example.org/contact' },
    }),
    { code: 'upstream_failed', message: /coordinates/ },
  )
  t.equal(noCoords.received[0]!.query.get('email'), null, 'a URL contact goes in the User-Agent only')
  t.match(noCoords.received[0]!.headers['user-agent'], /https:\/\/example\.org\/contact/)
})

t.test(
  'odd entries in a Nominatim answer (a null place, a numeric country code) are skipped or null, never a crash',
  async (t) => {
    const odd = await standIn(t, () => ({
      json: [null, { ...DOWNING, address: { ...DOWNING.address, country_code: 826 } }],
    }))
    const out = okBody(
      await runInline(handler, handler.example, { providers: { NOMINATIM_URL: odd.url, NOMINATIM_CONTACT: 'x@y.z' } }),
    )
    t.match(out, { found: true, match: { components: { road: 'Downing Street', countryCode: null } } })
  },
)
