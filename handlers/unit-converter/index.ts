import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { LINEAR_UNITS, TEMPERATURE, UNIT_CATEGORY, type Category } from './unit-tables.js'

const UNIT_IDS = Object.keys(UNIT_CATEGORY)
const MAX_ABS = 1e300

interface Input {
  value: number
  from: string
  to?: string
  precision: number
}

export default defineHandler<Input>({
  slug: 'unit-converter',
  description:
    'Convert a value between units of length, mass, temperature, volume, area, speed, time, data (SI and binary prefixes), pressure and energy, using exact definitional factors; omit "to" to get every unit of the category.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['value', 'from'],
    properties: {
      value: {
        type: 'number',
        minimum: -MAX_ABS,
        maximum: MAX_ABS,
        description: `Quantity to convert (|value| ≤ ${MAX_ABS}).`,
      },
      from: {
        type: 'string',
        enum: UNIT_IDS,
        description: 'Unit of value (case-sensitive: MB is megabyte, Mbit megabit; C/F/K/R are temperature scales).',
      },
      to: {
        type: 'string',
        enum: UNIT_IDS,
        description: 'Target unit of the same category; omit for all units of the category.',
      },
      precision: {
        type: 'integer',
        minimum: 1,
        maximum: 17,
        default: 15,
        description: 'Significant digits of the result (15 hides binary floating-point noise; 17 is the raw double).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ category, value, from, to, result } or, without "to", { category, value, from, results: { <unit>: number } }',
    schema: {
      type: 'object',
      properties: {
        category: { type: 'string' },
        value: { type: 'number' },
        from: { type: 'string' },
        to: { type: 'string' },
        result: { type: 'number' },
        results: {
          type: 'object',
          description: 'the value in every unit of the category, keyed by unit',
          additionalProperties: { type: 'number' },
        },
      },
      required: ['category', 'value', 'from'],
    },
    example: { category: 'speed', value: 100, from: 'km/h', to: 'mph', result: 62.1371192237334 },
  },
  example: { value: 100, from: 'km/h', to: 'mph', precision: 15 },
  run(input) {
    const category = UNIT_CATEGORY[input.from]
    const round = (x: number) => Number(x.toPrecision(input.precision))
    if (input.to !== undefined) {
      if (UNIT_CATEGORY[input.to] !== category) {
        throw new HandlerInputError(
          'to',
          `cannot convert ${category} (${input.from}) to ${UNIT_CATEGORY[input.to]} (${input.to})`,
        )
      }
      return {
        body: {
          category,
          value: input.value,
          from: input.from,
          to: input.to,
          result: round(convert(category, input.value, input.from, input.to)),
        },
      }
    }
    const units = category === 'temperature' ? Object.keys(TEMPERATURE) : Object.keys(LINEAR_UNITS[category].units)
    const results = Object.fromEntries(units.map((u) => [u, round(convert(category, input.value, input.from, u))]))
    return { body: { category, value: input.value, from: input.from, results } }
  },
})

function convert(category: Category, value: number, from: string, to: string): number {
  if (category === 'temperature') {
    const kelvin = TEMPERATURE[from as keyof typeof TEMPERATURE].toK(value)
    if (kelvin < 0) throw new HandlerInputError('value', `${value} °${from} is below absolute zero`)
    return TEMPERATURE[to as keyof typeof TEMPERATURE].fromK(kelvin)
  }
  if (from === to) return value
  const units: Record<string, number> = LINEAR_UNITS[category].units
  const result = (value * units[from]) / units[to]
  if (!Number.isFinite(result))
    throw new HandlerInputError('value', `${value} ${from} in ${to} is beyond the range of a double`)
  return result
}
