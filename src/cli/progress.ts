/**
 * Progress for waits (a top-up, a settlement, a withdrawal, an upstream test): on a terminal, one
 * line on stderr redrawn in place with a spinner; otherwise plain lines, the first once the wait
 * has lasted `progressAfterMs` (1 s), then one every 10 s. Under --json, only on a terminal (the
 * line is erased when the wait ends), so stderr carries nothing a program must skip.
 */
import type { Io } from './io.js'

export interface Progress {
  /** what is being waited for now, e.g. "balance 0.5 of 1 USDC" */
  update(status: string): void
  /** the wait is over; `line` (human mode) says how it ended */
  done(line?: string): void
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

export function startProgress(io: Io, label: string, opts: { json: boolean }): Progress {
  const tty = Boolean(io.stderrIsTTY)
  const started = Date.now()
  let status = ''
  let shown = false
  let lastPlain = 0
  const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`
  const text = () => `${label}${status ? `: ${status}` : ''} (${elapsed()})`
  if (!tty && opts.json) return { update: () => {}, done: () => {} }
  let frame = 0
  const draw = () => {
    if (tty) {
      io.stderr(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${text()}`)
    } else if (!shown || Date.now() - lastPlain >= 10_000) {
      io.stderr(`${text()}…\n`)
      lastPlain = Date.now()
    }
    shown = true
  }
  let ticker: NodeJS.Timeout | undefined
  const delay = setTimeout(() => {
    draw()
    ticker = setInterval(draw, tty ? 100 : 1000)
    ticker.unref()
  }, io.progressAfterMs ?? 1000)
  delay.unref()
  return {
    update(s) {
      status = s
    },
    done(line) {
      clearTimeout(delay)
      clearInterval(ticker)
      if (tty && shown) io.stderr('\r\x1b[2K')
      if (!opts.json && line) io.stderr(`${line}${shown ? ` (${elapsed()})` : ''}\n`)
    },
  }
}
