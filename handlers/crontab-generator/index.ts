import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const
type Day = (typeof DAYS)[number]
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

interface Input {
  schedule:
    'every-n-minutes' | 'every-n-hours' | 'hourly' | 'daily' | 'weekdays' | 'weekends' | 'weekly' | 'monthly' | 'yearly'
  interval: number
  at: string
  daysOfWeek: Day[]
  dayOfMonth: number
  month: number
  command?: string
}

export default defineHandler<Input>({
  slug: 'crontab-generator',
  description:
    'Build a standard 5-field cron expression from a plain schedule (every N minutes or hours, hourly, daily at HH:MM, weekdays, weekends, chosen weekdays, monthly, yearly), with an English description and an optional ready crontab line.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['schedule'],
    properties: {
      schedule: {
        type: 'string',
        enum: [
          'every-n-minutes',
          'every-n-hours',
          'hourly',
          'daily',
          'weekdays',
          'weekends',
          'weekly',
          'monthly',
          'yearly',
        ],
        description:
          'Kind of schedule. weekly runs on daysOfWeek; monthly on dayOfMonth; yearly on dayOfMonth of month.',
      },
      interval: {
        type: 'integer',
        minimum: 1,
        maximum: 59,
        default: 1,
        description: 'every-n-minutes: N (1-59); every-n-hours: N (1-23).',
      },
      at: {
        type: 'string',
        pattern: '^([01]?\\d|2[0-3]):[0-5]\\d$',
        default: '00:00',
        description: 'Time of day HH:MM (24-hour). hourly and every-n-hours use only the minutes.',
      },
      daysOfWeek: {
        type: 'array',
        items: { type: 'string', enum: [...DAYS] },
        minItems: 1,
        maxItems: 7,
        uniqueItems: true,
        default: ['mon'],
        description: 'weekly: days to run on (sun..sat).',
      },
      dayOfMonth: {
        type: 'integer',
        minimum: 1,
        maximum: 31,
        default: 1,
        description: 'monthly/yearly: day of the month (months without that day are skipped).',
      },
      month: { type: 'integer', minimum: 1, maximum: 12, default: 1, description: 'yearly: month 1-12.' },
      command: {
        type: 'string',
        minLength: 1,
        maxLength: 1_000,
        pattern: '^[^\\r\\n]*$',
        description: 'Optional command for a complete crontab line (single line, at most 1,000 characters).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: '{ expression, description, crontabLine?, warnings: string[] }',
    schema: {
      type: 'object',
      properties: {
        expression: { type: 'string' },
        description: { type: 'string' },
        warnings: { type: 'array', items: { type: 'string' } },
        crontabLine: { type: 'string' },
      },
      required: ['expression', 'description', 'warnings'],
    },
    example: {
      expression: '30 9 * * 1-5',
      description: 'At 09:30, Monday through Friday',
      warnings: [],
      crontabLine: '30 9 * * 1-5 /usr/local/bin/backup.sh',
    },
  },
  example: {
    schedule: 'weekdays',
    interval: 1,
    at: '09:30',
    daysOfWeek: ['mon'],
    dayOfMonth: 1,
    month: 1,
    command: '/usr/local/bin/backup.sh',
  },
  async run(input) {
    const [hh, mm] = input.at.split(':').map(Number)
    const warnings: string[] = []
    let expression: string
    switch (input.schedule) {
      case 'every-n-minutes':
        expression = input.interval === 1 ? '* * * * *' : `*/${input.interval} * * * *`
        if (60 % input.interval !== 0)
          warnings.push(
            `${input.interval} does not divide 60: the step restarts each hour, so the gap across the hour is ${60 % input.interval} minutes`,
          )
        break
      case 'every-n-hours':
        if (input.interval > 23) throw new HandlerInputError('interval', 'interval for every-n-hours must be 1-23')
        expression = `${mm} ${input.interval === 1 ? '*' : `*/${input.interval}`} * * *`
        if (24 % input.interval !== 0)
          warnings.push(`${input.interval} does not divide 24: the step restarts at midnight`)
        break
      case 'hourly':
        expression = `${mm} * * * *`
        break
      case 'daily':
        expression = `${mm} ${hh} * * *`
        break
      case 'weekdays':
        expression = `${mm} ${hh} * * 1-5`
        break
      case 'weekends':
        expression = `${mm} ${hh} * * 0,6`
        break
      case 'weekly':
        expression = `${mm} ${hh} * * ${dayList(input.daysOfWeek)}`
        break
      case 'monthly':
        expression = `${mm} ${hh} ${input.dayOfMonth} * *`
        if (input.dayOfMonth > 28) warnings.push(`months with fewer than ${input.dayOfMonth} days are skipped`)
        break
      case 'yearly': {
        if (input.dayOfMonth > DAYS_IN_MONTH[input.month - 1])
          throw new HandlerInputError('dayOfMonth', `month ${input.month} has no day ${input.dayOfMonth}`)
        expression = `${mm} ${hh} ${input.dayOfMonth} ${input.month} *`
        if (input.month === 2 && input.dayOfMonth === 29) warnings.push('29 February runs only in leap years')
        break
      }
    }
    const { default: cronstrue } = await import('cronstrue')
    const body: Record<string, unknown> = {
      expression,
      description: cronstrue.toString(expression, { use24HourTimeFormat: true }),
      warnings,
    }
    if (input.command !== undefined) body.crontabLine = `${expression} ${input.command}`
    return { body }
  },
})

/** Sorted cron day numbers, with runs of three or more written as ranges (1,2,3,5 → 1-3,5). */
function dayList(days: Day[]): string {
  const nums = [...new Set(days.map((d) => DAYS.indexOf(d)))].sort((a, b) => a - b)
  const parts: string[] = []
  for (let i = 0; i < nums.length;) {
    let j = i
    while (j + 1 < nums.length && nums[j + 1] === nums[j] + 1) j++
    parts.push(j - i >= 2 ? `${nums[i]}-${nums[j]}` : nums.slice(i, j + 1).join(','))
    i = j + 1
  }
  return parts.join(',')
}
