/**
 * What every command gets: the io, the output (human or --json), and the settings and API client
 * of the context in use, resolved on first use (so --help never reads the config file).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { createApi, type Api } from './api-client.js'
import { UsageError } from './errors.js'
import type { Io } from './io.js'
import { Output } from './output.js'
import { resolveSettings, type Settings } from './settings.js'

export interface Command {
  io: Io
  out: Output
  /** --context NAME, when given */
  contextFlag: string | undefined
  settings(opts?: { allowNew?: boolean }): Settings
  api(): Api
}

export function createCommand(
  io: Io,
  opts: { json: boolean; contextFlag: string | undefined; errorStream?: 'stdout' | 'stderr' },
): Command {
  let settings: Settings | undefined
  let api: Api | undefined
  const cmd: Command = {
    io,
    out: new Output(io, opts.json, opts.errorStream),
    contextFlag: opts.contextFlag,
    settings: (o) => (settings ??= resolveSettings(io, opts.contextFlag, o)),
    api: () => (api ??= createApi(io, cmd.settings())),
  }
  return cmd
}

type Options = NonNullable<ParseArgsConfig['options']>
type Common = { json: { type: 'boolean' }; help: { type: 'boolean'; short: 'h' } }
type Parsed<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; allowPositionals: boolean; strict: true; options: Common & O }>
>

/**
 * parseArgs with the options every command has (`--json`, `-h/--help`; a command's own `--json`,
 * fetch's request body, wins); an unknown option or a missing value is a UsageError followed by `usage`.
 */
export function parseOptions<O extends Options>(
  args: string[],
  options: O,
  usage: string,
  opts: { positionals?: boolean } = {},
): Parsed<O> {
  try {
    return parseArgs({
      args,
      allowPositionals: opts.positionals ?? false,
      strict: true,
      options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, ...options } as Common & O,
    })
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${usage}`)
  }
}

/** `--help` and `-h` anywhere among a command's words (before options are parsed). */
export function wantsHelp(args: string[]): boolean {
  return args.includes('--help') || args.includes('-h')
}
