import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { standIn, type ReceivedRequest } from '../../test/helpers/provider-stand-in.js'
import handler from './index.js'

// Open-Meteo geocoding shape, https://open-meteo.com/en/docs/geocoding-api
function geocoding(req: ReceivedRequest) {
  if (req.path !== '/v1/search') return { status: 404, text: 'not found' }
  if (req.query.get('name') === 'Berlin') {
    return {
      json: {
        results: [
          {
            id: 2950159,
            name: 'Berlin',
            latitude: 52.52437,
            longitude: 13.41053,
            elevation: 74.0,
            feature_code: 'PPLC',
            country_code: 'DE',
            timezone: 'Europe/Berlin',
            population: 3426354,
            country: 'Germany',
            admin1: 'Land Berlin',
          },
        ],
        generationtime_ms: 0.6,
      },
    }
  }
  return { json: { generationtime_ms: 0.3 } }
}

// Open-Meteo forecast shape, https://open-meteo.com/en/docs
function forecast(req: ReceivedRequest) {
  if (req.path !== '/v1/forecast') return { status: 404, text: 'not found' }
  const days = Number(req.query.get('forecast_days'))
  const imperial = req.query.get('temperature_unit') === 'fahrenheit'
  const codes = [3, 61, 95, 0, 45]
  return {
    json: {
      latitude: 52.52,
      longitude: 13.419998,
      generationtime_ms: 0.1,
      utc_offset_seconds: 3600,
      timezone: 'Europe/Berlin',
      timezone_abbreviation: 'CET',
      elevation: 38.0,
      current_units: {
        time: 'iso8601',
        interval: 'seconds',
        temperature_2m: imperial ? '°F' : '°C',
        wind_speed_10m: imperial ? 'mp/h' : 'km/h',
        precipitation: imperial ? 'inch' : 'mm',
      },
      current: {
        time: '2024-11-23T14:45',
        interval: 900,
        temperature_2m: imperial ? 41.5 : 5.3,
        apparent_temperature: 1.2,
        relative_humidity_2m: 81,
        precipitation: 0.0,
        weather_code: 3,
        cloud_cover: 100,
        wind_speed_10m: 14.8,
        wind_direction_10m: 247,
        wind_gusts_10m: 31.3,
        is_day: 1,
      },
      daily_units: { time: 'iso8601', temperature_2m_max: '°C' },
      daily: {
        time: Array.from({ length: days }, (_, i) => `2024-11-${23 + i}`),
        weather_code: Array.from({ length: days }, (_, i) => codes[i % codes.length]),
        temperature_2m_max: Array.from({ length: days }, (_, i) => 6 + i),
        temperature_2m_min: Array.from({ length: days }, (_, i) => -1 + i),
        precipitation_sum: Array.from({ length: days }, (_, i) => i * 0.5),
        precipitation_probability_max: Array.from({ length: days }, () => null),
        wind_speed_10m_max: Array.from({ length: days }, () => 20.1),
        sunrise: Array.from({ length: days }, (_, i) => `2024-11-${23 + i}T07:41`),
        sunset: Array.from({ length: days }, (_, i) => `2024-11-${23 + i}T16:04`),
        uv_index_max: Array.from({ length: days }, () => 0.9),
      },
    },
  }
}

