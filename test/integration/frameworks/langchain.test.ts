import t from 'tap'
import { AIMessageChunk, HumanMessage, type AIMessage, type BaseMessage } from '@langchain/core/messages'
import type { StructuredToolInterface } from '@langchain/core/tools'
import { FakeStreamingChatModel } from '@langchain/core/utils/testing'
import { tollgateLangChainTools } from '../../../src/client/frameworks/langchain.js'
import type { PaidFetchResult } from '../../../src/client/frameworks/core.js'
import { frameworkPlatform } from './platform.js'

/** A fake chat model scripted to call paid_fetch on `url`; the tool calls it asks for are run as an agent loop would. */
async function runScripted(tools: StructuredToolInterface[], url: string): Promise<PaidFetchResult> {
  const model = new FakeStreamingChatModel({
    chunks: [
      new AIMessageChunk({
        content: '',
        tool_calls: [{ name: 'paid_fetch', args: { url }, id: 'call_1', type: 'tool_call' }],
      }),
    ],
  }).bindTools(tools)
  const messages: BaseMessage[] = [new HumanMessage(`fetch ${url}`)]
  const ai = (await model.invoke(messages)) as AIMessage
  const calls = ai.tool_calls ?? []
  if (calls.length !== 1) throw new Error(`expected one tool call, got ${calls.length}`)
  const tool = tools.find((x) => x.name === calls[0]!.name)!
  const msg = await tool.invoke({ ...calls[0]!, type: 'tool_call' })
  // the model reads the JSON text; the structured result rides along as the artifact
  if (JSON.stringify(msg.artifact) !== msg.content) throw new Error('content and artifact differ')
  return msg.artifact as PaidFetchResult
}

t.test('LangChain: a fake chat model calls paid_fetch, which pays and returns the cost; caps refuse', async (t) => {
  const { p, echo, agentPayments, sellerPayments } = await frameworkPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const tools = tollgateLangChainTools({ baseUrl: p.webUrl, agentKey: agent.key })
  t.same(
    tools.map((x) => x.name),
    ['paid_fetch', 'search_endpoints'],
  )

  const out = await runScripted(tools, echo('lc'))
  t.match(out, { status: 200, paid: true, cost_usdc: '0.001', session_spent_usdc: '0.001' })
  t.same(JSON.parse(out.body), { echo: { msg: 'lc' } })
  t.same(
    (await agentPayments(agent.id)).map((a) => a.id),
    [out.payment_id],
    'paid once, under the id returned',
  )
  t.equal(await sellerPayments(), 1)

  // a long answer is cut to maxBodyChars and says so
  const short = tollgateLangChainTools({ baseUrl: p.webUrl, agentKey: agent.key, maxBodyChars: 10 })
  const cut = await runScripted(short, echo('x'.repeat(50)))
  t.match(cut, { paid: true, truncated: true, body: '{"echo":{"' })

  const capped = tollgateLangChainTools({ baseUrl: p.webUrl, agentKey: agent.key, maxPerCall: 999n })
  const refused = await runScripted(capped, echo('no'))
  t.match(refused, {
    paid: false,
    cost_usdc: '0',
    refused: {
      code: 'spend_cap_exceeded',
      message: /above this client's maximum per call of 0\.000999 USDC; nothing was paid/,
    },
  })
  t.equal((await agentPayments(agent.id)).length, 2, 'the refused call signed nothing')
  t.equal(await sellerPayments(), 2)
})
