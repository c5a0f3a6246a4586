/**
 * `batch-settlement` over MCP (x402 specs/transports-v2/mcp.md): the official MCP SDK client calls a
 * hosted tool, and the official `@x402/evm` batch-settlement client scheme (through `@x402/core`'s
 * x402Client, as an MCP payer would) signs the payment in `_meta["x402/payment"]`: the deposit on
 * the first call, vouchers after, the receipt in `_meta["x402/payment-response"]`, and a stale
 * voucher answered with the corrective PaymentRequired from which the client resyncs by itself.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402Client } from '@x402/core/client'
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types'
import { toClientEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import t from 'tap'
import { createPublicClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer } from '../../helpers/settlement.js'

const MASTER = '31'.repeat(32)

t.test('batch-settlement over MCP with the official clients', async (t) => {
  const platform = await startTestPlatform(t, { env: { TOLLGATE_MASTER_KEY: MASTER } })
  const { deps, devnet } = platform
  const mcp = new Client({ name: 'tollgate-test', version: '1.0.0' })
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${platform.proxyUrl}/tollgate/toolbox/mcp`)))
  t.teardown(() => mcp.close())

  const payer = await newPayer(platform, 1_000_000n)
  const signer = toClientEvmSigner(
    privateKeyToAccount(payer.key),
    createPublicClient({ transport: http(devnet.rpcUrl) }),
  )
  const scheme = new BatchSettlementEvmScheme(signer, { depositPolicy: { depositMultiplier: 10 } })
  const x402 = new x402Client((_v, accepts) => accepts.find((a) => a.scheme === 'batch-settlement') ?? accepts[0]!)
  x402.register(`eip155:${devnet.chainId}`, scheme)

  const args = { text: 'abc', algorithms: ['sha256'] }
  const call = (payment?: PaymentPayload) =>
    mcp.callTool({
      name: 'hash-generator',
      arguments: args,
      ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
    }) as Promise<CallToolResult>

  /** one paid tool call as an MCP payer makes it: challenge, sign, call, hand the answer to the client */
  async function pay(): Promise<{ result: CallToolResult; payload: PaymentPayload; attempts: number }> {
    let required = (await call()).structuredContent as unknown as PaymentRequired
    for (let attempts = 1; ; attempts++) {
      const payload = await x402.createPaymentPayload(required)
      const result = await call(payload)
      const requirements = payload.accepted
      if (!result.isError) {
        const settleResponse = result._meta?.['x402/payment-response'] as SettleResponse
        await x402.handlePaymentResponse({ paymentPayload: payload, requirements, settleResponse })
        return { result, payload, attempts }
      }
      const refused = result.structuredContent as unknown as PaymentRequired
      const r = await x402.handlePaymentResponse({ paymentPayload: payload, requirements, paymentRequired: refused })
      if (!r?.recovered || attempts >= 3) return { result, payload, attempts }
      required = refused
    }
  }

  const unpaid = await call()
  t.ok(unpaid.isError)
  const offered = (unpaid.structuredContent as unknown as PaymentRequired).accepts.map((a) => a.scheme)
  t.ok(offered.includes('batch-settlement'), `offered over MCP: ${offered.join(', ')}`)
  const tool = (await mcp.listTools()).tools.find((x) => x.name === 'hash-generator')!
  t.match(tool.description, /batch-settlement/, 'the tool says it takes batch-settlement')

  // the first call deposits (10 x the price) before it is answered
  const first = await pay()
  t.notOk(first.result.isError, JSON.stringify(first.result.content))
  t.equal((first.payload.payload as { type: string }).type, 'deposit')
  const r0 = first.result._meta?.['x402/payment-response'] as SettleResponse & {
    extra: { chargedAmount: string; channelState: Record<string, string> }
  }
  t.match(r0, { success: true, amount: '10000', transaction: /^0x[0-9a-f]{64}$/ }, 'the deposit in the receipt')
  t.match(r0.extra, { chargedAmount: '1000', channelState: { chargedCumulativeAmount: '1000', balance: '10000' } })
  const channelId = r0.extra.channelState.channelId!

  // vouchers after: no transaction, the cumulative moves by the price
  for (let i = 2; i <= 5; i++) {
    const r = await pay()
    t.notOk(r.result.isError, `call ${i}`)
    t.equal((r.payload.payload as { type: string }).type, 'voucher')
    t.match(r.result._meta?.['x402/payment-response'], {
      transaction: '',
      extra: { channelState: { chargedCumulativeAmount: String(i * 1000) } },
    })
  }

  // a replayed voucher: the corrective PaymentRequired (channelState + voucherState), nothing charged
  const last = await pay()
  const replay = await call(last.payload)
  t.ok(replay.isError)
  const corrective = replay.structuredContent as unknown as PaymentRequired
  t.equal(corrective.error, 'invalid_batch_settlement_evm_cumulative_amount_mismatch')
  t.match(corrective.accepts.find((a) => a.scheme === 'batch-settlement')!.extra, {
    channelState: { channelId, chargedCumulativeAmount: '6000' },
    voucherState: { signedMaxClaimable: '6000' },
  })

  // a fresh client with the same key resyncs from the corrective answer by itself
  const fresh = new x402Client((_v, accepts) => accepts.find((a) => a.scheme === 'batch-settlement')!)
  fresh.register(`eip155:${devnet.chainId}`, new BatchSettlementEvmScheme(signer, { depositMultiplier: 10 }))
  const payload = await fresh.createPaymentPayload(corrective)
  const stale = await call(payload)
  const recovered = await fresh.handlePaymentResponse({
    paymentPayload: payload,
    requirements: payload.accepted,
    paymentRequired: stale.structuredContent as unknown as PaymentRequired,
  })
  t.same(recovered, { recovered: true }, 'the client recovers from the corrective answer')
  const retry = await fresh.createPaymentPayload(stale.structuredContent as unknown as PaymentRequired)
  const ok = await call(retry)
  t.notOk(ok.isError, JSON.stringify(ok.content))
  t.match(ok._meta?.['x402/payment-response'], { extra: { channelState: { chargedCumulativeAmount: '7000' } } })

  const rows = await deps.db
    .selectFrom('payments')
    .select(['scheme', 'status', 'value'])
    .where('payer', '=', payer.address.toLowerCase())
    .execute()
  t.equal(rows.length, 7, 'each served call is in the history once')
  t.ok(rows.every((r) => r.scheme === 'batch-settlement' && r.status === 'served' && r.value === '1000'))
  const ch = await deps.db
    .selectFrom('batch_channels')
    .select(['charged', 'signed_max_claimable'])
    .where('channel_id', '=', channelId)
    .executeTakeFirstOrThrow()
  t.same(ch, { charged: '7000', signed_max_claimable: '7000' })
})
