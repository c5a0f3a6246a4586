/**
 * The `deferred` scheme over the MCP transport: an endpoint that offers deferred lists the voucher
 * requirement in its tool's PaymentRequired, and a voucher in `_meta["x402/payment"]` pays the
 * tools/call (the official MCP client; the voucher signed with viem, as in
 * test/integration/deferred/scheme.test.ts, since there is no official deferred client).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { getAddress } from 'viem'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import type { Challenge } from '../../../src/x402/challenge.js'
import { deferredBuyer, voucherWire } from '../../helpers/deferred-buyer.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')

t.test('a paid MCP tools/call with a deferred voucher', async (t) => {
  const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
  const { deps, devnet } = platform
  const seller = getAddress(devnet.accounts.receiver.address)
  await deps.db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'deferred'] })
    .where('slug', '=', 'echo')
    .execute()
  await announceRegistryChange(deps)

  const client = new Client({ name: 'tollgate-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${platform.proxyUrl}/tollgate/toolbox/mcp`)))
  t.teardown(() => client.close())
  const call = (payment?: unknown) =>
    client.callTool({
      name: 'echo',
      arguments: { msg: 'hi' },
      ...(payment === undefined ? {} : { _meta: { 'x402/payment': payment } }),
    }) as Promise<CallToolResult>

  // the unpaid call: the tool's PaymentRequired offers exact, then deferred (once the proxy reloaded)
  const required = await until('the tool offers deferred', async () => {
    const r = await call()
    const pr = r.structuredContent as unknown as Challenge['v2']
    return r.isError === true && pr.accepts.length === 2 && pr
  })
  t.same(
    required.accepts.map((a) => a.scheme),
    ['exact', 'deferred'],
  )
  const deferred = required.accepts[1]!
  t.equal(deferred.payTo, seller)
  t.equal(deferred.amount, '1000')
  t.match(deferred.extra, { escrow: getAddress(devnet.deferredEscrowAddress), voucherStorage: 'server' })

  // tools/list offers both too
  const tool = (await client.listTools()).tools.find((x) => x.name === 'echo')!
  t.same(
    (tool._meta?.['x402/payment-requirements'] as Array<{ scheme: string }>).map((a) => a.scheme),
    ['exact', 'deferred'],
  )
  t.match(tool.description, /paid with x402 \(exact or deferred, eip155:84532\)/)

  // a buyer with an escrow deposit for the seller pays with a voucher in _meta
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 100_000n)
  const voucher = buyer.voucher(deferred)
  const payment = {
    x402Version: 2,
    resource: required.resource,
    accepted: deferred,
    payload: { voucher: voucherWire(voucher), signature: await buyer.sign(voucher) },
  }
  const r = await call(payment)
  t.notOk(r.isError, JSON.stringify(r.content))
  t.same(r.structuredContent, { echo: { msg: 'hi' } }, 'the tool answered')
  const receipt = r._meta?.['x402/payment-response'] as { success: boolean; payer: string; network: string }
  t.match(receipt, { success: true, network: 'eip155:84532' }, 'the receipt is in _meta')
  t.equal(receipt.payer.toLowerCase(), buyer.address.toLowerCase())

  // the voucher store holds it, and the payment waits for collection
  const stored = await deps.db
    .selectFrom('deferred_vouchers')
    .selectAll()
    .where('buyer', '=', buyer.address.toLowerCase())
    .execute()
  t.equal(stored.length, 1, 'one voucher stored')
  t.match(stored[0], { voucher_id: voucher.id.toLowerCase(), value_aggregate: '1000', nonce: '0' })
  const payments = await deps.db
    .selectFrom('payments')
    .select(['scheme', 'value', 'status', 'nonce'])
    .where('payer', '=', buyer.address.toLowerCase())
    .execute()
  t.match(
    payments,
    [{ scheme: 'deferred', value: '1000', nonce: stored[0]!.digest }],
    'a deferred payment for the voucher',
  )

  // the next call aggregates onto it (the buyer keeps its last voucher: MCP has no PAYER-IDENTIFIER)
  const next = buyer.voucher(deferred, voucher)
  const again = await call({ ...payment, payload: { voucher: voucherWire(next), signature: await buyer.sign(next) } })
  t.notOk(again.isError, JSON.stringify(again.content))
  const latest = await deps.db
    .selectFrom('deferred_vouchers')
    .select(['voucher_id', 'value_aggregate', 'nonce'])
    .where('buyer', '=', buyer.address.toLowerCase())
    .orderBy('nonce', 'desc')
    .limit(1)
    .execute()
  t.match(latest, [{ voucher_id: voucher.id.toLowerCase(), value_aggregate: '2000', nonce: '1' }], 'aggregated')
})
