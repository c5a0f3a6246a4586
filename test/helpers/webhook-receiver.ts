import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface Received {
  headers: IncomingHttpHeaders
  raw: string
  body: { id: string; type: string; created: number; data: Record<string, unknown> }
  at: number
}

/**
 * A local webhook receiver: records every POST (raw body and headers) and answers with the status
 * `answer()` gives (200 unless changed), so a test can make it fail for a while.
 */
export async function startReceiver(t: Teardown) {
  const received: Received[] = []
  let answer: () => number = () => 200
  let delayMs = 0
  let held: (() => void)[] | null = null
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      let body: Received['body']
      try {
        body = JSON.parse(raw) as Received['body']
      } catch {
        body = { id: '', type: '', created: 0, data: {} }
      }
      received.push({ headers: req.headers, raw, body, at: Date.now() })
      const status = answer()
      const respond = () => setTimeout(() => res.writeHead(status).end('ok'), delayMs)
      if (held) held.push(respond)
      else respond()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    answerWith(fn: () => number) {
      answer = fn
    },
    /** answer this long after the body arrived (a slow receiver: POSTs stay in flight) */
    delay(ms: number) {
      delayMs = ms
    },
    /** answer nothing until `release()`: every POST that arrives meanwhile stays in flight, whatever the machine's speed */
    hold() {
      held ??= []
    },
    release() {
      const waiting = held ?? []
      held = null
      for (const respond of waiting) respond()
    },
  }
}

/** An independent check of the signature scheme (not the client's helper): HMAC-SHA256 hex over `<t>.<raw>`. */
export function signatureValid(header: string | undefined, raw: string, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '')
  if (!m) return false
  const want = createHmac('sha256', secret).update(`${m[1]}.${raw}`).digest()
  return timingSafeEqual(want, Buffer.from(m[2]!, 'hex'))
}
