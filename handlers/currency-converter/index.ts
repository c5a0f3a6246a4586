import { joinUrl, providerJson, providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  amount?: number
  from: string
  to: string
  date?: string
}

const PROVIDER = 'Frankfurter'
const MAX_TARGETS = 10
/** the ECB reference rates Frankfurter serves start on this day */
const FIRST_DATE = '1999-01-04'

/**
 * Frankfurter's v1 API (documented at https://frankfurter.dev/v1, served under https://api.frankfurter.dev/v1):
 *   GET /latest?base=USD&symbols=EUR,GBP → { amount: 1.0, base: "USD", date: "2024-11-22", rates: { EUR: 0.9582, GBP: 0.7981 } }
 *   GET /2024-01-06?base=... → the same shape; `date` is the working day whose rates were used (on or before the asked day)
 *   GET /currencies → { AUD: "Australian Dollar", ... }
 */
interface RatesAnswer {
  amount?: number
  base?: string
  date?: string
  rates?: Record<string, number>
}

/** Converts an amount between currencies at the European Central Bank's reference rates, served by Frankfurter. */
export default defineHandler<Input>({
  slug: 'currency-converter',
  description:
    'Convert an amount between currencies at the European Central Bank reference rates (latest or a past date, via Frankfurter); the answer states the date of the rate used.',
  providers: ['FRANKFURTER_URL'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['from', 'to'],
    properties: {
      amount: {
        type: 'number',
        exclusiveMinimum: 0,
        maximum: 1e15,
        default: 1,
        description: 'The amount in the `from` currency (default 1).',
      },
      from: {
        type: 'string',
        minLength: 3,
        maxLength: 3,
        description: 'ISO 4217 code of the source currency, e.g. USD.',
      },
      to: {
        type: 'string',
        minLength: 3,
        maxLength: 43,
        description: `ISO 4217 code of the target currency, e.g. EUR, or up to ${MAX_TARGETS} comma-separated codes (EUR,GBP,JPY).`,
      },
      date: {
        type: 'string',
        pattern: '^\\d{4}-\\d{2}-\\d{2}$',
        description: `Use the reference rates of this day (YYYY-MM-DD, from ${FIRST_DATE}); on a weekend or holiday the previous working day's rates are used. Default: the latest rates.`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'amount, from, date (YYYY-MM-DD: the day of the reference rates used), requestedDate (null for latest), conversions[]: { to, name, rate (1 from = rate to), converted (amount × rate, 12 significant digits) }, source. Rates are ECB daily reference rates (published around 16:00 CET on working days), not live market quotes.',
    schema: {
      type: 'object',
      properties: {
        amount: { type: 'number' },
        from: { type: 'string' },
        date: { type: 'string' },
        requestedDate: { type: ['string', 'null'] },
        conversions: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              to: { type: 'string' },
              name: { type: ['string', 'null'] },
              rate: { type: 'number' },
              converted: { type: 'number' },
            },
          },
        },
        source: { type: 'string' },
      },
    },
    example: {
      amount: 100,
      from: 'USD',
      fromName: 'United States Dollar',
      date: '2024-11-22',
      requestedDate: null,
      conversions: [{ to: 'EUR', name: 'Euro', rate: 0.96, converted: 96 }],
      source: 'European Central Bank euro foreign exchange reference rates, via Frankfurter',
    },
  },
  example: { amount: 100, from: 'USD', to: 'EUR' },
  async run(input, ctx) {
    const base = providerSetting(ctx, 'FRANKFURTER_URL', 'currency conversion')
    const from = input.from.trim().toUpperCase()
    const targets = [
      ...new Set(
        input.to
          .split(',')
          .map((s) => s.trim().toUpperCase())
          .filter(Boolean),
      ),
    ]
    if (!/^[A-Z]{3}$/.test(from))
      throw new HandlerInputError('from', 'from must be a three-letter ISO 4217 currency code')
    if (targets.length === 0) throw new HandlerInputError('to', 'to must name at least one currency')
    if (targets.length > MAX_TARGETS) throw new HandlerInputError('to', `to may name at most ${MAX_TARGETS} currencies`)
    const badTarget = targets.find((c) => !/^[A-Z]{3}$/.test(c))
    if (badTarget) throw new HandlerInputError('to', `to: ${badTarget} is not a three-letter ISO 4217 currency code`)
    const amount = input.amount ?? 1
    if (input.date !== undefined) checkDate(input.date)

    // the provider's own list decides what is known (it changes as the ECB adds or drops currencies)
    const currencies = await providerJson<Record<string, string>>(PROVIDER, joinUrl(base, '/currencies'))
    if (!currencies || typeof currencies !== 'object' || Array.isArray(currencies))
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered an unexpected currency list`)
    if (!(from in currencies))
      throw new HandlerInputError('from', `from: ${from} is not a currency with ECB reference rates`)
    const unknown = targets.filter((c) => !(c in currencies))
    if (unknown.length)
      throw new HandlerInputError(
        'to',
        `to: ${unknown.join(', ')} ${unknown.length > 1 ? 'are not currencies' : 'is not a currency'} with ECB reference rates`,
      )

    const others = targets.filter((c) => c !== from)
    const answer = await providerJson<RatesAnswer>(
      PROVIDER,
      joinUrl(base, `/${input.date ?? 'latest'}`, {
        base: from,
        symbols: others.length ? others.join(',') : undefined,
      }),
      { acceptStatus: [404, 422] },
    )
    if (
      typeof answer?.date !== 'string' ||
      !/^\d{4}-\d{2}-\d{2}$/.test(answer.date) ||
      !answer.rates ||
      typeof answer.rates !== 'object'
    ) {
      // a well-formed date with no rates (before the series starts) comes back as "not found"
      if (input.date !== undefined && answer && answer.date === undefined)
        throw new HandlerInputError('date', `date: ${PROVIDER} has no reference rates for ${input.date}`, 422)
      throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} answered without rates`)
    }
    const date = answer.date
    const rates = answer.rates
    // the currency list is today's: a past day may predate a currency (or fall in a gap of its series)
    const unquoted = input.date === undefined ? [] : targets.filter((to) => to !== from && !(to in rates))
    if (unquoted.length)
      throw new HandlerInputError(
        'to',
        `to: the ECB published no reference rate for ${unquoted.join(', ')} on ${date} (the rates of ${input.date} are those of ${date})`,
        422,
      )
    const conversions = targets.map((to) => {
      const rate = to === from ? 1 : rates[to]
      if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0)
        throw new HandlerUpstreamError('upstream_failed', `${PROVIDER} gave no rate for ${from}→${to} on ${date}`)
      return { to, name: currencies[to] ?? null, rate, converted: Number((amount * rate).toPrecision(12)) }
    })
    return {
      body: {
        amount,
        from,
        fromName: currencies[from] ?? null,
        date,
        requestedDate: input.date ?? null,
        conversions,
        source: 'European Central Bank euro foreign exchange reference rates, via Frankfurter',
      },
    }
  },
})

function checkDate(raw: string) {
  const d = new Date(`${raw}T00:00:00Z`)
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== raw)
    throw new HandlerInputError('date', 'date is not a valid calendar day (YYYY-MM-DD)')
  if (raw < FIRST_DATE)
    throw new HandlerInputError('date', `date must be ${FIRST_DATE} or later (the ECB reference rates start then)`)
  if (raw > new Date().toISOString().slice(0, 10)) throw new HandlerInputError('date', 'date must not be in the future')
}
