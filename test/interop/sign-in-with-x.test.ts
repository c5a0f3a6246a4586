import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { x402HTTPClient } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm'
import {
  createSIWxClientHook,
  createSIWxPayload,
  encodeSIWxHeader,
  wrapFetchWithSIWx,
  type SIWxExtensionInfo,
} from '@x402/extensions/sign-in-with-x'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { sql } from 'kysely'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { mintUsdc } from '../../src/chain/devnet.js'
import { usdcAbi } from '../../src/chain/usdc-abi.js'
import { createSettlementMetrics } from '../../src/services/metrics/settlement-metrics.js'
import { announceRegistryChange } from '../../src/services/registry-events.js'
import { startWorkers } from '../../workers/index.js'
import { withDevnet } from '../helpers/devnet.js'
import { decodeRequired } from '../helpers/pay.js'
import { startTestPlatform } from '../helpers/platform.js'
import { until } from '../helpers/until.js'
import { endAccessGrants } from '../helpers/access-grants.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/handlers')
const devnet = await withDevnet(t)
const platform = await startTestPlatform(t, {
  devnet,
  proxy: { handlersDir: fixtures },
  env: { HANDLER_MAX_THREADS: '1', HANDLER_MEMORY_MB: '128' },
})
const base = `${platform.proxyUrl}/tollgate/toolbox`
const db = platform.deps.db
const network = platform.deps.config.chain.caip2

// paid access on `echo` for 30 minutes; `naps` stays as every endpoint is by default: pay per call
await db
  .updateTable('endpoints')
  .set({ access_minutes: 30 })
  .where('slug', '=', 'echo')
  .where('handler', '=', 'echo')
  .execute()
await announceRegistryChange(platform.deps, {})
await until('the proxy to offer sign-in on echo', async () => {
  const res = await fetch(`${base}/echo?msg=x`)
  return decodeRequired(res.headers.get('payment-required')).extensions?.['sign-in-with-x'] !== undefined
})

/** A funded wallet and the official @x402/fetch client, with the official sign-in hook: it signs in when offered, pays when that is refused. */
async function officialBuyer() {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(devnet.rpcUrl, account.address, 1_000_000n)
  const http = new x402HTTPClient(new x402Client().register('eip155:84532', new ExactEvmScheme(account)))
  http.onPaymentRequired(createSIWxClientHook(account))
  return { account, fetch: wrapFetchWithPayment(fetch, http) }
}

const rowsOf = (account: PrivateKeyAccount) =>
  db.selectFrom('payments').select(['id', 'status']).where('payer', '=', account.address.toLowerCase()).execute()

/** The sign-in challenge of a fresh 402 of `url`. */
async function challengeOf(url: string): Promise<SIWxExtensionInfo> {
  const res = await fetch(url)
  if (res.status !== 402) throw new Error(`expected a 402 from ${url}, got ${res.status}`)
  const ext = decodeRequired(res.headers.get('payment-required')).extensions?.['sign-in-with-x'] as {
    info: SIWxExtensionInfo
  }
  return ext.info
}

/** A proof built by the official helpers from `info` (changed as a test needs), sent to `url`. */
async function signInWith(account: PrivateKeyAccount, url: string, info: SIWxExtensionInfo, bindTo = url) {
  const payload = await createSIWxPayload({ ...info, chainId: network, type: 'eip191' }, account, bindTo)
  return fetch(url, { headers: { 'SIGN-IN-WITH-X': encodeSIWxHeader(payload) } })
}

/** The refusal's reason, as the v1 body and the v2 header carry it ('v1 | v2' when they differ). */
async function reasonOf(res: Response): Promise<string> {
  const body = (await res.json()) as { error: string }
  const v2 = decodeRequired(res.headers.get('payment-required')).error
  return v2 === body.error ? body.error : `${body.error} | ${v2}`
}

// one buyer that paid once, shared by the refusal tests
const paid = await officialBuyer()
const echo = `${base}/echo?msg=hi`

t.test(
  'the official client pays once, then signs in and is served without paying; one price moves on chain',
  async (t) => {
    const first = await paid.fetch(echo)
    t.equal(first.status, 200)
    t.ok(first.headers.get('payment-response'), 'the first call was paid')
    t.same(await first.json(), { echo: { msg: 'hi' } })
    t.equal((await rowsOf(paid.account)).length, 1)

    const again = await paid.fetch(`${base}/echo?msg=again`)
    t.equal(again.status, 200)
    t.same(await again.json(), { echo: { msg: 'again' } })
    t.equal(again.headers.get('payment-response'), null, 'no receipt: nothing was paid')
    const rows = await rowsOf(paid.account)
    t.equal(rows.length, 1, 'still one payment: the second call was served on the sign-in')

    const grant = await db
      .selectFrom('access_grants')
      .selectAll()
      .where('payer', '=', paid.account.address.toLowerCase())
      .executeTakeFirstOrThrow()
    t.equal(grant.payment_id, rows[0]!.id, 'the grant names the payment that bought it')
    const minutes = (grant.expires_at.getTime() - Date.now()) / 60_000
    t.ok(minutes > 29 && minutes <= 30, `the grant runs 30 minutes (${minutes.toFixed(2)})`)

    const workers = await startWorkers(platform.deps, {
      everyMs: {
        'topup-check': 3_600_000,
        'settlement-tick': 200,
        'recovery-sweep': 3_600_000,
        'balance-refresh': 3_600_000,
        'relayer-funds-check': 3_600_000,
      },
      log: { info: () => {}, warn: () => {}, error: () => {} },
    })
    t.teardown(() => workers.close())
    await until('the payment to settle', async () => (await rowsOf(paid.account))[0]?.status === 'settled')
    const balance = await platform.deps.chain.readContract({
      address: platform.deps.config.chain.usdc.address,
      abi: usdcAbi,
      functionName: 'balanceOf',
      args: [paid.account.address],
    })
    t.equal(balance, 1_000_000n - 1000n, 'one price moved on chain for two calls')
  },
)

