import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ExactEvmScheme } from '@x402/evm'
import { appendPaymentIdentifierToExtensions, generatePaymentId } from '@x402/extensions/payment-identifier'
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { sql } from 'kysely'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { mintUsdc } from '../../src/chain/devnet.js'
import { usdcAbi } from '../../src/chain/usdc-abi.js'
import { createPaymentIdentifierStore } from '../../src/db/payment-identifier-store.js'
import { startWorkers } from '../../workers/index.js'
import { withDevnet } from '../helpers/devnet.js'
import { decodeRequired, signFor } from '../helpers/pay.js'
import { startTestPlatform } from '../helpers/platform.js'
import { until } from '../helpers/until.js'

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/handlers')
const devnet = await withDevnet(t)
// answers up to 64 bytes are kept: {"echo":{"msg":"hi"}} is, an echo of 100 characters is not
const platform = await startTestPlatform(t, {
  devnet,
  proxy: { handlersDir: fixtures },
  env: { X402_PAYMENT_ID_ANSWER_MAX_BYTES: '64', HANDLER_MAX_THREADS: '2', HANDLER_MEMORY_MB: '128' },
})
const base = `${platform.proxyUrl}/tollgate/toolbox`
const db = platform.deps.db

/** A funded payer and the official @x402/fetch client, unmodified, adding `id` with the official helper. */
async function officialBuyer() {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(devnet.rpcUrl, account.address, 1_000_000n)
  const client = new x402Client().register('eip155:84532', new ExactEvmScheme(account))
  const state = { id: generatePaymentId() }
  client.onBeforePaymentCreation(async ({ paymentRequired }) => {
    paymentRequired.extensions ??= {}
    appendPaymentIdentifierToExtensions(paymentRequired.extensions, state.id)
  })
  return { account, state, pay: wrapFetchWithPayment(fetch, client) }
}

const rowsOf = (account: PrivateKeyAccount) =>
  db
    .selectFrom('payments')
    .select(['id', 'status', 'nonce'])
    .where('payer', '=', account.address.toLowerCase())
    .orderBy('created_at')
    .execute()
const receiptOf = (res: Response) =>
  decodePaymentResponseHeader(res.headers.get('payment-response')!) as { paymentId?: string }

t.test('same id, same request: the same answer and one charge, settled once on chain', async (t) => {
  const { account, pay } = await officialBuyer()
  const first = await pay(`${base}/echo?msg=hi`)
  t.equal(first.status, 200)
  t.same(await first.json(), { echo: { msg: 'hi' } })
  const again = await pay(`${base}/echo?msg=hi`)
  t.equal(again.status, 200, 'a new 402, a new signature with the same id: answered from the kept answer')
  t.same(await again.json(), { echo: { msg: 'hi' } })
  t.equal(again.headers.get('x-tollgate-replayed'), 'true')
  t.equal(receiptOf(again).paymentId, receiptOf(first).paymentId, 'the receipt names the first payment')
  const rows = await rowsOf(account)
  t.equal(rows.length, 1, 'one payment recorded: the retry’s payment was not taken')

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
  await until('the payment to settle', async () => (await rowsOf(account))[0]?.status === 'settled')
  const balance = await platform.deps.chain.readContract({
    address: platform.deps.config.chain.usdc.address,
    abi: usdcAbi,
    functionName: 'balanceOf',
    args: [account.address],
  })
  t.equal(balance, 1_000_000n - 1000n, 'one price moved on chain')
})

t.test('same id, different request: 409 Conflict, nothing charged', async (t) => {
  const { account, pay } = await officialBuyer()
  t.equal((await pay(`${base}/echo?msg=one`)).status, 200)
  const other = await pay(`${base}/echo?msg=two`)
  t.equal(other.status, 409)
  t.match(await other.json(), {
    code: 'payment_identifier_conflict',
    message: /payment-identifier pay_\w+ was first used for a different request.*409 Conflict.*nothing was charged/,
  })
  t.equal((await rowsOf(account)).length, 1, 'no second payment')
})

t.test(
  'a lost answer: the buyer gives up while the handler runs; the retry with the same id gets the kept answer, one charge',
  async (t) => {
    const { account, state, pay } = await officialBuyer()
    const url = `${base}/naps?msg=late&ms=1500`
    const abort = new AbortController()
    const lost = pay(url, { signal: abort.signal }).then(
      () => 'answered',
      (err: Error) => err.name,
    )
    await until('the id to be claimed', async () =>
      db
        .selectFrom('payment_identifiers')
        .select('payer')
        .where('payment_identifier', '=', state.id)
        .executeTakeFirst(),
    )
    abort.abort()
    t.equal(await lost, 'AbortError', 'the buyer never got the answer')
    const meanwhile = await pay(url)
    t.equal(meanwhile.status, 409, 'while the call runs: in progress, never a second run')
    t.equal(meanwhile.headers.get('retry-after'), '1')
    t.match(await meanwhile.json(), { code: 'payment_identifier_in_progress' })
    await until('the call to end', async () => {
      const r = await db
        .selectFrom('payment_identifiers')
        .select('claimed_until')
        .where('payment_identifier', '=', state.id)
        .executeTakeFirstOrThrow()
      return r.claimed_until === null
    })
    const res = await pay(url)
    t.equal(res.status, 200)
    t.same(await res.json(), { echo: { msg: 'late', ms: 1500 } }, 'the answer the buyer lost')
    const rows = await rowsOf(account)
    t.equal(rows.length, 1, 'one payment')
    t.equal(rows[0]!.status, 'served')
    t.equal(receiptOf(res).paymentId, rows[0]!.id)
  },
)

