import { joinUrl, providerJson, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  place?: string
  countryCode?: string
  latitude?: number
  longitude?: number
  days?: number
  units?: 'metric' | 'imperial'
}

const PROVIDER = 'Open-Meteo'
const MAX_DAYS = 16

/**
 * WMO weather interpretation codes (WW) as Open-Meteo documents them
 * (https://open-meteo.com/en/docs, section "WMO Weather interpretation codes (WW)").
 */
export const WMO_CODES: Record<number, string> = {
  0: 'Clear sky',
  1: 'Mainly clear',
  2: 'Partly cloudy',
  3: 'Overcast',
  45: 'Fog',
  48: 'Depositing rime fog',
  51: 'Light drizzle',
  53: 'Moderate drizzle',
  55: 'Dense drizzle',
  56: 'Light freezing drizzle',
  57: 'Dense freezing drizzle',
  61: 'Slight rain',
  63: 'Moderate rain',
  65: 'Heavy rain',
  66: 'Light freezing rain',
  67: 'Heavy freezing rain',
  71: 'Slight snow fall',
  73: 'Moderate snow fall',
  75: 'Heavy snow fall',
  77: 'Snow grains',
  80: 'Slight rain showers',
  81: 'Moderate rain showers',
  82: 'Violent rain showers',
  85: 'Slight snow showers',
  86: 'Heavy snow showers',
  95: 'Thunderstorm, slight or moderate',
  96: 'Thunderstorm with slight hail',
  99: 'Thunderstorm with heavy hail',
}

const CURRENT = [
  'temperature_2m',
  'apparent_temperature',
  'relative_humidity_2m',
  'precipitation',
  'weather_code',
  'cloud_cover',
  'wind_speed_10m',
  'wind_direction_10m',
  'wind_gusts_10m',
  'is_day',
] as const
const DAILY = [
  'weather_code',
  'temperature_2m_max',
  'temperature_2m_min',
  'precipitation_sum',
  'precipitation_probability_max',
  'wind_speed_10m_max',
  'sunrise',
  'sunset',
  'uv_index_max',
] as const

/** Open-Meteo geocoding answer (https://open-meteo.com/en/docs/geocoding-api): `results` is absent when nothing matched. */
interface GeocodingAnswer {
  results?: Array<{
    name?: string
    latitude?: number
    longitude?: number
    elevation?: number
    country?: string
    country_code?: string
    admin1?: string
    timezone?: string
    population?: number
    feature_code?: string
  }>
}

/** Open-Meteo forecast answer (https://open-meteo.com/en/docs): `current` / `daily` hold the asked variables, `*_units` their units. */
interface ForecastAnswer {
  latitude?: number
  longitude?: number
  elevation?: number
  timezone?: string
  timezone_abbreviation?: string
  utc_offset_seconds?: number
  current_units?: Record<string, string>
  current?: Record<string, number | string | null>
  daily_units?: Record<string, string>
  daily?: Record<string, Array<number | string | null>>
}

