import Fastify from 'fastify'
import { chatCompletion, providerStandIn } from './llm-stand-in.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * A seller upstream that reports its charge as the `upto` scheme reads it: `?charge=N` answers with
 * `X-Tollgate-Charge: N`, `?charge=fail` answers 500, no `charge` reports nothing. With `gate`,
 * `?gate=1` waits for it before answering. Returns the URL of its `/api/metered` path.
 */
export async function meteredUpstream(t: Teardown, gate?: () => Promise<void>): Promise<string> {
  const upstream = Fastify()
  upstream.get('/api/*', async (req, reply) => {
    const q = new URL(req.url, 'http://x').searchParams
    if (gate && q.get('gate') === '1') await gate()
    const charge = q.get('charge')
    if (charge === 'fail') return reply.code(500).send({ upstream: 'broken' })
    if (charge !== null) reply.header('x-tollgate-charge', charge)
    return { upstream: 'ok' }
  })
  await upstream.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => upstream.close())
  return `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}/api/metered`
}

/** The language-model provider stand-in: every answer is a summary that used 400 tokens (300 + 100). */
export function usageReportingLlm(t: Teardown) {
  return providerStandIn(t, () => ({
    json: chatCompletion(
      { summary: 'A short summary.', keyPoints: ['one point'] },
      { usage: { prompt_tokens: 300, completion_tokens: 100, total_tokens: 400 } },
    ),
  }))
}
