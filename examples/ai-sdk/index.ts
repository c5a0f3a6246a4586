/**
 * The Vercel AI SDK paying a Tollgate endpoint through the `paid_fetch` tool.
 *
 *   TOLLGATE_AGENT_KEY=ak_test_… node --import tsx examples/ai-sdk/index.ts
 *
 * Without OPENAI_API_KEY (or without @ai-sdk/openai installed) a scripted model stands in for the
 * LLM: it asks for the paid call, then reports what the tool returned. Outside this repository,
 * import from 'tollgate/client/ai-sdk' instead.
 */
import { generateText, stepCountIs, type LanguageModel } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { tollgateTools } from '../../src/client/frameworks/ai-sdk.js'

const apiUrl = process.env.TOLLGATE_URL ?? 'http://localhost:4020'
const agentKey = process.env.TOLLGATE_AGENT_KEY
const paidUrl = process.env.TOLLGATE_PAID_URL ?? 'http://localhost:4021/tollgate/toolbox/uuid-generator'
if (!agentKey) {
  console.error('set TOLLGATE_AGENT_KEY to an agent key (npx tollgate setup prints one; examples/README.md)')
  process.exit(1)
}

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
}

/** No LLM: call paid_fetch once, then say what it returned. */
function scriptedModel(): LanguageModel {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const result = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).find((c) => c.type === 'tool-result')
      if (!result)
        return {
          content: [
            {
              type: 'tool-call',
              toolCallId: 'call_1',
              toolName: 'paid_fetch',
              input: JSON.stringify({ url: paidUrl }),
            },
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        }
      const out = result.output.type === 'json' ? (result.output.value as Record<string, unknown>) : {}
      const text = out.refused
        ? `The call was refused: ${(out.refused as { message: string }).message}`
        : `Paid ${out.cost_usdc} USDC (payment ${out.payment_id}); HTTP ${out.status}: ${out.body}`
      return {
        content: [{ type: 'text', text }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      }
    },
  })
}

async function pickModel(): Promise<LanguageModel> {
  if (!process.env.OPENAI_API_KEY) {
    console.log('no OPENAI_API_KEY: using a scripted model (no LLM is called)')
    return scriptedModel()
  }
  const provider = '@ai-sdk/openai' // optional: npm install @ai-sdk/openai
  try {
    const { openai } = (await import(provider)) as { openai: (id: string) => LanguageModel }
    console.log('using OpenAI through @ai-sdk/openai')
    return openai(process.env.OPENAI_MODEL ?? 'gpt-4o-mini')
  } catch {
    console.log('OPENAI_API_KEY is set but @ai-sdk/openai is not installed: using a scripted model (no LLM is called)')
    return scriptedModel()
  }
}

// maxPerCall and budget are this client's own limits (atomic USDC: 10000 = 0.01), on top of the agent's caps
const tools = tollgateTools({ baseUrl: apiUrl, agentKey, maxPerCall: 10_000n, budget: 50_000n })
const result = await generateText({
  model: await pickModel(),
  tools,
  stopWhen: stepCountIs(5),
  prompt: `Call ${paidUrl} with paid_fetch and tell me what it returned and what it cost.`,
})
for (const step of result.steps)
  for (const r of step.toolResults) console.log(`tool ${r.toolName}:`, JSON.stringify(r.output))
console.log(result.text)