t.test('the official wrapFetchWithSIWx helper signs in for a wallet that paid', async (t) => {
  const res = await wrapFetchWithSIWx(fetch, paid.account)(`${base}/echo?msg=siwx`)
  t.equal(res.status, 200)
  t.same(await res.json(), { echo: { msg: 'siwx' } })
  t.equal((await rowsOf(paid.account)).length, 1, 'no payment')
})

t.test('every 402 carries a fresh challenge; endpoints without paid access declare no sign-in', async (t) => {
  const a = await challengeOf(echo)
  const b = await challengeOf(echo)
  t.match(a.nonce, /^[0-9a-f]{32}$/)
  t.not(a.nonce, b.nonce, 'a new nonce per 402')
  t.equal(a.domain, new URL(platform.proxyUrl).host)
  t.equal(a.uri, `${base}/echo`)
  t.same(a.resources, [`${base}/echo`])
  t.ok(Date.parse(a.expirationTime!) > Date.now())
  const naps = await fetch(`${base}/naps?msg=x`)
  t.equal(naps.status, 402)
  t.equal(decodeRequired(naps.headers.get('payment-required')).extensions?.['sign-in-with-x'], undefined)
  const withProof = await signInWith(paid.account, `${base}/naps?msg=x`, a, echo)
  t.equal(withProof.status, 402, 'a proof on an endpoint without paid access is not looked at: pay')
  t.equal(((await withProof.json()) as { error: string }).error, 'X-PAYMENT header is required')
})

t.test('refusals: a clear extension reason with a fresh challenge, never a 5xx, nothing charged', async (t) => {
  const stranger = privateKeyToAccount(generatePrivateKey())
  const cases: [string, () => Promise<Response>, string][] = [
    [
      'a wallet that never paid',
      async () => signInWith(stranger, echo, await challengeOf(echo)),
      'siwx_no_paid_access',
    ],
    [
      'an expired message',
      async () => {
        const info = await challengeOf(echo)
        return signInWith(paid.account, echo, {
          ...info,
          issuedAt: new Date(Date.now() - 60_000).toISOString(),
          expirationTime: new Date(Date.now() - 1000).toISOString(),
        })
      },
      'invalid_siwx_expired',
    ],
    [
      'a message issued too long ago',
      async () => {
        const info = await challengeOf(echo)
        return signInWith(paid.account, echo, { ...info, issuedAt: new Date(Date.now() - 6 * 60_000).toISOString() })
      },
      'invalid_siwx_issued_at_too_old',
    ],
    [
      'another resource',
      async () => {
        const info = await challengeOf(echo)
        return signInWith(paid.account, echo, { ...info, uri: `${base}/naps`, resources: [`${base}/naps`] })
      },
      'invalid_siwx_uri_mismatch',
    ],
    [
      'another domain',
      async () => {
        const info = await challengeOf(echo)
        const evil = { ...info, domain: 'evil.example', uri: 'https://evil.example/tollgate/toolbox/echo' }
        return signInWith(paid.account, echo, evil, evil.uri)
      },
      'invalid_siwx_domain_mismatch',
    ],
    [
      'another chain',
      async () => {
        const info = await challengeOf(echo)
        const payload = await createSIWxPayload({ ...info, chainId: 'eip155:1', type: 'eip191' }, paid.account, echo)
        return fetch(echo, { headers: { 'SIGN-IN-WITH-X': encodeSIWxHeader(payload) } })
      },
      'invalid_siwx_unsupported_chain',
    ],
    [
      'a message changed after signing',
      async () => {
        const info = await challengeOf(echo)
        const payload = await createSIWxPayload({ ...info, chainId: network, type: 'eip191' }, paid.account, echo)
        payload.statement = 'something else'
        return fetch(echo, { headers: { 'SIGN-IN-WITH-X': encodeSIWxHeader(payload) } })
      },
      'invalid_siwx_signature',
    ],
    [
      'a proof signed by another wallet',
      async () => {
        const info = await challengeOf(echo)
        const payload = await createSIWxPayload({ ...info, chainId: network, type: 'eip191' }, stranger, echo)
        payload.address = paid.account.address
        return fetch(echo, { headers: { 'SIGN-IN-WITH-X': encodeSIWxHeader(payload) } })
      },
      'invalid_siwx_signature',
    ],
    [
      'a header that is not base64',
      async () => fetch(echo, { headers: { 'SIGN-IN-WITH-X': '%%%' } }),
      'invalid_siwx_header',
    ],
    [
      'a header without its fields',
      async () =>
        fetch(echo, {
          headers: { 'SIGN-IN-WITH-X': Buffer.from(JSON.stringify({ domain: 'x' })).toString('base64') },
        }),
      'invalid_siwx_header',
    ],
    [
      'a header of a JSON array',
      async () => fetch(echo, { headers: { 'SIGN-IN-WITH-X': Buffer.from('[1,2]').toString('base64') } }),
      'invalid_siwx_header',
    ],
  ]
  const before = await db
    .selectFrom('payments')
    .select(sql<number>`count(*)::int`.as('n'))
    .executeTakeFirstOrThrow()
  for (const [what, send, reason] of cases) {
    const res = await send()
    t.equal(res.status, 402, `${what}: 402`)
    t.equal(await reasonOf(res), reason, `${what}: ${reason}`)
    t.ok(res.headers.get('payment-required'), `${what}: the challenge again, to pay or sign anew`)
  }
  const after = await db
    .selectFrom('payments')
    .select(sql<number>`count(*)::int`.as('n'))
    .executeTakeFirstOrThrow()
  t.equal(after.n, before.n, 'no payment recorded by any of them')
})

