/**
 * How a command answers. Without --json: the result as text on stdout, notes and errors on stderr
 * for a person. With --json: one JSON document on stdout and nothing else there, the result or
 * `{"error": {code, message, status, to_fix, exit_code}}`; stderr stays quiet (a terminal may
 * show progress). `tollgate fetch` keeps the response body on stdout, so its receipt and errors go
 * to stderr, as one JSON line each under --json.
 */
import { ApiError, CliError, redactSecrets, UnreachableError, UsageError } from './errors.js'
import { EXIT, type ExitCode } from './exit-codes.js'
import type { Io } from './io.js'
import { nextStep } from './next-step.js'
import { startProgress, type Progress } from './progress.js'

export class Output {
  constructor(
    readonly io: Io,
    readonly json: boolean,
    /** where --json errors go: stdout, or stderr for fetch (whose stdout is the body) */
    private readonly errorStream: 'stdout' | 'stderr' = 'stdout',
  ) {}

  /** The command's result: `value` as JSON with --json, otherwise `human` (lines) on stdout. */
  result(value: unknown, human: string | string[] | (() => string | string[])): void {
    if (this.json) {
      this.io.stdout(JSON.stringify(value, null, 2) + '\n')
      return
    }
    const h = typeof human === 'function' ? human() : human
    const text = Array.isArray(h) ? h.join('\n') : h
    if (text !== '') this.io.stdout(text.endsWith('\n') ? text : text + '\n')
  }

  /** A remark for a person on stderr (what was done, what to try next); silent under --json. */
  note(text: string): void {
    if (!this.json) this.io.stderr(text.endsWith('\n') ? text : text + '\n')
  }

  progress(label: string): Progress {
    return startProgress(this.io, label, { json: this.json })
  }

  /** Renders any error a command threw, and answers its exit code. */
  error(err: unknown): ExitCode {
    const e = describe(err)
    if (this.json) {
      const doc = {
        error: {
          code: e.code,
          message: redactSecrets(e.message),
          ...(e.status ? { status: e.status } : {}),
          ...(e.details && Object.keys(e.details).length ? { details: e.details } : {}),
          ...(e.toFix ? { to_fix: redactSecrets(e.toFix) } : {}),
          exit_code: e.exit,
        },
      }
      if (this.errorStream === 'stdout') this.io.stdout(JSON.stringify(doc, null, 2) + '\n')
      else this.io.stderr(JSON.stringify(doc) + '\n')
      return e.exit
    }
    this.io.stderr(`${redactSecrets(e.human)}\n`)
    if (e.toFix) this.io.stderr(`  to fix: ${redactSecrets(e.toFix)}\n`)
    return e.exit
  }
}

interface Described {
  exit: ExitCode
  code: string
  message: string
  human: string
  status?: number
  details?: Record<string, unknown>
  toFix?: string
}

function describe(err: unknown): Described {
  if (err instanceof UsageError)
    return { exit: EXIT.usage, code: 'usage', message: err.message, human: err.message, toFix: err.toFix }
  if (err instanceof UnreachableError)
    return { exit: EXIT.error, code: 'unreachable', message: err.message, human: `error: ${err.message}` }
  if (err instanceof ApiError) {
    return {
      exit: EXIT.http,
      code: err.code,
      message: err.message,
      human: `error: ${err.request}: HTTP ${err.status} ${err.code}: ${err.message}${Object.keys(err.details).length ? `\n  ${JSON.stringify(err.details)}` : ''}`,
      status: err.status,
      details: err.details,
      toFix: nextStep(err.code, err.credential, err.source, err.details),
    }
  }
  if (err instanceof CliError)
    return {
      exit: err.exit,
      code: err.code,
      message: err.message,
      human: err.human ?? `error: ${err.message}`,
      details: err.details,
      toFix: err.toFix,
    }
  const message = err instanceof Error ? err.message : String(err)
  return { exit: EXIT.error, code: 'error', message, human: `error: ${message}` }
}
