import { createServer, type IncomingHttpHeaders } from 'node:http'

/** One request as a stand-in provider received it. */
export interface Received {
  method: string
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  body: string
  /** the body parsed as JSON, when it is */
  json: any
}

/** What a route answers: JSON (`json`) or raw text (`text`), with a status (default 200). */
export interface Answer {
  status?: number
  json?: unknown
  text?: string
  headers?: Record<string, string>
}

/**
 * A local HTTP stand-in for outside providers (127.0.0.1, a free port), closed at teardown.
 * `route` answers each request in the provider's documented shape; `received` lists what the
 * handler sent, so tests can check path, query, headers and body.
 */
export async function providerStandIn(t: { teardown(fn: () => unknown): void }, route: (req: Received) => Answer | Promise<Answer>) {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://stand-in')
      const body = Buffer.concat(chunks).toString('utf8')
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const r: Received = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body, json }
      received.push(r)
      Promise.resolve(route(r)).then(
        (a) => {
          res.statusCode = a.status ?? 200
          for (const [k, v] of Object.entries(a.headers ?? {})) res.setHeader(k, v)
          if (a.json !== undefined) {
            if (!res.hasHeader('content-type')) res.setHeader('content-type', 'application/json')
            res.end(JSON.stringify(a.json))
          } else res.end(a.text ?? '')
        },
        () => {
          res.statusCode = 500
          res.end('stand-in route failed')
        },
      )
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections()
    server.close(() => r())
  }))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received }
}

/**
 * A chat.completion object as the OpenAI Chat Completions API documents it
 * (https://platform.openai.com/docs/api-reference/chat/object); `content` objects are sent as
 * their JSON text, the way a model in JSON mode answers.
 */
export function chatCompletion(content: unknown, o: { model?: string; finishReason?: string; usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null; refusal?: string } = {}) {
  return {
    id: 'chatcmpl-standin123',
    object: 'chat.completion',
    created: 1_763_900_000,
    model: o.model ?? 'gpt-4o-mini-2024-07-18',
    system_fingerprint: 'fp_standin',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: o.refusal ? null : typeof content === 'string' ? content : JSON.stringify(content), refusal: o.refusal ?? null },
        logprobs: null,
        finish_reason: o.finishReason ?? 'stop',
      },
    ],
    ...(o.usage === null ? {} : { usage: o.usage ?? { prompt_tokens: 321, completion_tokens: 54, total_tokens: 375 } }),
  }
}

/** The buyer data the handler put between BEGIN_DATA and END_DATA in its user message. */
export function sentData(req: Received): any {
  const user = (req.json?.messages ?? []).find((m: { role: string }) => m.role === 'user')?.content as string
  const m = /^BEGIN_DATA\n([\s\S]*)\nEND_DATA$/.exec(user ?? '')
  return m ? JSON.parse(m[1]!) : undefined
}

/** The system prompt the handler sent. */
export function sentSystem(req: Received): string {
  return (req.json?.messages ?? []).find((m: { role: string }) => m.role === 'system')?.content ?? ''
}

/** Provider settings pointing the language-model endpoints at a stand-in. */
export const llmSettings = (url: string) => ({ LLM_API_URL: `${url}/v1`, LLM_API_KEY: 'sk-test-llm-key' })