t.test('a replayed proof: its nonce is used once', async (t) => {
  const info = await challengeOf(echo)
  const payload = await createSIWxPayload({ ...info, chainId: network, type: 'eip191' }, paid.account, echo)
  const header = encodeSIWxHeader(payload)
  const first = await fetch(echo, { headers: { 'SIGN-IN-WITH-X': header } })
  t.equal(first.status, 200)
  const replay = await fetch(echo, { headers: { 'SIGN-IN-WITH-X': header } })
  t.equal(replay.status, 402)
  t.equal(await reasonOf(replay), 'invalid_siwx_nonce')
})

t.test('a grant that ran out: refused, and the official client pays again', async (t) => {
  const buyer = await officialBuyer()
  t.equal((await buyer.fetch(echo)).status, 200)
  await endAccessGrants(platform.deps, buyer.account.address)
  const refused = await signInWith(buyer.account, echo, await challengeOf(echo))
  t.equal(refused.status, 402)
  t.equal(await reasonOf(refused), 'siwx_no_paid_access')
  const res = await buyer.fetch(echo)
  t.equal(res.status, 200)
  t.ok(res.headers.get('payment-response'), 'paid again')
  t.equal((await rowsOf(buyer.account)).length, 2)
  const grant = await db
    .selectFrom('access_grants')
    .select('expires_at')
    .where('payer', '=', buyer.account.address.toLowerCase())
    .executeTakeFirstOrThrow()
  t.ok(grant.expires_at.getTime() > Date.now() + 29 * 60_000, 'the new payment renewed the grant')
})

t.test('paid access for a whole service: a payment on one endpoint signs in on another', async (t) => {
  await db.updateTable('endpoints').set({ access_minutes: null }).where('slug', '=', 'echo').execute()
  await db.updateTable('services').set({ access_minutes: 5 }).where('name', '=', 'toolbox').execute()
  await announceRegistryChange(platform.deps, {})
  const naps = `${base}/naps?msg=z&ms=1`
  await until('the proxy to offer sign-in on naps', async () => {
    const res = await fetch(naps)
    return decodeRequired(res.headers.get('payment-required')).extensions?.['sign-in-with-x'] !== undefined
  })
  const buyer = await officialBuyer()
  t.equal((await buyer.fetch(echo)).status, 200, 'paid on echo')
  const res = await buyer.fetch(naps)
  t.equal(res.status, 200)
  t.equal(res.headers.get('payment-response'), null, 'served on the sign-in')
  t.equal((await rowsOf(buyer.account)).length, 1)
})

t.test('calls served on a sign-in are counted in /metrics', async (t) => {
  const metrics = createSettlementMetrics(platform.deps, { getJobCounts: async () => ({}) })
  const count = async () => {
    const line = (await metrics.render()).split('\n').find((l) => l.startsWith('tollgate_sign_in_calls_total '))
    return Number(line?.split(' ')[1])
  }
  const before = await count()
  t.ok(before >= 4, `the sign-ins above were counted (${before})`)
  // the service's access is on now (the test above): pay once there, then sign in
  const buyer = await officialBuyer()
  t.ok((await buyer.fetch(`${base}/naps?msg=c&ms=1`)).headers.get('payment-response'), 'paid')
  const res = await buyer.fetch(`${base}/naps?msg=c&ms=1`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('payment-response'), null, 'signed in')
  await until('the count to move', async () => (await count()) === before + 1)
})
