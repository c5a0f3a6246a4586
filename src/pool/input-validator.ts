import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import * as ajvFormats from 'ajv-formats'
import type { HandlerModule } from './handler-contract.js'

// ajv-formats is CommonJS; under NodeNext its function is the module's `default`.
const addFormats = ajvFormats.default as unknown as (ajv: Ajv) => Ajv

export interface InputProblem {
  field: string
  message: string
}

/** Compiles a handler's input schema twice: strict for JSON bodies, coercing for query strings. */
export function compileInputValidator(mod: Pick<HandlerModule, 'inputSchema'>) {
  const strict = new Ajv({ allErrors: false, useDefaults: true, coerceTypes: false, strict: false })
  const coercing = new Ajv({ allErrors: false, useDefaults: true, coerceTypes: 'array', strict: false })
  addFormats(strict)
  addFormats(coercing)
  const body: ValidateFunction = strict.compile(mod.inputSchema)
  const query: ValidateFunction = coercing.compile(mod.inputSchema)
  return {
    /**
     * Validates (and fills defaults into) `input` in place.
     * @returns null when valid, else the first problem with the field named
     */
    validate(input: unknown, from: 'query' | 'body'): InputProblem | null {
      const fn = from === 'query' ? query : body
      if (fn(input)) return null
      return describe(fn.errors?.[0])
    },
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
