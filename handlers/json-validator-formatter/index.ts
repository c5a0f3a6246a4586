import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_JSON = 1_000_000
const MAX_SCHEMA = 100_000
const MAX_DEPTH = 1_000
const MAX_ERRORS = 100

interface Input {
  json: string
  format: 'pretty' | 'minify'
  indent: number
  useTabs: boolean
  sortKeys: boolean
  schema?: Record<string, unknown> | boolean | string
}

interface SchemaProblem {
  path: string
  keyword: string
  message: string
  params: Record<string, unknown>
}

export default defineHandler<Input>({
  slug: 'json-validator-formatter',
  description:
    'Check that text is valid JSON (with line and column of the first syntax error), pretty-print or minify it, sort keys, and optionally validate it against a JSON Schema (draft-07, 2019-09 or 2020-12) with Ajv.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['json'],
    properties: {
      json: {
        type: 'string',
        maxLength: MAX_JSON,
        description: `JSON text to check, at most ${MAX_JSON} characters and ${MAX_DEPTH} levels of nesting. Numbers are read as IEEE-754 doubles.`,
      },
      format: { type: 'string', enum: ['pretty', 'minify'], default: 'pretty', description: 'Output layout.' },
      indent: {
        type: 'integer',
        minimum: 1,
        maximum: 8,
        default: 2,
        description: 'Spaces per level when pretty-printing.',
      },
      useTabs: { type: 'boolean', default: false, description: 'Indent with one tab per level instead of spaces.' },
      sortKeys: {
        type: 'boolean',
        default: false,
        description: 'Sort object keys alphabetically (code-unit order) at every level; array order is kept.',
      },
      schema: {
        type: ['object', 'boolean', 'string'],
        description: `Optional JSON Schema (object, or its JSON text for GET; at most ${MAX_SCHEMA} characters serialized). Draft picked from $schema (2020-12, 2019-09, else draft-07); formats from ajv-formats; "pattern" runs on the linear-time RE2 engine, so lookarounds and backreferences are rejected; remote $refs are not fetched.`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ valid, error?: { message, position, line, column }, formatted?, type?, depth?, schemaValid?, schemaErrors?: [{ path, keyword, message, params }] }',
    schema: {
      type: 'object',
      properties: {
        valid: { type: 'boolean' },
        formatted: { type: 'string' },
        type: { type: 'string' },
        depth: { type: 'number' },
        schemaValid: { type: 'boolean' },
        schemaErrors: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              path: { type: 'string' },
              keyword: { type: 'string' },
              message: { type: 'string' },
              params: { type: 'object', description: "the failed keyword's parameters, as Ajv reports them" },
            },
            required: ['path', 'keyword', 'message', 'params'],
          },
        },
        error: {
          type: 'object',
          properties: {
            message: { type: 'string' },
            position: { type: 'number' },
            line: { type: 'number' },
            column: { type: 'number' },
          },
          required: ['message', 'position', 'line', 'column'],
        },
      },
      required: ['valid'],
    },
    example: {
      valid: true,
      formatted: '{\n  "a": "x",\n  "b": [\n    1,\n    2,\n    {\n      "c": null\n    }\n  ]\n}',
      type: 'object',
      depth: 3,
      schemaValid: true,
      schemaErrors: [],
    },
  },
  example: {
    json: '{"b":[1,2,{"c":null}],"a":"x"}',
    format: 'pretty',
    indent: 2,
    useTabs: false,
    sortKeys: true,
    schema: { type: 'object', required: ['a'], properties: { a: { type: 'string' } } },
  },
  async run(input) {
    let value: unknown
    try {
      value = JSON.parse(input.json)
    } catch (err) {
      return { body: { valid: false, error: syntaxError(input.json, (err as Error).message) } }
    }
    const depth = nestingDepth(value)
    if (depth > MAX_DEPTH) throw new HandlerInputError('json', `json nests deeper than ${MAX_DEPTH} levels`, 413)

    const ordered = input.sortKeys ? sortKeys(value) : value
    const space = input.format === 'minify' ? undefined : input.useTabs ? '\t' : input.indent
    const body: Record<string, unknown> = {
      valid: true,
      formatted: JSON.stringify(ordered, null, space),
      type: value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value,
      depth,
    }
    if (input.schema !== undefined) {
      const problems = await validateAgainst(readSchema(input.schema), value)
      body.schemaValid = problems.length === 0
      body.schemaErrors = problems.slice(0, MAX_ERRORS)
      if (problems.length > MAX_ERRORS) body.schemaErrorsTruncated = true
    }
    return { body }
  },
})

