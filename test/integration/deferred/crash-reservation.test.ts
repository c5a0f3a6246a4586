/**
 * Issue #33 §5: a proxy killed (SIGKILL) after reserving a voucher and before writing it leaves its
 * reservation in Redis while Postgres — and so the challenge's `extra.voucher` — still shows the old
 * head. The buyer signs the next voucher onto that head again: it is refused (`voucher_stale`)
 * only until the dead process's liveness key runs out (LIVENESS_TTL_MS, 5 s), then accepted from
 * Postgres, instead of for STALE_RESERVATION_MS (60 s).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { getAddress, type Address } from 'viem'
import type { DeferredVoucher } from '../../../src/schemes/deferred/typed-data.js'
import { announceRegistryChange } from '../../../src/services/registry-events.js'
import { startCrashProxy } from '../../helpers/crash-proxy.js'
import { deferredBuyer, deferredHeader, voucherWire, type DeferredBuyer } from '../../helpers/deferred-buyer.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { until } from '../../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/handlers')
const ECHO = '/tollgate/toolbox/echo?msg=crash'

const platform = await startTestPlatform(t, { proxy: { handlersDir: fixtures } })
const { deps, proxy, devnet } = platform
const seller = getAddress(devnet.accounts.receiver.address)
await deps.db
  .updateTable('endpoints')
  .set({ schemes: ['exact', 'deferred'] })
  .where('slug', '=', 'echo')
  .execute()
await announceRegistryChange(deps)
await until(
  'the proxy offers deferred',
  async () => decodeRequired((await proxy.inject(ECHO)).headers['payment-required'] as string).accepts.length === 2,
)

/** The challenge for the buyer, and its deferred requirement (with the latest stored voucher). */
async function challenge(buyer: Address) {
  const required = decodeRequired(
    (await proxy.inject({ url: ECHO, headers: { 'payer-identifier': buyer } })).headers['payment-required'] as string,
  )
  return { required, deferred: required.accepts.find((a) => a.scheme === 'deferred')! }
}

/** The next voucher onto `previous`, as a PAYMENT-SIGNATURE for this endpoint. */
async function paymentHeader(buyer: DeferredBuyer, previous: DeferredVoucher | undefined) {
  const { required, deferred } = await challenge(buyer.address)
  const v = buyer.voucher(deferred, previous)
  return { v, header: deferredHeader(required, deferred, { voucher: voucherWire(v), signature: await buyer.sign(v) }) }
}

t.test('after a proxy crash the buyer is served again from the stored head within seconds', async (t) => {
  const buyer = await deferredBuyer(devnet, 10n ** 6n)
  await buyer.deposit(seller, 100_000n)
  let last: DeferredVoucher | undefined
  for (let i = 0; i < 2; i++) {
    const { v, header } = await paymentHeader(buyer, last)
    const r = await proxy.inject({
      url: ECHO,
      headers: { 'payer-identifier': buyer.address, 'payment-signature': header },
    })
    t.equal(r.statusCode, 200)
    last = v
  }

  // another proxy reserves nonce 2 and dies before writing it
  const dying = await startCrashProxy(t, platform.env, { TOLLGATE_TEST_PROXY_CRASH_AT: 'after-reserve' })
  const lost = await paymentHeader(buyer, last)
  await fetch(`${dying.origin}${ECHO}`, {
    headers: { 'payer-identifier': buyer.address, 'payment-signature': lost.header },
  }).catch(() => null)
  t.match(await dying.exited, { signal: 'SIGKILL' }, 'the proxy died after reserving')

  // the challenge still shows nonce 1 (Postgres); the buyer signs nonce 2 onto it again
  const { deferred } = await challenge(buyer.address)
  t.equal(String((deferred.extra.voucher as { nonce: number }).nonce), '1', 'the challenge shows the old head')
  const retry = await paymentHeader(buyer, last)
  t.equal(retry.v.nonce, 2n)
  let refused = 0
  const reasons = new Set<string>()
  const started = Date.now()
  await until('the retried voucher served', async () => {
    const r = await proxy.inject({
      url: ECHO,
      headers: { 'payer-identifier': buyer.address, 'payment-signature': retry.header },
    })
    if (r.statusCode === 200) return true
    reasons.add(String(decodeRequired(r.headers['payment-required'] as string).error))
    refused++
    return false
  })
  t.ok(
    [...reasons].every((r) => r === 'invalid_deferred_evm_payload_voucher_stale'),
    `refused only as stale meanwhile: ${[...reasons].join(', ')}`,
  )
  t.comment(
    `figures: served ${Date.now() - started} ms after the crash, ${refused} refusals on the way (was up to 60 s)`,
  )
  const stored = await deps.db
    .selectFrom('deferred_vouchers')
    .select('nonce')
    .where('buyer', '=', buyer.address.toLowerCase())
    .orderBy('nonce')
    .execute()
  t.same(
    stored.map((r) => String(r.nonce)),
    ['0', '1', '2'],
    'one voucher per nonce',
  )
})
