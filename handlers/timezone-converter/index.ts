import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_ZONES = 50

interface Input {
  datetime?: string
  from: string
  to: string[]
  disambiguation: 'earlier' | 'later'
}

export default defineHandler<Input>({
  slug: 'timezone-converter',
  description:
    'Convert a date-time between IANA time zones, with each zone’s UTC offset, abbreviation (the tz database’s: BST, CEST, AEDT) and daylight-saving flag; wall-clock times that fall in a DST gap or overlap are resolved and reported.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['to'],
    properties: {
      datetime: {
        type: 'string',
        maxLength: 64,
        description:
          'ISO 8601 date-time. With Z or an offset it is an exact instant; without, it is a wall-clock time in "from". Omit for now.',
      },
      from: {
        type: 'string',
        maxLength: 64,
        default: 'UTC',
        description: 'IANA zone of a wall-clock datetime (e.g. Europe/Paris); also reported for instants.',
      },
      to: {
        type: 'array',
        items: { type: 'string', maxLength: 64 },
        minItems: 1,
        maxItems: MAX_ZONES,
        description: `Target IANA zones (1-${MAX_ZONES}); a single query value is accepted.`,
      },
      disambiguation: {
        type: 'string',
        enum: ['earlier', 'later'],
        default: 'earlier',
        description:
          'Which instant to take when a wall-clock time occurs twice (DST ends). Times skipped when DST starts move forward by the gap.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ utc, source: Zoned & { adjusted?, ambiguous? }, conversions: Zoned[] } where Zoned = { zone, iso, date, time, offset, offsetMinutes, abbreviation, isDST, dayDifference }; abbreviation is the tz database’s (BST, CEST) where it has a name for the time, else GMT±h (Asia/Dubai: GMT+4)',
    schema: {
      type: 'object',
      properties: {
        utc: { type: 'string' },
        source: {
          type: 'object',
          properties: {
            zone: { type: 'string' },
            iso: { type: 'string' },
            date: { type: 'string' },
            time: { type: 'string' },
            offset: { type: 'string' },
            offsetMinutes: { type: 'number' },
            abbreviation: { type: 'string' },
            isDST: { type: 'boolean' },
            dayDifference: { type: 'number' },
            ambiguous: { type: 'boolean' },
            adjusted: { type: 'boolean' },
          },
          required: [
            'zone',
            'iso',
            'date',
            'time',
            'offset',
            'offsetMinutes',
            'abbreviation',
            'isDST',
            'dayDifference',
          ],
        },
        conversions: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              zone: { type: 'string' },
              iso: { type: 'string' },
              date: { type: 'string' },
              time: { type: 'string' },
              offset: { type: 'string' },
              offsetMinutes: { type: 'number' },
              abbreviation: { type: 'string' },
              isDST: { type: 'boolean' },
              dayDifference: { type: 'number' },
            },
            required: [
              'zone',
              'iso',
              'date',
              'time',
              'offset',
              'offsetMinutes',
              'abbreviation',
              'isDST',
              'dayDifference',
            ],
          },
        },
      },
      required: ['utc', 'source', 'conversions'],
    },
    example: {
      utc: '2024-07-01T13:00:00Z',
      source: {
        zone: 'America/New_York',
        iso: '2024-07-01T09:00:00-04:00',
        date: '2024-07-01',
        time: '09:00:00',
        offset: '-04:00',
        offsetMinutes: -240,
        abbreviation: 'EDT',
        isDST: true,
        dayDifference: 0,
      },
      conversions: [
        {
          zone: 'Europe/London',
          iso: '2024-07-01T14:00:00+01:00',
          date: '2024-07-01',
          time: '14:00:00',
          offset: '+01:00',
          offsetMinutes: 60,
          abbreviation: 'BST',
          isDST: true,
          dayDifference: 0,
        },
        {
          zone: 'Asia/Tokyo',
          iso: '2024-07-01T22:00:00+09:00',
          date: '2024-07-01',
          time: '22:00:00',
          offset: '+09:00',
          offsetMinutes: 540,
          abbreviation: 'JST',
          isDST: false,
          dayDifference: 0,
        },
        {
          zone: 'Australia/Sydney',
          iso: '2024-07-01T23:00:00+10:00',
          date: '2024-07-01',
          time: '23:00:00',
          offset: '+10:00',
          offsetMinutes: 600,
          abbreviation: 'AEST',
          isDST: false,
          dayDifference: 0,
        },
      ],
    },
  },
  example: {
    datetime: '2024-07-01T09:00',
    from: 'America/New_York',
    to: ['Europe/London', 'Asia/Tokyo', 'Australia/Sydney'],
    disambiguation: 'earlier',
  },
  async run(input) {
    const [{ DateTime, IANAZone }, { default: moment }] = await Promise.all([
      import('luxon'),
      import('moment-timezone'),
    ])
    const checkZone = (field: string, zone: string) => {
      if (!IANAZone.isValidZone(zone))
        throw new HandlerInputError(field, `${field} ${zone} is not a known IANA time zone`)
    }
    checkZone('from', input.from)
    input.to.forEach((z, i) => checkZone(`to.${i}`, z))

    let source
    const notes: { adjusted?: boolean; ambiguous?: boolean } = {}
    if (input.datetime === undefined) source = DateTime.now().setZone(input.from).setLocale('en-US')
    else {
      const hasOffset = /(Z|[+-]\d{2}(:?\d{2})?)$/i.test(input.datetime) && input.datetime.includes('T')
      // a fixed locale keeps ICU's zone names (EDT, GMT+4) the same on every host
      source = DateTime.fromISO(input.datetime, { zone: input.from, setZone: false, locale: 'en-US' })
      if (!source.isValid)
        throw new HandlerInputError(
          'datetime',
          `datetime is not valid ISO 8601: ${source.invalidExplanation ?? source.invalidReason}`,
        )
      if (!hasOffset) {
        const wall = DateTime.fromISO(input.datetime, { zone: 'UTC' }).toISO({ includeOffset: false })
        const candidates = source.getPossibleOffsets().sort((a, b) => a.toMillis() - b.toMillis())
        if (candidates.length > 1) {
          notes.ambiguous = true
          source = input.disambiguation === 'earlier' ? candidates[0] : candidates[candidates.length - 1]
        }
        // luxon moves a wall time inside a DST gap forward; say so rather than hide it
        if (source.toISO({ includeOffset: false }) !== wall) notes.adjusted = true
      }
    }

    const describe = (dt: typeof source) => ({
      zone: dt.zoneName,
      iso: dt.toISO({ suppressMilliseconds: true }),
      date: dt.toISODate(),
      time: dt.toFormat('HH:mm:ss'),
      offset: dt.toFormat('ZZ'),
      offsetMinutes: dt.offset,
      abbreviation: tzAbbreviation(moment.tz.zone(dt.zoneName ?? ''), dt.toMillis(), dt.offset) ?? dt.offsetNameShort,
      isDST: dt.isInDST,
      dayDifference: Math.round(
        DateTime.fromISO(dt.toISODate()!, { zone: 'UTC' }).diff(
          DateTime.fromISO(source.toISODate()!, { zone: 'UTC' }),
          'days',
        ).days,
      ),
    })
    return {
      body: {
        utc: source.toUTC().toISO({ suppressMilliseconds: true }),
        source: { ...describe(source), ...notes },
        conversions: input.to.map((zone) => describe(source.setZone(zone))),
      },
    }
  },
})

/**
 * The tz database's abbreviation of the zone at that instant (BST, CEST, AEDT), from
 * moment-timezone's copy of it. ICU names a zone only where the locale has a name for it (en-US
 * calls London's summer time GMT+1). The tz database writes numeric abbreviations (+04) for zones
 * that have none in use; for those, and should its offset disagree with ICU's, undefined.
 */
function tzAbbreviation(
  zone: { abbr(ms: number): string; utcOffset(ms: number): number } | null,
  ms: number,
  offsetMinutes: number,
): string | undefined {
  if (!zone) return undefined
  const abbr = zone.abbr(ms)
  // moment-timezone counts offsets west of UTC as positive
  return /^[A-Za-z]{2,6}$/.test(abbr) && -zone.utcOffset(ms) === offsetMinutes ? abbr : undefined
}