t.test('against Open-Meteo stand-ins', async (t) => {
  const geo = await standIn(t, geocoding)
  const fc = await standIn(t, forecast)
  const providers = { OPEN_METEO_URL: fc.url, OPEN_METEO_GEOCODING_URL: geo.url }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('a place name is geocoded, then the forecast is read at its coordinates', async (t) => {
    const out = okBody(await run(handler.example))
    t.match(out.location, {
      name: 'Berlin',
      country: 'Germany',
      countryCode: 'DE',
      admin1: 'Land Berlin',
      latitude: 52.52437,
      longitude: 13.41053,
      matchedBy: 'place',
      timezone: 'Europe/Berlin',
      elevation: 38,
    })
    t.match(out.current, {
      time: '2024-11-23T14:45',
      temperature: 5.3,
      apparentTemperature: 1.2,
      relativeHumidity: 81,
      weatherCode: 3,
      weather: 'Overcast',
      isDay: true,
      windGusts: 31.3,
    })
    t.equal(out.daily.length, 3)
    t.same(
      out.daily.map((d: any) => [d.date, d.weatherCode, d.weather]),
      [
        ['2024-11-23', 3, 'Overcast'],
        ['2024-11-24', 61, 'Slight rain'],
        ['2024-11-25', 95, 'Thunderstorm, slight or moderate'],
      ],
    )
    t.match(out.daily[1], {
      temperatureMax: 7,
      temperatureMin: 0,
      precipitationSum: 0.5,
      precipitationProbabilityMax: null,
      sunrise: '2024-11-24T07:41',
    })
    t.same(out.units, {
      temperature: '°C',
      windSpeed: 'km/h',
      precipitation: 'mm',
      relativeHumidity: '%',
      windDirection: '°',
    })
    const g = geo.received.at(-1)!
    t.equal(g.query.get('name'), 'Berlin')
    t.equal(g.query.get('count'), '1')
    const f = fc.received.at(-1)!
    t.equal(f.query.get('latitude'), '52.52437')
    t.equal(f.query.get('longitude'), '13.41053')
    t.equal(f.query.get('forecast_days'), '3')
    t.equal(f.query.get('timezone'), 'auto')
    t.match(f.query.get('current'), /weather_code/)
    t.match(f.query.get('daily'), /temperature_2m_max/)
    t.equal(f.query.get('temperature_unit'), null, 'metric is the provider default')
  })

  t.test('coordinates skip geocoding; imperial units are asked for and reported', async (t) => {
    const before = geo.received.length
    const out = okBody(await run({ latitude: '40.71', longitude: '-74.01', days: '5', units: 'imperial' }, 'query'))
    t.equal(geo.received.length, before, 'no geocoding call')
    t.match(out.location, { matchedBy: 'coordinates', latitude: 40.71, longitude: -74.01, name: null })
    t.equal(out.current.temperature, 41.5)
    t.equal(out.units.temperature, '°F')
    t.equal(out.daily.length, 5)
    t.equal(out.daily[4].weather, 'Fog')
    const f = fc.received.at(-1)!
    t.equal(f.query.get('temperature_unit'), 'fahrenheit')
    t.equal(f.query.get('wind_speed_unit'), 'mph')
    t.equal(f.query.get('precipitation_unit'), 'inch')
    t.equal(f.query.get('forecast_days'), '5')
  })

  t.test('a country code narrows the lookup; an unknown place is 422 on place', async (t) => {
    t.match(await run({ place: 'Nowhereville', countryCode: 'us' }), {
      ok: false,
      status: 422,
      field: 'place',
      message: /Nowhereville.*US/,
    })
    t.equal(geo.received.at(-1)!.query.get('countryCode'), 'US')
  })

  t.test('bad input: 400 naming the field', async (t) => {
    t.match(await run({}), { ok: false, status: 400, field: 'place' })
    t.match(await run({ place: 'Berlin', latitude: 1, longitude: 2 }), { ok: false, status: 400, field: 'place' })
    t.match(await run({ latitude: 10 }), { ok: false, status: 400, field: 'longitude' })
    t.match(await run({ longitude: 10 }), { ok: false, status: 400, field: 'latitude' })
    t.match(await run({ latitude: 91, longitude: 0 }), { ok: false, status: 400, field: 'latitude' })
    t.match(await run({ place: 'Berlin', days: 17 }), { ok: false, status: 400, field: 'days' })
    t.match(await run({ place: 'Berlin', days: 0 }), { ok: false, status: 400, field: 'days' })
    t.match(await run({ place: 'Berlin', units: 'kelvin' }), { ok: false, status: 400, field: 'units' })
    t.match(await run({ latitude: 1, longitude: 2, countryCode: 'DE' }), {
      ok: false,
      status: 400,
      field: 'countryCode',
    })
    t.match(await run({ place: 'Berlin', countryCode: 'DEU' }), { ok: false, status: 400, field: 'countryCode' })
    t.match(await run({ place: '  ' }), { ok: false, status: 400, field: 'place' })
    t.match(await run({ place: 'x'.repeat(101) }), { ok: false, status: 400, field: 'place' })
  })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /OPEN_METEO_URL/,
  })
  const fc = await standIn(t, forecast)
  await t.rejects(runInline(handler, handler.example, { providers: { OPEN_METEO_URL: fc.url } }), {
    code: 'upstream_not_configured',
    message: /OPEN_METEO_GEOCODING_URL/,
  })
  // Open-Meteo's documented error: HTTP 400 { error: true, reason }
  const bad = await standIn(t, () => ({
    status: 400,
    json: { error: true, reason: 'Latitude must be in range of -90 to 90°.' },
  }))
  await t.rejects(
    runInline(
      handler,
      { latitude: 1, longitude: 2 },
      { providers: { OPEN_METEO_URL: bad.url, OPEN_METEO_GEOCODING_URL: bad.url } },
    ),
    { code: 'upstream_failed' },
  )
  const garbage = await standIn(t, () => ({ text: 'Bad Gateway' }))
  await t.rejects(
    runInline(
      handler,
      { latitude: 1, longitude: 2 },
      { providers: { OPEN_METEO_URL: garbage.url, OPEN_METEO_GEOCODING_URL: garbage.url } },
    ),
    { code: 'upstream_failed' },
  )
  const empty = await standIn(t, () => ({ json: { latitude: 1, longitude: 2 } }))
  await t.rejects(
    runInline(
      handler,
      { latitude: 1, longitude: 2 },
      { providers: { OPEN_METEO_URL: empty.url, OPEN_METEO_GEOCODING_URL: empty.url } },
    ),
    { code: 'upstream_failed', message: /without current/ },
  )
})
