/**
 * The errors a command throws; main.ts renders each in one place (human or --json) with its exit
 * code. Messages may quote what they refused, so every rendered message goes through redactSecrets.
 */
import { EXIT, type ExitCode } from './exit-codes.js'

/** Bad command line or configuration: exit 1, the message (and usage) as it is. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** what to do about it, when the message alone does not say */
    readonly toFix?: string,
  ) {
    super(message)
    this.name = 'UsageError'
  }
}

/** A host that did not answer (refused, not found, timed out): which one, and why. Exit 1. */
export class UnreachableError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UnreachableError'
  }
}

/** Which credential a request to the Tollgate API carried. */
export type Credential = 'api_key' | 'agent_key' | 'none'

/** The Tollgate API answered >= 400: `{statusCode, code, error, message, ...details}`. Exit 3. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown>,
    readonly credential: Credential,
    /** METHOD path, for the message */
    readonly request: string,
    /** where the credential came from (TOLLGATE_AGENT_KEY, a context), for the next step */
    readonly source = '',
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/** Anything else a command wants to stop with: its exit code, a machine code, what to do next. */
export class CliError extends Error {
  readonly exit: ExitCode
  readonly code: string
  readonly toFix?: string
  readonly details?: Record<string, unknown>
  /** the human rendering, when it is more than `error: <message>` */
  readonly human?: string
  constructor(
    message: string,
    opts: { exit?: ExitCode; code?: string; toFix?: string; details?: Record<string, unknown>; human?: string } = {},
  ) {
    super(message)
    this.name = 'CliError'
    this.exit = opts.exit ?? EXIT.error
    this.code = opts.code ?? 'error'
    this.toFix = opts.toFix
    this.details = opts.details
    this.human = opts.human
  }
}

/** A message with any key or secret in it cut to its prefix: messages may quote what they refused. */
export function redactSecrets(message: string): string {
  return message.replace(/\b((?:ak|sk)_(?:test|live)_|tgs_)[A-Za-z0-9]+/g, '$1…')
}
