/**
 * What a command may touch of the outside world. `processIo()` is the real terminal; tests pass
 * their own (captured output, an environment, a temporary home).
 */
import { stdin } from 'node:process'
import { createInterface } from 'node:readline'
import type { FetchLike } from '../client/wrap-fetch.js'

export interface Io {
  stdout(chunk: string | Uint8Array): void
  stderr(line: string): void
  env: Record<string, string | undefined>
  fetch?: FetchLike
  /** where ~/.config/tollgate/config.json is looked up (default os.homedir()) */
  home?: string
  /** resolves when the user asks to stop (devnet); default SIGINT/SIGTERM */
  untilStopped?: () => Promise<void>
  /** stdout and stderr are the same terminal: a body is ended with a newline so the receipt starts on its own line */
  sharedTerminal?: boolean
  /** stderr is a terminal: progress is one line redrawn in place (otherwise plain lines) */
  stderrIsTTY?: boolean
  /** how long a wait runs before progress is shown (default 1000 ms) */
  progressAfterMs?: number
  /** asks on the terminal (login's email and password); absent when there is none */
  prompt?: (question: string, opts: { secret: boolean }) => Promise<string>
  /** this machine's name, for the names of the keys login and setup create (default os.hostname()) */
  hostname?: string
  /** all of standard input (login --password-stdin) */
  readStdin?: () => Promise<string>
}

export function processIo(): Io {
  return {
    stdout: closable(process.stdout),
    stderr: closable(process.stderr),
    env: process.env,
    sharedTerminal: Boolean(process.stdout.isTTY && process.stderr.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    prompt: stdin.isTTY && process.stderr.isTTY ? terminalPrompt : undefined,
    readStdin: async () => {
      const chunks: Buffer[] = []
      for await (const c of stdin) chunks.push(c as Buffer)
      return Buffer.concat(chunks).toString('utf8')
    },
  }
}

/**
 * Writes to `stream` until its reader goes away (`| head`): the rest is dropped instead of dying
 * on EPIPE with a stack trace, so the command finishes (and the receipt still reaches stderr).
 */
function closable(stream: NodeJS.WriteStream): (chunk: string | Uint8Array) => void {
  let closed = false
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err
    closed = true
  })
  return (chunk) => {
    if (!closed) stream.write(chunk)
  }
}

/** Reads one line from the terminal; a secret is not echoed. */
async function terminalPrompt(question: string, opts: { secret: boolean }): Promise<string> {
  const rl = createInterface({ input: stdin, output: process.stderr, terminal: true })
  if (opts.secret) {
    // readline echoes through _writeToOutput: print the question, then nothing of what is typed
    const r = rl as unknown as { _writeToOutput(s: string): void }
    let asked = false
    r._writeToOutput = (s: string) => {
      if (!asked) {
        process.stderr.write(s)
        asked = true
      }
    }
  }
  try {
    return await new Promise<string>((resolve) => rl.question(question, resolve))
  } finally {
    rl.close()
    if (opts.secret) process.stderr.write('\n')
  }
}