const describe = (code: unknown) => (typeof code === 'number' ? (WMO_CODES[code] ?? null) : null)
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** Current weather and a daily forecast from Open-Meteo, for a place name (geocoded) or coordinates. */
export default defineHandler<Input>({
  slug: 'weather-api',
  description:
    'Current weather and a daily forecast (up to 16 days) for a place name or coordinates, from Open-Meteo: temperature, feels-like, humidity, wind, precipitation and a plain-language description of the WMO weather code; metric or imperial units.',
  providers: ['OPEN_METEO_URL', 'OPEN_METEO_GEOCODING_URL'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      place: {
        type: 'string',
        minLength: 2,
        maxLength: 100,
        description:
          'A place name to look up (city, town, village), e.g. "Berlin". Give either place or latitude + longitude.',
      },
      countryCode: {
        type: 'string',
        pattern: '^[A-Za-z]{2}$',
        description:
          'Optional ISO 3166-1 alpha-2 country code that narrows the place lookup (e.g. US for Paris, Texas).',
      },
      latitude: {
        type: 'number',
        minimum: -90,
        maximum: 90,
        description: 'Latitude in decimal degrees (WGS84), with longitude, instead of a place name.',
      },
      longitude: {
        type: 'number',
        minimum: -180,
        maximum: 180,
        description: 'Longitude in decimal degrees (WGS84), with latitude.',
      },
      days: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_DAYS,
        default: 3,
        description: `Number of forecast days including today (1–${MAX_DAYS}, default 3).`,
      },
      units: {
        type: 'string',
        enum: ['metric', 'imperial'],
        default: 'metric',
        description: 'metric: °C, km/h, mm; imperial: °F, mph, inch.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'location { name, country, countryCode, admin1, latitude, longitude, elevation, timezone, matchedBy: "place" | "coordinates" }, units { temperature, windSpeed, precipitation }, ' +
      'current { time (local), temperature, apparentTemperature, relativeHumidity, precipitation, cloudCover, windSpeed, windDirection, windGusts, isDay, weatherCode, weather }, ' +
      'daily[] { date, weatherCode, weather, temperatureMax, temperatureMin, precipitationSum, precipitationProbabilityMax, windSpeedMax, uvIndexMax, sunrise, sunset }, source. ' +
      "weather is the WMO code described per Open-Meteo's table; any value the model does not provide is null.",
    schema: {
      type: 'object',
      properties: {
        location: { type: 'object' },
        units: { type: 'object' },
        current: { type: 'object' },
        daily: { type: 'array', items: { type: 'object' } },
        source: { type: 'string' },
      },
    },
    example: {
      location: {
        name: 'Berlin',
        country: 'Germany',
        countryCode: 'DE',
        admin1: 'Land Berlin',
        latitude: 52.52437,
        longitude: 13.41053,
        matchedBy: 'place',
        elevation: 38,
        timezone: 'Europe/Berlin',
        timezoneAbbreviation: 'CET',
      },
      units: { temperature: '°C', windSpeed: 'km/h', precipitation: 'mm', relativeHumidity: '%', windDirection: '°' },
      current: {
        time: '2024-11-23T14:45',
        temperature: 5.3,
        apparentTemperature: 1.2,
        relativeHumidity: 81,
        precipitation: 0,
        cloudCover: 100,
        windSpeed: 14.8,
        windDirection: 247,
        windGusts: 31.3,
        isDay: true,
        weatherCode: 3,
        weather: 'Overcast',
      },
      daily: [
        {
          date: '2024-11-23',
          weatherCode: 3,
          weather: 'Overcast',
          temperatureMax: 6,
          temperatureMin: -1,
          precipitationSum: 0,
          precipitationProbabilityMax: null,
          windSpeedMax: 20.1,
          uvIndexMax: 0.9,
          sunrise: '2024-11-23T07:41',
          sunset: '2024-11-23T16:04',
        },
        {
          date: '2024-11-24',
          weatherCode: 61,
          weather: 'Slight rain',
          temperatureMax: 7,
          temperatureMin: 0,
          precipitationSum: 0.5,
          precipitationProbabilityMax: null,
          windSpeedMax: 20.1,
          uvIndexMax: 0.9,
          sunrise: '2024-11-24T07:41',
          sunset: '2024-11-24T16:04',
        },
        {
          date: '2024-11-25',
          weatherCode: 95,
          weather: 'Thunderstorm, slight or moderate',
          temperatureMax: 8,
          temperatureMin: 1,
          precipitationSum: 1,
          precipitationProbabilityMax: null,
          windSpeedMax: 20.1,
          uvIndexMax: 0.9,
          sunrise: '2024-11-25T07:41',
          sunset: '2024-11-25T16:04',
        },
      ],
      source: 'Open-Meteo (open-meteo.com), weather data CC BY 4.0',
    },
  },
  example: { place: 'Berlin', days: 3, units: 'metric' },
  async run(input, ctx) {
    const forecastBase = providerSetting(ctx, 'OPEN_METEO_URL', 'the weather forecast')
    const hasCoords = input.latitude !== undefined || input.longitude !== undefined
    if (input.place !== undefined && hasCoords)
      throw new HandlerInputError('place', 'give either place or latitude + longitude, not both')
    if (input.place === undefined && !hasCoords)
      throw new HandlerInputError('place', 'place (a place name) or latitude + longitude is required')
    if (input.countryCode !== undefined && input.place === undefined)
      throw new HandlerInputError('countryCode', 'countryCode narrows a place lookup: give it with place')
    if (hasCoords && input.latitude === undefined)
      throw new HandlerInputError('latitude', 'latitude is required with longitude')
    if (hasCoords && input.longitude === undefined)
      throw new HandlerInputError('longitude', 'longitude is required with latitude')
    const imperial = input.units === 'imperial'
    const days = input.days ?? 3

    let location: Record<string, unknown>
    if (input.place !== undefined) {
      const place = input.place.trim()
      if (place.length < 2) throw new HandlerInputError('place', 'place must have at least 2 characters')
      const geoBase = providerSetting(ctx, 'OPEN_METEO_GEOCODING_URL', 'the place lookup')
      const geo = await providerJson<GeocodingAnswer>(
        `${PROVIDER} geocoding`,
        joinUrl(geoBase, '/v1/search', {
          name: place,
          count: 1,
          language: 'en',
          format: 'json',
          countryCode: input.countryCode?.toUpperCase(),
        }),
      )
      const hit = geo?.results?.[0]
      if (!hit)
        throw new HandlerInputError(
          'place',
          `place: no place called "${place}" was found${input.countryCode ? ` in ${input.countryCode.toUpperCase()}` : ''}`,
          422,
        )
      if (num(hit.latitude) === null || num(hit.longitude) === null)
        throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} geocoding answered a place without coordinates`)
      location = {
        name: hit.name ?? place,
        country: hit.country ?? null,
        countryCode: hit.country_code ?? null,
        admin1: hit.admin1 ?? null,
        latitude: hit.latitude,
        longitude: hit.longitude,
        matchedBy: 'place',
      }
    } else {
      location = {
        name: null,
        country: null,
        countryCode: null,
        admin1: null,
        latitude: input.latitude,
        longitude: input.longitude,
        matchedBy: 'coordinates',
      }
    }

    const f = await providerJson<ForecastAnswer>(
      PROVIDER,
      joinUrl(forecastBase, '/v1/forecast', {
        latitude: location.latitude as number,
        longitude: location.longitude as number,
        current: CURRENT.join(','),
        daily: DAILY.join(','),
        timezone: 'auto',
        forecast_days: days,
        temperature_unit: imperial ? 'fahrenheit' : undefined,
        wind_speed_unit: imperial ? 'mph' : undefined,
        precipitation_unit: imperial ? 'inch' : undefined,
      }),
    )
    if (!f || typeof f !== 'object' || !f.current || !f.daily || !Array.isArray(f.daily.time))
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered without current or daily weather`)
    const c = f.current
    const d = f.daily
    const col = (name: string, i: number) => (Array.isArray(d[name]) ? d[name]![i] : undefined)
    const daily = d.time!.map((date, i) => ({
      date,
      weatherCode: num(col('weather_code', i)),
      weather: describe(col('weather_code', i)),
      temperatureMax: num(col('temperature_2m_max', i)),
      temperatureMin: num(col('temperature_2m_min', i)),
      precipitationSum: num(col('precipitation_sum', i)),
      precipitationProbabilityMax: num(col('precipitation_probability_max', i)),
      windSpeedMax: num(col('wind_speed_10m_max', i)),
      uvIndexMax: num(col('uv_index_max', i)),
      sunrise: typeof col('sunrise', i) === 'string' ? col('sunrise', i) : null,
      sunset: typeof col('sunset', i) === 'string' ? col('sunset', i) : null,
    }))
    return {
      body: {
        location: {
          ...location,
          elevation: num(f.elevation),
          timezone: f.timezone ?? null,
          timezoneAbbreviation: f.timezone_abbreviation ?? null,
        },
        units: {
          temperature: f.current_units?.temperature_2m ?? (imperial ? '°F' : '°C'),
          windSpeed: f.current_units?.wind_speed_10m ?? (imperial ? 'mph' : 'km/h'),
          precipitation: f.current_units?.precipitation ?? (imperial ? 'inch' : 'mm'),
          relativeHumidity: '%',
          windDirection: '°',
        },
        current: {
          time: typeof c.time === 'string' ? c.time : null,
          temperature: num(c.temperature_2m),
          apparentTemperature: num(c.apparent_temperature),
          relativeHumidity: num(c.relative_humidity_2m),
          precipitation: num(c.precipitation),
          cloudCover: num(c.cloud_cover),
          windSpeed: num(c.wind_speed_10m),
          windDirection: num(c.wind_direction_10m),
          windGusts: num(c.wind_gusts_10m),
          isDay: c.is_day === 1 ? true : c.is_day === 0 ? false : null,
          weatherCode: num(c.weather_code),
          weather: describe(c.weather_code),
        },
        daily,
        source: 'Open-Meteo (open-meteo.com), weather data CC BY 4.0',
      },
    }
  },
})
