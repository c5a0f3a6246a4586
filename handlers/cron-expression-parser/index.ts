import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_RUNS = 100

interface Input {
  expression: string
  timezone: string
  count: number
  from?: string
  use24HourTime: boolean
  domAndDow: boolean
}

export default defineHandler<Input>({
  slug: 'cron-expression-parser',
  description:
    'Explain a cron expression in plain English (cronstrue) and list its next run times in any IANA time zone, DST-aware (croner). Accepts 5 fields, 6 with seconds, 7 with year, and @daily-style nicknames.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['expression'],
    properties: {
      expression: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        description:
          'Cron expression: "min hour dom month dow", optionally with a leading seconds field and trailing year; supports ranges, steps, lists, names, L, W, # and @yearly/@monthly/@weekly/@daily/@hourly.',
      },
      timezone: {
        type: 'string',
        maxLength: 64,
        default: 'UTC',
        description: 'IANA time zone the schedule runs in, e.g. Europe/Berlin.',
      },
      count: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_RUNS,
        default: 5,
        description: `How many upcoming runs to list (1-${MAX_RUNS}).`,
      },
      from: {
        type: 'string',
        format: 'date-time',
        description: 'List runs after this instant (RFC 3339 with offset, e.g. 2024-01-01T00:00:00Z); default now.',
      },
      use24HourTime: {
        type: 'boolean',
        default: true,
        description: 'Description uses 24-hour times (14:00) rather than 02:00 PM.',
      },
      domAndDow: {
        type: 'boolean',
        default: false,
        description:
          'When both day-of-month and day-of-week are restricted, require both (AND) instead of either (OR, classic Vixie cron).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ expression, description, timezone, nextRuns: [{ local, utc }] } — local is ISO 8601 with the zone offset; nextRuns is empty for schedules that never fire (e.g. 30 February)',
    schema: {
      type: 'object',
      properties: {
        expression: { type: 'string' },
        description: { type: 'string' },
        timezone: { type: 'string' },
        nextRuns: {
          type: 'array',
          items: {
            type: 'object',
            properties: { local: { type: 'string' }, utc: { type: 'string' } },
            required: ['local', 'utc'],
          },
        },
      },
      required: ['expression', 'description', 'timezone', 'nextRuns'],
    },
    example: {
      expression: '0 9 * * 1-5',
      description: 'At 09:00, Monday through Friday',
      timezone: 'America/New_York',
      nextRuns: [
        { local: '2024-03-08T09:00:00-05:00', utc: '2024-03-08T14:00:00.000Z' },
        { local: '2024-03-11T09:00:00-04:00', utc: '2024-03-11T13:00:00.000Z' },
        { local: '2024-03-12T09:00:00-04:00', utc: '2024-03-12T13:00:00.000Z' },
      ],
    },
  },
  example: {
    expression: '0 9 * * 1-5',
    timezone: 'America/New_York',
    count: 3,
    from: '2024-03-08T12:00:00Z',
    use24HourTime: true,
    domAndDow: false,
  },
  async run(input) {
    if (!isTimeZone(input.timezone))
      throw new HandlerInputError('timezone', `timezone ${input.timezone} is not a known IANA time zone`)
    const [{ Cron }, { default: cronstrue }, { DateTime }] = await Promise.all([
      import('croner'),
      import('cronstrue'),
      import('luxon'),
    ])

    let job
    try {
      job = new Cron(input.expression, { timezone: input.timezone, paused: true, domAndDow: input.domAndDow })
    } catch (err) {
      throw new HandlerInputError(
        'expression',
        `expression is not valid cron: ${(err as Error).message.replace(/^CronPattern: /, '')}`,
      )
    }
    let description: string
    try {
      description = cronstrue.toString(input.expression, {
        use24HourTimeFormat: input.use24HourTime,
        throwExceptionOnParseError: true,
      })
    } catch (err) {
      throw new HandlerInputError(
        'expression',
        `expression cannot be described: ${err instanceof Error ? err.message : String(err)}`,
      )
    }

    const from = input.from ? new Date(input.from) : new Date()
    const runs = job.nextRuns(input.count, from)
    return {
      body: {
        expression: input.expression,
        description,
        timezone: input.timezone,
        nextRuns: runs.map((d) => ({
          local: DateTime.fromJSDate(d, { zone: input.timezone }).toISO({ suppressMilliseconds: true }),
          utc: d.toISOString(),
        })),
      },
    }
  },
})

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone })
    return true
  } catch {
    return false
  }
}
