import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import { startJsonStandIn } from '../../test/helpers/hyperliquid-stand-in.js'
import handler from './index.js'

const JUP = 'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4'
const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'
// getRecentPrioritizationFees result: one entry per recent slot, fee in micro-lamports per CU
const fees = [1000, 0, 50000, 100, 5000, 0, 200, 10000, 500, 1000].map((prioritizationFee, i) => ({
  slot: 348125 + i,
  prioritizationFee,
}))

/** A JSON-RPC stand-in answering getRecentPrioritizationFees with `result` (or `error`). */
function rpc(t: { teardown(fn: () => unknown): void }, answer: { result?: unknown; error?: unknown }) {
  return startJsonStandIn(t, (req) => ({ json: { jsonrpc: '2.0', id: req.body?.id ?? null, ...answer } }))
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('percentiles, base fee and estimates', async (t) => {
  const s = await rpc(t, { result: fees })
  const out = okBody(
    await runInline(
      handler,
      { computeUnitLimit: '200000', signatures: '2' },
      { from: 'query', providers: { SOLANA_RPC_URL: s.url + '/?api-key=k' } },
    ),
  )
  t.equal(s.requests.length, 1)
  t.equal(s.requests[0]!.method, 'POST')
  t.equal(s.requests[0]!.query.get('api-key'), 'k', 'the configured URL is used as is')
  t.match(s.requests[0]!.body, { jsonrpc: '2.0', method: 'getRecentPrioritizationFees', params: [] })
  t.equal(out.slotsSampled, 10)
  t.same(out.slotRange, { from: 348125, to: 348134 })
  t.equal(out.slotsWithPriorityFee, 8)
  t.same(out.priorityFeeMicroLamportsPerCu, {
    min: 0,
    p25: 100,
    p50: 500,
    p75: 5000,
    p90: 10000,
    p95: 50000,
    max: 50000,
    mean: 6780,
  })
  t.same(out.baseFee, { lamportsPerSignature: 5000, signatures: 2, lamports: 10000 })
  const p50 = out.estimates.find((e: any) => e.level === 'p50')
  t.same(p50, {
    level: 'p50',
    computeUnitPriceMicroLamports: 500,
    priorityFeeLamports: 100,
    totalLamports: 10100,
    totalSol: 0.0000101,
  })
  t.match(
    out.estimates.find((e: any) => e.level === 'p95'),
    { priorityFeeLamports: 10000, totalLamports: 20000 },
  )
  t.same(
    out.estimates.map((e: any) => e.level),
    ['min', 'p25', 'p50', 'p75', 'p90', 'p95', 'max'],
  )
})

t.test('accounts are sent; fractional lamports round up', async (t) => {
  const s = await rpc(t, { result: [{ slot: 1, prioritizationFee: 3 }] })
  const out = okBody(
    await runInline(
      handler,
      { accounts: [JUP, USDC], computeUnitLimit: 1000 },
      { providers: { SOLANA_RPC_URL: s.url } },
    ),
  )
  t.same(s.requests[0]!.body.params, [[JUP, USDC]])
  t.same(out.accounts, [JUP, USDC])
  t.match(
    out.estimates[0],
    { computeUnitPriceMicroLamports: 3, priorityFeeLamports: 1, totalLamports: 5001 },
    '3 × 1000 / 1e6 = 0.003 → 1 lamport',
  )
})

t.test('no recent slots: base fee only, said so', async (t) => {
  const s = await rpc(t, { result: [] })
  const out = okBody(await runInline(handler, {}, { providers: { SOLANA_RPC_URL: s.url } }))
  t.match(out, {
    slotsSampled: 0,
    slotRange: null,
    priorityFeeMicroLamportsPerCu: null,
    estimates: [],
    baseFee: { lamports: 5000 },
    note: /no recent slots/,
  })
})

t.test('an account the node refuses: 400 on accounts', async (t) => {
  const s = await rpc(t, { error: { code: -32602, message: 'Invalid param: WrongSize' } })
  t.match(await runInline(handler, { accounts: [JUP] }, { providers: { SOLANA_RPC_URL: s.url } }), {
    ok: false,
    status: 400,
    field: 'accounts',
  })
})

t.test('bad input names the field', async (t) => {
  const providers = { SOLANA_RPC_URL: 'http://127.0.0.1:1' }
  t.match(await runInline(handler, { accounts: ['0OIl' + 'a'.repeat(40)] }, { providers }), {
    ok: false,
    status: 400,
    field: 'accounts.0',
  })
  t.match(await runInline(handler, { accounts: Array.from({ length: 129 }, () => JUP) }, { providers }), {
    ok: false,
    status: 400,
    field: 'accounts',
  })
  t.match(await runInline(handler, { computeUnitLimit: 1_400_001 }, { providers }), {
    ok: false,
    status: 400,
    field: 'computeUnitLimit',
  })
  t.match(await runInline(handler, { signatures: 0 }, { providers }), { ok: false, status: 400, field: 'signatures' })
})

t.test('provider problems', async (t) => {
  await t.rejects(runInline(handler, {}, { providers: {} }), { code: 'upstream_not_configured' })
  const down = await startJsonStandIn(t, () => ({ status: 429, raw: 'Too many requests' }))
  const failed = runInline(handler, {}, { providers: { SOLANA_RPC_URL: down.url + '/secret-key' } })
  await t.rejects(failed, { code: 'upstream_failed' })
  t.notMatch(String(await failed.catch((e: Error) => e.message)), /secret-key/)
  const rpcError = await rpc(t, { error: { code: -32005, message: 'Node is behind' } })
  await t.rejects(runInline(handler, {}, { providers: { SOLANA_RPC_URL: rpcError.url } }), {
    code: 'upstream_failed',
    message: /-32005: Node is behind/,
  })
  const wrong = await rpc(t, { result: { value: [] } })
  await t.rejects(runInline(handler, {}, { providers: { SOLANA_RPC_URL: wrong.url } }), {
    code: 'upstream_failed',
    message: /unexpected shape/,
  })
})
