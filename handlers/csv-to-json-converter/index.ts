import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_CSV = 2_000_000
const MAX_ROWS = 100_000
const AUTO_CANDIDATES = [',', ';', '\t', '|']

interface Input {
  csv: string
  delimiter: string
  headers: boolean
  inferTypes: boolean
  emptyAsNull: boolean
  trim: boolean
  skipEmptyLines: boolean
  quote: string
}

type Cell = string | number | boolean | null

export default defineHandler<Input>({
  slug: 'csv-to-json-converter',
  description:
    'Convert CSV text to JSON: rows as objects keyed by the header row (or as arrays), any delimiter or auto-detection, RFC 4180 quoting, optional number/boolean/null inference.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['csv'],
    properties: {
      csv: {
        type: 'string',
        maxLength: MAX_CSV,
        description: `CSV text, at most ${MAX_CSV} characters and ${MAX_ROWS} data rows (413 beyond). A UTF-8 BOM is ignored.`,
      },
      delimiter: {
        type: 'string',
        minLength: 1,
        maxLength: 4,
        default: ',',
        description:
          'Field separator (1-4 characters). "auto" picks the most frequent of , ; tab | on the first line; "tab" means a tab character.',
      },
      headers: {
        type: 'boolean',
        default: true,
        description: 'First row holds column names: rows become objects. When false, rows are arrays.',
      },
      inferTypes: {
        type: 'boolean',
        default: true,
        description:
          'Turn canonical numbers (no leading zeros, so ids like 007 stay strings) into numbers and true/false into booleans.',
      },
      emptyAsNull: {
        type: 'boolean',
        default: true,
        description: 'Empty cells (and missing trailing cells) become null instead of "".',
      },
      trim: { type: 'boolean', default: false, description: 'Trim whitespace around unquoted values.' },
      skipEmptyLines: { type: 'boolean', default: true, description: 'Ignore blank lines.' },
      quote: { type: 'string', minLength: 1, maxLength: 1, default: '"', description: 'Quote character.' },
    },
  },
  output: {
    contentType: 'application/json',
    description: '{ columns: string[] | null, rows: object[] | array[], rowCount, delimiter }',
    schema: {
      type: 'object',
      properties: {
        columns: { type: ['array', 'null'], items: { type: 'string' } },
        rows: {
          type: 'array',
          description: 'objects keyed by column name (headers: true) or arrays of cells',
          items: {
            type: ['object', 'array'],
            additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
            items: { type: ['string', 'number', 'boolean', 'null'] },
          },
        },
        rowCount: { type: 'integer' },
        delimiter: { type: 'string' },
      },
      required: ['columns', 'rows', 'rowCount', 'delimiter'],
    },
    example: {
      columns: ['name', 'age', 'active'],
      rows: [
        { name: 'Ada', age: 36, active: true },
        { name: 'Linus', age: null, active: false },
      ],
      rowCount: 2,
      delimiter: ',',
    },
  },
  example: {
    csv: 'name,age,active\nAda,36,true\nLinus,,false\n',
    delimiter: ',',
    headers: true,
    inferTypes: true,
    emptyAsNull: true,
    trim: false,
    skipEmptyLines: true,
    quote: '"',
  },
  async run(input) {
    const { parse, CsvError } = await import('csv-parse/sync')
    const delimiter = resolveDelimiter(input.delimiter, input.csv)
    let records: string[][]
    try {
      records = parse(input.csv, {
        delimiter,
        quote: input.quote,
        bom: true,
        trim: input.trim,
        skip_empty_lines: input.skipEmptyLines,
        relax_column_count: true,
        // One extra record (plus the header) tells us the limit was passed without parsing the rest.
        to: MAX_ROWS + (input.headers ? 2 : 1),
      }) as string[][]
    } catch (err) {
      if (err instanceof CsvError) throw new HandlerInputError('csv', `csv could not be parsed: ${err.message}`)
      throw err
    }

    const header = input.headers ? (records.shift() ?? []) : null
    if (records.length > MAX_ROWS) throw new HandlerInputError('csv', `csv has more than ${MAX_ROWS} data rows`, 413)

    const cell = (raw: string | undefined): Cell => {
      if (raw === undefined || raw === '') return input.emptyAsNull ? null : ''
      return input.inferTypes ? infer(raw) : raw
    }
    if (!header) {
      return { body: { columns: null, rows: records.map((r) => r.map(cell)), rowCount: records.length, delimiter } }
    }
    const width = records.reduce((w, r) => Math.max(w, r.length), header.length)
    const columns = columnNames(header, width)
    const rows = records.map((r) => Object.fromEntries(columns.map((name, i) => [name, cell(r[i])])))
    return { body: { columns, rows, rowCount: rows.length, delimiter } }
  },
})

function resolveDelimiter(requested: string, csv: string): string {
  if (requested === 'tab') return '\t'
  if (requested !== 'auto') return requested
  const firstLine = csv.slice(0, csv.search(/\r?\n|$/))
  let best = ','
  let bestCount = 0
  for (const d of AUTO_CANDIDATES) {
    const count = firstLine.split(d).length - 1
    if (count > bestCount) [best, bestCount] = [d, count]
  }
  return best
}

/** Unique, non-empty names: blanks become column_<n>, repeats get _2, _3, ...; rows longer than the header add columns. */
function columnNames(header: string[], width: number): string[] {
  const seen = new Map<string, number>()
  const names: string[] = []
  for (let i = 0; i < width; i++) {
    const base = header[i]?.trim() || `column_${i + 1}`
    const n = (seen.get(base) ?? 0) + 1
    seen.set(base, n)
    names.push(n === 1 ? base : `${base}_${n}`)
  }
  return names
}

const CANONICAL_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/

function infer(raw: string): Cell {
  if (raw === 'true') return true
  if (raw === 'false') return false
  if (CANONICAL_NUMBER.test(raw)) {
    const n = Number(raw)
    // Integers beyond 2^53 would silently lose digits: keep them as text.
    if (Number.isFinite(n) && (!Number.isInteger(n) || Number.isSafeInteger(n))) return n
  }
  return raw
}
