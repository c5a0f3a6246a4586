/**
 * The OpenAI Agents SDK paying a Tollgate endpoint through the `paid_fetch` tool.
 *
 *   TOLLGATE_AGENT_KEY=ak_test_… node --import tsx examples/openai-agents/index.ts
 *
 * Without OPENAI_API_KEY a scripted Model (the SDK's Model interface, no network) stands in for
 * the LLM: it asks for the paid call, then reports what the tool returned. With it, the SDK's
 * default OpenAI model runs the agent. Outside this repository, import from
 * 'tollgate/client/openai-agents' instead.
 */
import { Agent, Runner, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents'
import { tollgateAgentTools } from '../../src/client/frameworks/openai-agents.js'

const apiUrl = process.env.TOLLGATE_URL ?? 'http://localhost:4020'
const agentKey = process.env.TOLLGATE_AGENT_KEY
const paidUrl = process.env.TOLLGATE_PAID_URL ?? 'http://localhost:4021/tollgate/toolbox/uuid-generator'
if (!agentKey) {
  console.error('set TOLLGATE_AGENT_KEY to an agent key (npx tollgate setup prints one; examples/README.md)')
  process.exit(1)
}

/** No LLM: call paid_fetch once, then say what it returned. */
class ScriptedModel implements Model {
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items = Array.isArray(request.input) ? request.input : []
    const result = items.find((i) => i.type === 'function_call_result')
    if (!result) {
      const args = JSON.stringify({ url: paidUrl, method: null, body: null })
      return {
        usage: new Usage(),
        output: [{ type: 'function_call', callId: 'call_1', name: 'paid_fetch', arguments: args, status: 'completed' }],
      }
    }
    const o = result.output
    const raw = typeof o === 'string' ? o : 'text' in o && typeof o.text === 'string' ? o.text : '{}'
    const out = JSON.parse(raw) as Record<string, unknown>
    const text = out.refused
      ? `The call was refused: ${(out.refused as { message: string }).message}`
      : `Paid ${out.cost_usdc} USDC (payment ${out.payment_id}); HTTP ${out.status}: ${out.body}`
    return {
      usage: new Usage(),
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
    }
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the scripted model does not stream')
  }
}

const real = Boolean(process.env.OPENAI_API_KEY)
console.log(real ? 'using OpenAI (OPENAI_API_KEY)' : 'no OPENAI_API_KEY: using a scripted model (no LLM is called)')
const agent = new Agent({
  name: 'buyer',
  instructions: 'Use paid_fetch for the URL asked for; report what it returned and what it cost in USDC.',
  // maxPerCall and budget are this client's own limits (atomic USDC: 10000 = 0.01), on top of the agent's caps
  tools: tollgateAgentTools({ baseUrl: apiUrl, agentKey, maxPerCall: 10_000n, budget: 50_000n }),
  ...(real ? { model: process.env.OPENAI_MODEL ?? 'gpt-4o-mini' } : { model: new ScriptedModel() }),
})
const result = await new Runner({ tracingDisabled: !real }).run(agent, `Call ${paidUrl} and tell me what it cost.`)
for (const item of result.newItems)
  if (item.type === 'tool_call_output_item') console.log('tool paid_fetch:', JSON.stringify(item.output))
console.log(result.finalOutput)
