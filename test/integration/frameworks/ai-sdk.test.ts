import t from 'tap'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { tollgateTools } from '../../../src/client/frameworks/ai-sdk.js'
import type { PaidFetchResult } from '../../../src/client/frameworks/core.js'
import { frameworkPlatform } from './platform.js'

type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
}
const callTool = (name: string, input: unknown, id = 'call_1'): LanguageModelV3GenerateResult => ({
  content: [{ type: 'tool-call', toolCallId: id, toolName: name, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls', raw: undefined },
  usage,
  warnings: [],
})
const say = (text: string): LanguageModelV3GenerateResult => ({
  content: [{ type: 'text', text }],
  finishReason: { unified: 'stop', raw: undefined },
  usage,
  warnings: [],
})
/** A scripted model: calls paid_fetch on each URL in turn, then says it is done. */
const scripted = (...urls: string[]) =>
  new MockLanguageModelV3({
    doGenerate: [...urls.map((url, i) => callTool('paid_fetch', { url }, `call_${i}`)), say('done')],
  })

t.test('AI SDK: the model calls paid_fetch, the tool pays the hosted endpoint and returns the cost', async (t) => {
  const { p, echo, agentPayments, sellerPayments } = await frameworkPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const tools = tollgateTools({ baseUrl: p.webUrl, agentKey: agent.key })
  const r = await generateText({ model: scripted(echo('hi')), tools, stopWhen: stepCountIs(4), prompt: 'echo hi' })
  const out = r.steps[0]!.toolResults[0]!.output as PaidFetchResult
  t.match(out, { status: 200, paid: true, cost_usdc: '0.001', truncated: false, session_spent_usdc: '0.001' })
  t.same(JSON.parse(out.body), { echo: { msg: 'hi' } })
  t.same(
    (await agentPayments(agent.id)).map((a) => ({ id: a.id, amount: a.amount })),
    [{ id: out.payment_id, amount: '1000' }],
    'paid once, under the id the tool returned',
  )
  t.equal(await sellerPayments(), 1, 'the seller recorded the payment')
  t.equal(r.text, 'done')

  t.test('search_endpoints finds the hosted endpoints with their prices', async (t) => {
    const model = new MockLanguageModelV3({ doGenerate: [callTool('search_endpoints', { query: 'echo' }), say('ok')] })
    const s = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'find echo' })
    const found = (s.steps[0]!.toolResults[0]!.output as { endpoints: Array<{ url: string; price_usdc: string }> })
      .endpoints
    t.ok(
      found.some((e) => e.url === `${p.proxyUrl}/tollgate/toolbox/echo` && e.price_usdc === '0.001'),
      JSON.stringify(found),
    )
  })
})

t.test('AI SDK: calls above the caps are refused with a clear message, and nothing is paid', async (t) => {
  const { p, echo, agentPayments, sellerPayments } = await frameworkPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  const sellers = await sellerPayments()

  // this client's own maximum per call: refused before the platform is asked
  const strict = tollgateTools({ baseUrl: p.webUrl, agentKey: agent.key, maxPerCall: 500n })
  const r = await generateText({ model: scripted(echo('a')), tools: strict, stopWhen: stepCountIs(3), prompt: 'x' })
  t.match(r.steps[0]!.toolResults[0]!.output, {
    paid: false,
    cost_usdc: '0',
    payment_id: null,
    refused: {
      code: 'spend_cap_exceeded',
      message: "the price 0.001 USDC is above this client's maximum per call of 0.0005 USDC; nothing was paid",
    },
  })
  t.same(await agentPayments(agent.id), [], 'nothing signed')

  // a session budget: the first call fits, the second would pass it
  const budgeted = tollgateTools({ baseUrl: p.webUrl, agentKey: agent.key, budget: 1500n })
  const b = await generateText({
    model: scripted(echo('one'), echo('two')),
    tools: budgeted,
    stopWhen: stepCountIs(4),
    prompt: 'x',
  })
  t.match(b.steps[0]!.toolResults[0]!.output, { paid: true, cost_usdc: '0.001' })
  t.match(b.steps[1]!.toolResults[0]!.output, {
    paid: false,
    cost_usdc: '0',
    session_spent_usdc: '0.001',
    refused: { code: 'spend_cap_exceeded', message: /budget of 0\.0015 USDC \(0\.001 USDC paid, 0\.0005 USDC left\)/ },
  })
  t.equal((await agentPayments(agent.id)).length, 1, 'only the first call was paid')

  // the agent's own cap on the platform
  const capped = await p.agent({ fund: 1_000_000n, caps: { per_transaction: '10' } })
  const platformCapped = tollgateTools({ baseUrl: p.webUrl, agentKey: capped.key })
  const c = await generateText({
    model: scripted(echo('c')),
    tools: platformCapped,
    stopWhen: stepCountIs(3),
    prompt: 'x',
  })
  t.match(c.steps[0]!.toolResults[0]!.output, {
    paid: false,
    status: 403,
    refused: {
      code: 'spend_cap_exceeded',
      message: /the price 0\.001 USDC is above the per-transaction cap of 0\.00001 USDC/,
    },
  })
  t.same(await agentPayments(capped.id), [])
  t.equal(await sellerPayments(), sellers + 1, 'the seller saw only the budgeted call paid')
})
