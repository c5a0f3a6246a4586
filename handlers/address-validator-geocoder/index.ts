import { joinUrl, providerJson, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  query?: string
  street?: string
  city?: string
  county?: string
  state?: string
  postalcode?: string
  country?: string
  countryCodes?: string
  latitude?: number
  longitude?: number
  limit?: number
}

const PROVIDER = 'Nominatim'

/** True for the OpenStreetMap Foundation's public server (the default NOMINATIM_URL). */
export function isPublicNominatim(url: string | undefined): boolean {
  if (!url) return false
  try {
    return new URL(url).hostname.toLowerCase().replace(/\.$/, '') === 'nominatim.openstreetmap.org'
  } catch {
    return false
  }
}
const STRUCTURED = ['street', 'city', 'county', 'state', 'postalcode', 'country'] as const

/**
 * One Nominatim place in `format=jsonv2` with `addressdetails=1`
 * (https://nominatim.org/release-docs/latest/api/Output/): /search answers an array of these,
 * /reverse one of them, or `{ error: "Unable to geocode" }` when nothing is there.
 */
interface Place {
  place_id?: number
  osm_type?: string
  osm_id?: number
  lat?: string
  lon?: string
  category?: string
  type?: string
  place_rank?: number
  importance?: number
  addresstype?: string
  name?: string
  display_name?: string
  address?: Record<string, string>
  boundingbox?: string[]
  licence?: string
  error?: string
}

type Precision = 'house' | 'street' | 'locality' | 'region' | 'country' | 'other'

/**
 * How specific a match is, from Nominatim's address ranks
 * (https://nominatim.org/release-docs/latest/customize/Ranking/): 4 country, 5–12 state and county,
 * 13–25 city, town, village, suburb, neighbourhood, 26–27 street, 28–30 house, building, POI.
 */
function precisionOf(p: Place): Precision {
  if (p.address?.house_number) return 'house'
  const rank = typeof p.place_rank === 'number' ? p.place_rank : -1
  if (rank >= 28) return 'house'
  if (rank >= 26) return 'street'
  if (rank >= 13) return 'locality'
  if (rank >= 5) return 'region'
  if (rank === 4) return 'country'
  return 'other'
}

const first = (a: Record<string, string> | undefined, ...keys: string[]) => {
  for (const k of keys) if (typeof a?.[k] === 'string' && a[k]) return a[k]
  return null
}

