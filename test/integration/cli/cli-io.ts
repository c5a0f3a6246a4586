/** A captured Io for runCli in the CLI tests: output kept, an environment and a temporary home. */
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { runCli, type Io } from '../../../src/cli/main.js'

export function captureIo(
  env: Record<string, string | undefined>,
  extra: Partial<Io> = {},
): { io: Io; out: () => string; err: () => string; json: () => any } {
  const out: Buffer[] = []
  const err: string[] = []
  const io: Io = {
    stdout: (c) => out.push(Buffer.from(c)),
    stderr: (l) => err.push(l),
    env,
    home: mkdtempSync(path.join(os.tmpdir(), 'tg-cli-')),
    ...extra,
  }
  const text = () => Buffer.concat(out).toString()
  return { io, out: text, err: () => err.join(''), json: () => JSON.parse(text()) }
}

/**
 * One user's terminal: a home of its own, commands run in turn with `env` (plus `extra`), each
 * answering its exit code and what it printed; `stdin` is what the command may read from input.
 */
export function terminal(env: Record<string, string | undefined> = {}) {
  const home = mkdtempSync(path.join(os.tmpdir(), 'tg-cli-term-'))
  const run = async (args: string[], o: { env?: Record<string, string | undefined>; stdin?: string } = {}) => {
    const out: Buffer[] = []
    const err: string[] = []
    const io: Io = {
      stdout: (c) => out.push(Buffer.from(c)),
      stderr: (l) => err.push(l),
      env: { ...env, ...o.env },
      home,
      hostname: 'testbox',
      progressAfterMs: 0,
      readStdin: o.stdin === undefined ? undefined : async () => o.stdin!,
    }
    const code = await runCli(args, io)
    const text = Buffer.concat(out).toString()
    return { code, out: text, err: err.join(''), json: () => JSON.parse(text) }
  }
  return { run, home }
}