t.test('an answer too large to keep: the retry gets the receipt, not a second run', async (t) => {
  const { account, pay } = await officialBuyer()
  const url = `${base}/echo?msg=${'x'.repeat(100)}`
  const first = await pay(url)
  t.equal(first.status, 200)
  const again = await pay(url)
  t.equal(again.status, 409)
  const body = await again.json()
  const [row] = await rowsOf(account)
  t.match(body, {
    code: 'payment_identifier_served',
    paymentId: row!.id,
    transaction: null,
    lookup: `/_tollgate/payments/${row!.id}`,
    message: /already served and charged.*larger than the proxy keeps.*nothing more is charged/,
  })
  t.equal((await rowsOf(account)).length, 1)
})

t.test('a call that failed (voided, nothing charged) frees its id for a new payment', async (t) => {
  const { account, pay } = await officialBuyer()
  const url = `${base}/throws`
  t.equal((await pay(url)).status, 502)
  t.equal((await pay(url)).status, 502, 'run again with the new payment, not "in progress" nor a conflict')
  t.same(
    (await rowsOf(account)).map((r) => r.status),
    ['voided', 'voided'],
  )
})

t.test('an id that breaks the format: 400 naming the field, nothing reserved', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const challenge = await fetch(`${base}/echo?msg=hi`)
  const required = decodeRequired(challenge.headers.get('payment-required'))
  for (const id of ['too-short', 'has spaces in it, sadly', 'x'.repeat(129), 1234567890123456]) {
    const payload = await signFor(account, required)
    const extensions = {
      ...required.extensions,
      'payment-identifier': {
        ...(required.extensions!['payment-identifier'] as object),
        info: { required: false, id },
      },
    }
    const header = Buffer.from(
      JSON.stringify({
        x402Version: 2,
        resource: required.resource,
        accepted: required.accepts[0],
        payload,
        extensions,
      }),
    ).toString('base64')
    const res = await fetch(`${base}/echo?msg=hi`, { headers: { 'payment-signature': header } })
    t.equal(res.status, 400, String(id))
    t.match(await res.json(), {
      code: 'invalid_parameter',
      param: 'extensions.payment-identifier.info.id',
      message: /16-128 characters/,
    })
  }
  t.equal((await rowsOf(account)).length, 0)
})

t.test('an id past its retention is free again, and the sweep deletes it with its kept answer', async (t) => {
  const { account, state, pay } = await officialBuyer()
  t.equal((await pay(`${base}/echo?msg=old`)).status, 200)
  const expire = () =>
    db
      .updateTable('payment_identifiers')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('payment_identifier', '=', state.id)
      .execute()
  await expire()
  const fresh = await pay(`${base}/echo?msg=new`)
  t.equal(fresh.status, 200, 'no conflict: the old use has expired')
  t.same(await fresh.json(), { echo: { msg: 'new' } })
  t.equal((await rowsOf(account)).length, 2, 'a new call, a new payment')
  await expire()
  t.ok((await createPaymentIdentifierStore(db, platform.deps.config.x402.paymentIds).purgeExpired()) >= 1)
  t.notOk(
    await db
      .selectFrom('payment_identifiers')
      .select('payer')
      .where('payment_identifier', '=', state.id)
      .executeTakeFirst(),
    'deleted',
  )
})

t.test('a call refused before its payment is recorded (an unfunded payer) leaves no trace of its id', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = new x402Client().register('eip155:84532', new ExactEvmScheme(account))
  const id = generatePaymentId()
  client.onBeforePaymentCreation(async ({ paymentRequired }) => {
    paymentRequired.extensions ??= {}
    appendPaymentIdentifierToExtensions(paymentRequired.extensions, id)
  })
  const res = await wrapFetchWithPayment(fetch, client)(`${base}/echo?msg=broke`).catch((err: Error) => err)
  t.ok(res instanceof Error || res.status === 402, 'refused: the payer has no USDC')
  t.notOk(
    await db.selectFrom('payment_identifiers').select('payer').where('payment_identifier', '=', id).executeTakeFirst(),
    'no row kept',
  )
  t.equal((await rowsOf(account)).length, 0)
})

t.test(
  'a handler with effects (recorded first): the id is claimed with the payment’s own row; a twin sent at once and a retry never act twice',
  async (t) => {
    const { account, state, pay } = await officialBuyer()
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'tollgate-acts-')), 'acts.log')
    t.teardown(() => rmSync(path.dirname(file), { recursive: true, force: true }))
    const url = `${base}/acts?file=${encodeURIComponent(file)}&line=once`
    // the same id, each with its own signature (nonce), at the same moment
    const both = await Promise.all([pay(url), pay(url)])
    const statuses = both.map((r) => r.status).sort()
    t.ok(
      statuses[0] === 200 && (statuses[1] === 200 || statuses[1] === 409),
      `one call runs; its twin is answered from it or told it is in progress (got ${statuses})`,
    )
    const retry = await pay(url)
    t.equal(retry.status, 200)
    t.same(await retry.json(), { wrote: 'once' }, 'the kept answer')
    t.equal(retry.headers.get('x-tollgate-replayed'), 'true')
    t.equal(readFileSync(file, 'utf8'), 'once\n', 'the handler acted once')
    const rows = await rowsOf(account)
    t.equal(rows.length, 1, 'one payment')
    t.equal(rows[0]!.status, 'served')
    const same = await db
      .selectFrom('payment_identifiers as i')
      .innerJoin('payments as p', 'p.id', 'i.payment_id')
      .select(sql<boolean>`i.created_at = p.created_at`.as('one_tx'))
      .where('i.payment_identifier', '=', state.id)
      .executeTakeFirstOrThrow()
    t.equal(same.one_tx, true, 'claimed in the transaction that recorded the payment (one now())')
  },
)