function normalize(p: Place) {
  const a = p.address
  const lat = Number(p.lat)
  const lon = Number(p.lon)
  if (!Number.isFinite(lat) || !Number.isFinite(lon))
    throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered a place without coordinates`)
  return {
    displayName: p.display_name ?? null,
    name: p.name || null,
    latitude: lat,
    longitude: lon,
    components: {
      houseNumber: first(a, 'house_number'),
      road: first(a, 'road', 'pedestrian', 'footway', 'path', 'cycleway', 'square'),
      neighbourhood: first(a, 'neighbourhood', 'quarter', 'suburb', 'city_district', 'borough'),
      city: first(a, 'city', 'town', 'village', 'hamlet', 'municipality'),
      county: first(a, 'county', 'district'),
      state: first(a, 'state', 'province', 'region'),
      postcode: first(a, 'postcode'),
      country: first(a, 'country'),
      countryCode: typeof a?.country_code === 'string' && a.country_code ? a.country_code.toUpperCase() : null,
    },
    precision: precisionOf(p),
    matchType: {
      category: p.category ?? null,
      type: p.type ?? null,
      addressType: p.addresstype ?? null,
      placeRank: typeof p.place_rank === 'number' ? p.place_rank : null,
    },
    importance: typeof p.importance === 'number' ? p.importance : null,
    boundingBox: Array.isArray(p.boundingbox) && p.boundingbox.length === 4 ? p.boundingbox.map(Number) : null,
    osm: p.osm_type && p.osm_id !== undefined ? { type: p.osm_type, id: p.osm_id } : null,
  }
}

const VALIDATION_RULE =
  'validated is true when the best match is house-precise (Nominatim returned a house number, or a building/POI of address rank 28–30) and, when the input gave a postal code, the match has the same one (ignoring spaces and case). ' +
  'A match only to a street, town or region is found but not validated; issues[] says why.'

/** Validates and geocodes an address with OpenStreetMap's Nominatim, or reverse-geocodes coordinates. */
export default defineHandler<Input>({
  slug: 'address-validator-geocoder',
  description:
    'Validate and geocode a postal address (free-form or by fields), or turn coordinates into an address, with OpenStreetMap Nominatim: normalized address components, latitude/longitude, match type and importance, and whether the address validated to house level.',
  providers: ['NOMINATIM_URL', 'NOMINATIM_CONTACT'],
  // OSM's public instance allows one request per second in all (https://operations.osmfoundation.org/policies/nominatim/);
  // an operator's own instance has no such limit
  rateLimit: (providers) => (isPublicNominatim(providers.NOMINATIM_URL) ? { requests: 1, perSeconds: 1 } : undefined),
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      query: {
        type: 'string',
        minLength: 3,
        maxLength: 300,
        description:
          'A free-form address, e.g. "10 Downing Street, London". Give query, or the structured fields, or latitude + longitude.',
      },
      street: {
        type: 'string',
        maxLength: 150,
        description: 'Structured search: house number and street name, e.g. "1600 Pennsylvania Ave NW".',
      },
      city: { type: 'string', maxLength: 100, description: 'Structured search: city, town or village.' },
      county: { type: 'string', maxLength: 100, description: 'Structured search: county or district.' },
      state: { type: 'string', maxLength: 100, description: 'Structured search: state or province.' },
      postalcode: {
        type: 'string',
        maxLength: 20,
        description: 'Structured search: postal code; when given it must match for the address to validate.',
      },
      country: { type: 'string', maxLength: 100, description: 'Structured search: country name or code.' },
      countryCodes: {
        type: 'string',
        pattern: '^[A-Za-z]{2}(,[A-Za-z]{2}){0,9}$',
        description: 'Limit the search to these ISO 3166-1 alpha-2 countries, comma-separated (e.g. "gb,ie").',
      },
      latitude: {
        type: 'number',
        minimum: -90,
        maximum: 90,
        description: 'Reverse geocoding: latitude in decimal degrees, with longitude.',
      },
      longitude: {
        type: 'number',
        minimum: -180,
        maximum: 180,
        description: 'Reverse geocoding: longitude in decimal degrees, with latitude.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 5,
        default: 1,
        description: 'Forward search: how many candidate matches to return (1–5, default 1); the first is the best.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'mode ("search" | "reverse"), found, validated, precision (house | street | locality | region | country | other), issues[], rule (the validation rule), ' +
      'match { displayName, name, latitude, longitude, components { houseNumber, road, neighbourhood, city, county, state, postcode, country, countryCode }, precision, matchType { category, type, addressType, placeRank }, importance (0–1, Nominatim), boundingBox [south, north, west, east], osm { type, id } } (null when not found), ' +
      `alternatives[] (further matches when limit > 1), attribution. ${VALIDATION_RULE}`,
    schema: {
      type: 'object',
      properties: {
        mode: { type: 'string' },
        found: { type: 'boolean' },
        validated: { type: 'boolean' },
        precision: { type: ['string', 'null'] },
        issues: { type: 'array', items: { type: 'string' } },
        match: { type: ['object', 'null'] },
        alternatives: { type: 'array' },
        attribution: { type: 'string' },
      },
    },
    example: {
      mode: 'search',
      found: true,
      validated: true,
      precision: 'house',
      issues: [],
      rule: 'validated is true when the best match is house-precise (Nominatim returned a house number, or a building/POI of address rank 28–30) and, when the input gave a postal code, the match has the same one (…',
      match: {
        displayName:
          'Prime Minister’s Office, 10, Downing Street, Westminster, London, Greater London, England, SW1A 2AA, United Kingdom',
        name: 'Prime Minister’s Office',
        latitude: 51.50344025,
        longitude: -0.12770820958562096,
        components: {
          houseNumber: '10',
          road: 'Downing Street',
          neighbourhood: 'Westminster',
          city: 'London',
          county: null,
          state: 'England',
          postcode: 'SW1A 2AA',
          country: 'United Kingdom',
          countryCode: 'GB',
        },
        precision: 'house',
        matchType: { category: 'building', type: 'yes', addressType: 'building', placeRank: 30 },
        importance: 0.6081,
        boundingBox: [51.5032573, 51.5036483, -0.1278356],
        osm: { type: 'way', id: 1879842 },
      },
      alternatives: [],
      attribution: 'Data © OpenStreetMap contributors, ODbL 1.0 (https://osm.org/copyright); geocoding by Nominatim',
    },
  },
  example: { query: '10 Downing Street, London, SW1A 2AA' },
  async run(input, ctx) {
    const base = providerSetting(ctx, 'NOMINATIM_URL', 'address geocoding')
    const contact = providerSetting(
      ctx,
      'NOMINATIM_CONTACT',
      'address geocoding (Nominatim usage policy: an identifying contact)',
    )
    const structured = STRUCTURED.filter((k) => input[k] !== undefined && input[k]!.trim() !== '')
    const reverse = input.latitude !== undefined || input.longitude !== undefined
    const modes = [input.query !== undefined, structured.length > 0, reverse].filter(Boolean).length
    if (modes === 0)
      throw new HandlerInputError(
        'query',
        'give query (a free-form address), structured fields (street, city, ...), or latitude + longitude',
      )
    if (modes > 1)
      throw new HandlerInputError('query', 'give only one of: query, structured fields, latitude + longitude')
    if (reverse && input.latitude === undefined)
      throw new HandlerInputError('latitude', 'latitude is required with longitude')
    if (reverse && input.longitude === undefined)
      throw new HandlerInputError('longitude', 'longitude is required with latitude')
    if (input.query !== undefined && input.query.trim().length < 3)
      throw new HandlerInputError('query', 'query must have at least 3 characters')

    // the usage policy (https://operations.osmfoundation.org/policies/nominatim/) wants an identifying
    // User-Agent; an e-mail contact may also go in the `email` parameter
    const email = /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(contact) ? contact : undefined
    const headers = { 'user-agent': `Tollgate-address-validator-geocoder/1.0 (${contact})`, 'accept-language': 'en' }
    const attribution =
      'Data © OpenStreetMap contributors, ODbL 1.0 (https://osm.org/copyright); geocoding by Nominatim'

    if (reverse) {
      const p = await providerJson<Place>(
        PROVIDER,
        joinUrl(base, '/reverse', {
          format: 'jsonv2',
          addressdetails: 1,
          lat: input.latitude,
          lon: input.longitude,
          email,
        }),
        { headers },
      )
      if (!p || typeof p !== 'object' || Array.isArray(p))
        throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered an unexpected shape`)
      if (p.error || p.lat === undefined)
        return {
          body: {
            mode: 'reverse',
            found: false,
            validated: false,
            precision: null,
            issues: ['no address at these coordinates'],
            rule: VALIDATION_RULE,
            match: null,
            alternatives: [],
            attribution,
          },
        }
      const match = normalize(p)
      const issues = match.precision === 'house' ? [] : [`the nearest address is only ${match.precision}-precise`]
      return {
        body: {
          mode: 'reverse',
          found: true,
          validated: issues.length === 0,
          precision: match.precision,
          issues,
          rule: VALIDATION_RULE,
          match,
          alternatives: [],
          attribution,
        },
      }
    }

    const limit = input.limit ?? 1
    const query: Record<string, string | number | undefined> = {
      format: 'jsonv2',
      addressdetails: 1,
      limit,
      email,
      countrycodes: input.countryCodes?.toLowerCase(),
    }
    if (input.query !== undefined) query.q = input.query.trim()
    else for (const k of structured) query[k] = input[k]!.trim()
    const list = await providerJson<Place[]>(PROVIDER, joinUrl(base, '/search', query), { headers })
    if (!Array.isArray(list))
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered an unexpected shape`)
    // entries that are not place objects are skipped (normalize then checks each one's coordinates)
    const places = list.filter((x): x is Place => x !== null && typeof x === 'object' && !Array.isArray(x))
    if (places.length === 0)
      return {
        body: {
          mode: 'search',
          found: false,
          validated: false,
          precision: null,
          issues: ['no match for this address'],
          rule: VALIDATION_RULE,
          match: null,
          alternatives: [],
          attribution,
        },
      }
    const [best, ...rest] = places.slice(0, limit).map(normalize)
    const issues: string[] = []
    if (best!.precision !== 'house')
      issues.push(`the best match is only ${best!.precision}-precise (no house-level match)`)
    if (input.postalcode !== undefined && input.postalcode.trim() !== '') {
      const squash = (s: string) => s.replace(/\s+/g, '').toUpperCase()
      if (!best!.components.postcode) issues.push('the match has no postal code to compare with the one given')
      else if (squash(best!.components.postcode) !== squash(input.postalcode))
        issues.push(`the postal code of the match (${best!.components.postcode}) differs from the one given`)
    }
    return {
      body: {
        mode: 'search',
        found: true,
        validated: issues.length === 0,
        precision: best!.precision,
        issues,
        rule: VALIDATION_RULE,
        match: best,
        alternatives: rest,
        attribution,
      },
    }
  },
})
