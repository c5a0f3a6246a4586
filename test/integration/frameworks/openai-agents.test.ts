import t from 'tap'
import { Agent, Runner, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents'
import { tollgateAgentTools } from '../../../src/client/frameworks/openai-agents.js'
import type { PaidFetchResult } from '../../../src/client/frameworks/core.js'
import { frameworkPlatform } from './platform.js'

/**
 * A scripted Model (no network): first asks for paid_fetch on `url`, then answers with the
 * tool's output it was given, so the run's final output is what the tool returned.
 */
class ScriptedModel implements Model {
  constructor(private readonly url: string) {}
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items = Array.isArray(request.input) ? request.input : []
    const output = items.find((i) => i.type === 'function_call_result')
    if (!output)
      return {
        usage: new Usage(),
        output: [
          {
            type: 'function_call',
            callId: 'call_1',
            name: 'paid_fetch',
            arguments: JSON.stringify({ url: this.url, method: null, body: null }),
            status: 'completed',
          },
        ],
      }
    const o = output.output
    const text = typeof o === 'string' ? o : 'text' in o && typeof o.text === 'string' ? o.text : JSON.stringify(o)
    return {
      usage: new Usage(),
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
    }
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not scripted')
  }
}

const runner = new Runner({ tracingDisabled: true })
async function runScripted(tools: ReturnType<typeof tollgateAgentTools>, url: string): Promise<PaidFetchResult> {
  const agent = new Agent({ name: 'buyer', instructions: 'fetch what is asked', model: new ScriptedModel(url), tools })
  const r = await runner.run(agent, `fetch ${url}`)
  return JSON.parse(String(r.finalOutput)) as PaidFetchResult
}

t.test('OpenAI Agents: a scripted model calls paid_fetch, which pays and returns the cost; caps refuse', async (t) => {
  const { p, echo, agentPayments, sellerPayments } = await frameworkPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const tools = tollgateAgentTools({ baseUrl: p.webUrl, agentKey: agent.key, budget: 1000n })
  t.same(
    tools.map((x) => x.name),
    ['paid_fetch', 'search_endpoints'],
  )

  const out = await runScripted(tools, echo('oa'))
  t.match(out, { status: 200, paid: true, cost_usdc: '0.001', session_spent_usdc: '0.001' })
  t.same(JSON.parse(out.body), { echo: { msg: 'oa' } })
  t.same(
    (await agentPayments(agent.id)).map((a) => a.id),
    [out.payment_id],
  )
  t.equal(await sellerPayments(), 1)

  // the budget of 0.001 USDC is spent: the next call is refused before anything is signed
  const refused = await runScripted(tools, echo('again'))
  t.match(refused, {
    paid: false,
    cost_usdc: '0',
    session_spent_usdc: '0.001',
    refused: {
      code: 'spend_cap_exceeded',
      message:
        "paying 0.001 USDC would pass this client's budget of 0.001 USDC (0.001 USDC paid, 0 USDC left); nothing was paid",
    },
  })
  t.equal((await agentPayments(agent.id)).length, 1)
  t.equal(await sellerPayments(), 1)
})
