import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import * as ajvFormats from 'ajv-formats'
import type { HandlerModule } from './handler-contract.js'

// ajv-formats is CommonJS; under NodeNext its function is the module's `default`.
const addFormats = ajvFormats.default as unknown as (ajv: Ajv) => Ajv

export interface InputProblem {
  field: string
  message: string
}

/**
 * Compiles a handler's input schema twice: strict for JSON bodies, coercing for query strings.
 * In a query string, a top-level field whose schema is an array or an object may also be given as
 * JSON (`items=[{"id":"a","vector":[1,0]}]`), so every endpoint can be called with GET; a value
 * that is not a JSON array or object is left as it is (`tags=a&tags=b` and `tags=a` still work).
 */
export function compileInputValidator(mod: Pick<HandlerModule, 'inputSchema'>) {
  // A schema with its own `$id` gets instances of its own: one Ajv refuses a second schema of that id.
  const { strict, coercing } = hasId(mod.inputSchema) ? newCompilers() : (shared ??= newCompilers())
  const body: ValidateFunction = strict.compile(mod.inputSchema)
  const query: ValidateFunction = coercing.compile(mod.inputSchema)
  const jsonFields = structuredFields(mod.inputSchema)
  return {
    /**
     * Validates (and fills defaults into) `input` in place.
     * @returns null when valid, else the first problem with the field named
     */
    validate(input: unknown, from: 'query' | 'body'): InputProblem | null {
      const fn = from === 'query' ? query : body
      if (from === 'query' && jsonFields.size > 0) parseJsonFields(input, jsonFields)
      if (fn(input)) return null
      return describe(fn.errors?.[0])
    },
  }
}

/**
 * The two Ajv instances every handler's schemas compile on. An instance with its formats costs
 * about 9 ms of CPU to make, and one per schema was 1.8 s for the 102 handlers, paid again by every
 * process that loads the registry (each proxy, each test file with a platform); a shared instance
 * also hands back the compiled function when the same schema object is compiled again.
 */
let shared: { strict: Ajv; coercing: Ajv } | undefined

function newCompilers(): { strict: Ajv; coercing: Ajv } {
  const strict = new Ajv({ allErrors: false, useDefaults: true, coerceTypes: false, strict: false })
  const coercing = new Ajv({ allErrors: false, useDefaults: true, coerceTypes: 'array', strict: false })
  addFormats(strict)
  addFormats(coercing)
  return { strict, coercing }
}

function hasId(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && ('$id' in schema || 'id' in schema)
}

/** top-level fields whose schema type is array or object, with that type */
function structuredFields(schema: unknown): Map<string, 'array' | 'object'> {
  const out = new Map<string, 'array' | 'object'>()
  const props = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {}
  for (const [name, sub] of Object.entries(props)) {
    const types = Array.isArray(sub?.type) ? sub.type : [sub?.type]
    if (types.includes('array')) out.set(name, 'array')
    else if (types.includes('object')) out.set(name, 'object')
  }
  return out
}

function parseJsonFields(input: unknown, fields: Map<string, 'array' | 'object'>) {
  if (input === null || typeof input !== 'object') return
  const record = input as Record<string, unknown>
  for (const [name, type] of fields) {
    const value = record[name]
    if (typeof value !== 'string') continue
    const first = value.trimStart()[0]
    if (first !== (type === 'array' ? '[' : '{')) continue
    try {
      const parsed: unknown = JSON.parse(value)
      if (
        type === 'array'
          ? Array.isArray(parsed)
          : parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      )
        record[name] = parsed
    } catch {
      // not JSON: validated as the string it is
    }
  }
}

function describe(err: ErrorObject | undefined): InputProblem {
  if (!err) return { field: '(input)', message: 'input is invalid' }
  const path = err.instancePath.replace(/^\//, '').replace(/\//g, '.')
  if (err.keyword === 'required') {
    const missing = (err.params as { missingProperty: string }).missingProperty
    return { field: path ? `${path}.${missing}` : missing, message: `${path ? `${path}.` : ''}${missing} is required` }
  }
  if (err.keyword === 'additionalProperties') {
    const extra = (err.params as { additionalProperty: string }).additionalProperty
    return { field: path ? `${path}.${extra}` : extra, message: `unknown field ${extra}` }
  }
  const field = path || '(input)'
  return { field, message: `${field} ${err.message ?? 'is invalid'}` }
}
