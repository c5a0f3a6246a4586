/**
 * LangChain.js paying a Tollgate endpoint through the `paid_fetch` tool.
 *
 *   TOLLGATE_AGENT_KEY=ak_test_… node --import tsx examples/langchain/index.ts
 *
 * Without OPENAI_API_KEY (or without @langchain/openai installed) a fake chat model from
 * @langchain/core/utils/testing stands in for the LLM: it asks for the paid call once. Outside
 * this repository, import from 'tollgate/client/langchain' instead.
 */
import { AIMessageChunk, HumanMessage, ToolMessage, type AIMessage, type BaseMessage } from '@langchain/core/messages'
import type { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { FakeStreamingChatModel } from '@langchain/core/utils/testing'
import { tollgateLangChainTools } from '../../src/client/frameworks/langchain.js'

const apiUrl = process.env.TOLLGATE_URL ?? 'http://localhost:4020'
const agentKey = process.env.TOLLGATE_AGENT_KEY
const paidUrl = process.env.TOLLGATE_PAID_URL ?? 'http://localhost:4021/tollgate/toolbox/uuid-generator'
if (!agentKey) {
  console.error('set TOLLGATE_AGENT_KEY to an agent key (npx tollgate setup prints one; examples/README.md)')
  process.exit(1)
}

async function pickModel(): Promise<{ model: BaseChatModel; scripted: boolean }> {
  if (process.env.OPENAI_API_KEY) {
    const provider = '@langchain/openai' // optional: npm install @langchain/openai
    try {
      const { ChatOpenAI } = (await import(provider)) as { ChatOpenAI: new (o: { model: string }) => BaseChatModel }
      console.log('using OpenAI through @langchain/openai')
      return { model: new ChatOpenAI({ model: process.env.OPENAI_MODEL ?? 'gpt-4o-mini' }), scripted: false }
    } catch {
      console.log(
        'OPENAI_API_KEY is set but @langchain/openai is not installed: using a scripted model (no LLM is called)',
      )
    }
  } else console.log('no OPENAI_API_KEY: using a scripted model (no LLM is called)')
  const call = { name: 'paid_fetch', args: { url: paidUrl }, id: 'call_1', type: 'tool_call' as const }
  return {
    model: new FakeStreamingChatModel({ chunks: [new AIMessageChunk({ content: '', tool_calls: [call] })] }),
    scripted: true,
  }
}

// maxPerCall and budget are this client's own limits (atomic USDC: 10000 = 0.01), on top of the agent's caps
const tools = tollgateLangChainTools({ baseUrl: apiUrl, agentKey, maxPerCall: 10_000n, budget: 50_000n })
const { model, scripted } = await pickModel()
const withTools = model.bindTools!(tools)
const messages: BaseMessage[] = [
  new HumanMessage(`Call ${paidUrl} with paid_fetch and tell me what it returned and what it cost.`),
]
// the agent loop: run the tools the model asks for until it answers (the scripted model asks once)
for (let turn = 0; turn < 5; turn++) {
  const ai = (await withTools.invoke(messages)) as AIMessage
  messages.push(ai)
  if (!ai.tool_calls?.length || (scripted && turn > 0)) break
  for (const call of ai.tool_calls) {
    const tool = tools.find((t) => t.name === call.name)
    const msg = tool
      ? ((await tool.invoke({ ...call, type: 'tool_call' })) as ToolMessage)
      : new ToolMessage({ tool_call_id: call.id!, content: `no tool ${call.name}` })
    console.log(`tool ${call.name}:`, msg.content)
    messages.push(msg)
  }
  if (scripted) {
    const paid = (messages.at(-1) as ToolMessage).artifact as { cost_usdc?: string; payment_id?: string } | undefined
    console.log(`paid ${paid?.cost_usdc ?? '?'} USDC (payment ${paid?.payment_id ?? 'none'})`)
    break
  }
}
if (!scripted) console.log(String(messages.at(-1)?.content))