/** V8 reports "... at position N" (Node 20) and sometimes "(line L column C)"; compute both from N ourselves. */
function syntaxError(text: string, message: string) {
  const m = /at position (\d+)/.exec(message)
  const position = m ? Number(m[1]) : text.length
  const before = text.slice(0, position)
  const line = before.split('\n').length
  const column = position - before.lastIndexOf('\n')
  return { message: message.replace(/\s*\(line \d+ column \d+\)/, ''), position, line, column }
}

/** Iterative, so hostile nesting cannot overflow the stack before we refuse it. */
function nestingDepth(root: unknown): number {
  let max = 0
  const stack: [unknown, number][] = [[root, 0]]
  while (stack.length) {
    const [v, d] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    const level = d + 1
    if (level > max) max = level
    if (max > MAX_DEPTH) return max
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, level])
  }
  return max
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys)
  if (v === null || typeof v !== 'object') return v
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k])
  return out
}

function readSchema(schema: NonNullable<Input['schema']>): Record<string, unknown> | boolean {
  let parsed: unknown = schema
  if (typeof schema === 'string') {
    if (schema.length > MAX_SCHEMA)
      throw new HandlerInputError('schema', `schema is longer than ${MAX_SCHEMA} characters`, 413)
    try {
      parsed = JSON.parse(schema)
    } catch (err) {
      throw new HandlerInputError('schema', `schema is not valid JSON: ${(err as Error).message}`)
    }
  } else if (JSON.stringify(schema).length > MAX_SCHEMA) {
    throw new HandlerInputError('schema', `schema is longer than ${MAX_SCHEMA} characters`, 413)
  }
  if (typeof parsed !== 'boolean' && (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))) {
    throw new HandlerInputError('schema', 'schema must be a JSON object or boolean')
  }
  if (typeof parsed === 'object' && nestingDepth(parsed) > MAX_DEPTH)
    throw new HandlerInputError('schema', `schema nests deeper than ${MAX_DEPTH} levels`, 413)
  return parsed as Record<string, unknown> | boolean
}

async function validateAgainst(schema: Record<string, unknown> | boolean, value: unknown): Promise<SchemaProblem[]> {
  const [{ Ajv }, { Ajv2019 }, { Ajv2020 }, formats, { RE2JS }] = await Promise.all([
    import('ajv'),
    import('ajv/dist/2019.js'),
    import('ajv/dist/2020.js'),
    import('ajv-formats'),
    import('re2js'),
  ])
  // Schemas come from buyers: run "pattern" on RE2 so a hostile pattern cannot backtrack forever.
  const regExp = Object.assign((pattern: string) => RE2JS.compile(pattern), { code: 're2js' })
  const draft = typeof schema === 'object' && typeof schema.$schema === 'string' ? schema.$schema : ''
  const Engine = draft.includes('2020-12') ? Ajv2020 : draft.includes('2019-09') ? Ajv2019 : Ajv
  const ajv = new Engine({ allErrors: true, strict: false, code: { regExp } })
  ;(formats.default as unknown as (a: typeof ajv) => void)(ajv)

  let validate
  try {
    validate = ajv.compile(schema)
  } catch (err) {
    throw new HandlerInputError('schema', `schema is not a usable JSON Schema: ${(err as Error).message}`)
  }
  if (validate(value)) return []
  return (validate.errors ?? []).map((e) => ({
    path: e.instancePath || '/',
    keyword: e.keyword,
    message: `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`,
    params: e.params as Record<string, unknown>,
  }))
}
