import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { runCli } from '../../../src/cli/main.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { decodeUpstreamConfig } from '../../../src/services/publishing/upstream-config.js'
import { custodialAccount, walletAad } from '../../../src/services/wallets/custodial-wallet.js'
import {
  MasterKeyRotationError,
  rotateMasterKey,
  walletsUnderOtherKeys,
} from '../../../src/services/wallets/rotate-master-key.js'
import { decryptSecret, envelopeKeyId, masterKeyId } from '../../../src/secrets/wallet-crypto.js'
import { createDeps, type Deps } from '../../../src/deps.js'
import { TEST_DATABASE_URL } from '../../helpers/test-env.js'
import { accountsApp, MASTER_KEY, userWithKey } from '../../helpers/accounts.js'

const OLD = Buffer.from(MASTER_KEY, 'hex')
const HEADER_VALUE = 'upstream-secret-value-0123456789abcdef'

interface Secrets {
  wallets: Map<string, { kind: 'agent' | 'funding'; key: string }>
  endpoints: Map<string, { header: string; signing: string }>
}

/** A user with two agents, a funding wallet and an upstream endpoint with a forwarded header, all under OLD. */
async function seed(t: Test) {
  const seen: IncomingHttpHeaders[] = []
  const upstream = createServer((q, r) => {
    seen.push(q.headers)
    r.end('ok')
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => upstream.close(r)))
  const env = { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' }
  const { deps, app } = await accountsApp(t, env)
  const u = await userWithKey(deps)
  const H = u.auth
  for (const name of ['a1', 'a2'])
    t.equal((await app.inject({ method: 'POST', url: '/v1/agents', headers: H, payload: { name } })).statusCode, 201)
  t.equal((await app.inject({ method: 'GET', url: '/v1/funding-wallet', headers: H })).statusCode, 200)
  t.equal(
    (await app.inject({ method: 'POST', url: '/v1/sellers', headers: H, payload: { namespace: 'rot' } })).statusCode,
    201,
  )
  const agent = (await app.inject({ method: 'GET', url: '/v1/agents', headers: H })).json().data[0]
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/sellers/rot/services',
        headers: H,
        payload: { name: 'svc', pay_to: agent.address },
      })
    ).statusCode,
    201,
  )
  const ep = await app.inject({
    method: 'POST',
    url: '/v1/sellers/rot/services/svc/endpoints',
    headers: H,
    payload: {
      slug: 'up-one',
      price: '5',
      upstream_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`,
      upstream: { forward_headers: { 'x-upstream-key': HEADER_VALUE } },
    },
  })
  t.equal(ep.statusCode, 201)
  return { deps, app, u, env, seen, secrets: await plaintexts(deps, [OLD]) }
}

/** Every stored secret, decrypted with `keys` (throws if one does not open). */
async function plaintexts(deps: Deps, keys: Buffer[]): Promise<Secrets> {
  const wallets = new Map<string, { kind: 'agent' | 'funding'; key: string }>()
  for (const [table, kind] of [
    ['agents', 'agent'],
    ['funding_wallets', 'funding'],
  ] as const) {
    for (const r of await deps.db.selectFrom(table).select(['address', 'encrypted_key']).execute()) {
      wallets.set(r.address, { kind, key: decryptSecret(keys, r.encrypted_key, walletAad(kind, r.address)) })
    }
  }
  const endpoints = new Map<string, { header: string; signing: string }>()
  for (const e of await deps.db
    .selectFrom('endpoints')
    .select(['id', 'upstream_config'])
    .where('upstream_config', 'is not', null)
    .execute()) {
    const d = decodeUpstreamConfig(e.upstream_config, e.id, keys)
    endpoints.set(e.id, { header: d.headers['x-upstream-key']!, signing: d.signingSecret })
  }
  return { wallets, endpoints }
}

/** Every envelope as stored (to prove nothing changed, or which key id each uses). */
async function envelopes(deps: Deps): Promise<string[]> {
  const out: string[] = []
  for (const table of ['agents', 'funding_wallets'] as const) {
    for (const r of await deps.db.selectFrom(table).select('encrypted_key').orderBy('address').execute())
      out.push(r.encrypted_key)
  }
  for (const e of await deps.db
    .selectFrom('endpoints')
    .select('upstream_config')
    .where('upstream_config', 'is not', null)
    .orderBy('id')
    .execute()) {
    const c = e.upstream_config as { forward_headers: Array<{ value: string }>; signing_secret: string }
    out.push(...c.forward_headers.map((h) => h.value), c.signing_secret)
  }
  return out
}

t.test('rotateMasterKey against Postgres: re-encrypted, same plaintext, idempotent, wrong key refused', async (t) => {
  const { deps, env, seen, secrets, u } = await seed(t)
  t.equal(secrets.wallets.size, 3, 'two agents and a funding wallet')
  t.equal(secrets.endpoints.size, 1)
  const NEW = randomBytes(32)
  const before = await envelopes(deps)
  t.equal(before.length, 5)
  t.ok(
    before.every((b) => envelopeKeyId(b) === masterKeyId(OLD)),
    'everything starts under the old key',
  )

  // a wrong old key: refused before any write
  const wrong = randomBytes(32)
  const refused = await rotateMasterKey(deps.db, [wrong], NEW).then(
    () => null,
    (e: unknown) => e,
  )
  t.type(refused, MasterKeyRotationError)
  t.equal((refused as MasterKeyRotationError).undecryptable, 4, 'three wallets and one endpoint do not open')
  t.same((refused as MasterKeyRotationError).keyIds, [masterKeyId(OLD)])
  t.match((refused as Error).message, /nothing was changed/)
  t.notOk(
    (refused as Error).message.includes(OLD.toString('hex')) ||
      (refused as Error).message.includes(wrong.toString('hex')),
    'the error names key ids, never keys',
  )
  t.same(await envelopes(deps), before, 'a refused rotation changed nothing')

  // a dry run counts and writes nothing
  t.same(await rotateMasterKey(deps.db, [OLD], NEW, { dryRun: true }), {
    agents: 2,
    funding_wallets: 1,
    endpoints: 1,
    platform_keys: 0,
  })
  t.same(await envelopes(deps), before)

  // the rotation (small pages, to go through the paging)
  t.same(await rotateMasterKey(deps.db, [OLD], NEW, { pageSize: 1 }), {
    agents: 2,
    funding_wallets: 1,
    endpoints: 1,
    platform_keys: 0,
  })
  const after = await envelopes(deps)
  t.ok(
    after.every((b) => envelopeKeyId(b) === masterKeyId(NEW)),
    'every envelope names the new key id',
  )
  t.ok(
    after.every((b, i) => b !== before[i]),
    'every envelope was rewritten',
  )
  t.same(await plaintexts(deps, [NEW]), secrets, 'the new key alone decrypts everything to the same plaintext')
  await t.rejects(plaintexts(deps, [OLD]), /no master key with id/, 'the old key alone no longer opens them')
  for (const [address, w] of secrets.wallets) {
    const row = await deps.db
      .selectFrom(w.kind === 'agent' ? 'agents' : 'funding_wallets')
      .select('encrypted_key')
      .where('address', '=', address)
      .executeTakeFirstOrThrow()
    t.equal(
      custodialAccount([NEW], w.kind, address, row.encrypted_key).address,
      address,
      `${w.kind} wallet ${address.slice(0, 8)} still signs as itself`,
    )
  }

  // a rerun is a no-op
  t.same(await rotateMasterKey(deps.db, [OLD], NEW), { agents: 0, funding_wallets: 0, endpoints: 0, platform_keys: 0 })
  t.same(await envelopes(deps), after, 'the rerun rewrote nothing')
  // ... even with a wrong old key: nothing is left under an old key
  t.same(await rotateMasterKey(deps.db, [wrong], NEW), {
    agents: 0,
    funding_wallets: 0,
    endpoints: 0,
    platform_keys: 0,
  })

  // a process still on the old key writes a new agent meanwhile: the rerun picks up just that row
  const lagging = await accountsApp(t, { ...env, DATABASE_SCHEMA: deps.config.databaseSchema })
  t.equal(
    (await lagging.app.inject({ method: 'POST', url: '/v1/agents', headers: u.auth, payload: { name: 'late' } }))
      .statusCode,
    201,
  )
  t.same(await rotateMasterKey(deps.db, [OLD], NEW), { agents: 1, funding_wallets: 0, endpoints: 0, platform_keys: 0 })
  t.ok((await envelopes(deps)).every((b) => envelopeKeyId(b) === masterKeyId(NEW)))

  // the platform on the new key uses the rotated secrets: the upstream test call forwards the same header value
  const onNew = createDeps({ ...deps.config, masterKey: NEW })
  t.teardown(() => onNew.close())
  const app = await buildWebApp(onNew, { logger: false })
  t.teardown(() => app.close())
  const tested = await app.inject({
    method: 'POST',
    url: '/v1/sellers/rot/services/svc/endpoints/up-one/test',
    headers: u.auth,
    payload: {},
  })
  t.equal(tested.statusCode, 200, tested.body)
  t.equal(seen.at(-1)?.['x-upstream-key'], HEADER_VALUE, 'the upstream got the same header value')
  t.match(String(seen.at(-1)?.['x-tollgate-signature']), /^t=\d+,v1=[0-9a-f]{64}$/)
})

t.test('tollgate keys rotate-master: env keys, --dry-run, --help, refuses a wrong key with exit 1', async (t) => {
  const { deps } = await seed(t)
  const NEW = randomBytes(32)
  const out: string[] = []
  const err: string[] = []
  const cli = (args: string[], extra: Record<string, string | undefined> = {}) => {
    out.length = 0
    err.length = 0
    return runCli(['keys', ...args], {
      stdout: (c) => void out.push(String(c)),
      stderr: (l) => void err.push(l),
      env: {
        DATABASE_URL: TEST_DATABASE_URL,
        DATABASE_SCHEMA: deps.config.databaseSchema,
        TOLLGATE_MASTER_KEY_OLD: MASTER_KEY,
        TOLLGATE_MASTER_KEY_NEW: NEW.toString('base64'),
        ...extra,
      },
    })
  }
  t.equal(await cli(['rotate-master', '--help']), 0)
  t.match(out.join(''), /TOLLGATE_MASTER_KEY_OLD[\s\S]*TOLLGATE_MASTER_KEY_NEW[\s\S]*--dry-run/)
  t.equal(await cli(['--help']), 0)
  t.match(
    (await runCli(['--help'], { stdout: (c) => void out.push(String(c)), stderr: () => {}, env: {} }), out.join('')),
    /keys rotate-master/,
  )

  // usage errors: exit 1 with a message naming the variable, never its value
  t.equal(await cli(['rotate-master'], { TOLLGATE_MASTER_KEY_NEW: undefined }), 1)
  t.match(err.join(''), /TOLLGATE_MASTER_KEY_NEW is not set/)
  t.equal(await cli(['rotate-master'], { TOLLGATE_MASTER_KEY_OLD: 'not-a-key' }), 1)
  t.match(err.join(''), /TOLLGATE_MASTER_KEY_OLD: expected 32-byte keys/)
  t.notOk(err.join('').includes('not-a-key'))
  t.equal(await cli(['rotate-master', '--bogus']), 1)
  t.equal(await cli(['spin']), 1)

  const before = await envelopes(deps)
  const wrong = randomBytes(32).toString('hex')
  t.equal(await cli(['rotate-master'], { TOLLGATE_MASTER_KEY_OLD: wrong }), 1)
  t.match(err.join(''), /4 stored secret\(s\) cannot be decrypted .*nothing was changed/)
  t.notOk(err.join('').includes(wrong) || err.join('').includes(MASTER_KEY), 'no key in the output')
  t.same(await envelopes(deps), before, 'nothing changed')

  t.equal(await cli(['rotate-master', '--dry-run']), 0)
  t.match(
    out.join(''),
    /dry run: every secret decrypts; would re-encrypt 2 agent wallet key\(s\), 1 funding wallet key\(s\), 1 endpoint\(s\)/,
  )
  t.same(await envelopes(deps), before)

  // several old keys (comma-separated), one of them right
  t.equal(await cli(['rotate-master'], { TOLLGATE_MASTER_KEY_OLD: `${wrong},${MASTER_KEY}` }), 0, err.join(''))
  t.match(
    out.join(''),
    new RegExp(
      `re-encrypted 2 agent wallet key\\(s\\), 1 funding wallet key\\(s\\), 1 endpoint\\(s\\) with upstream secrets, 0 platform key\\(s\\) under master key id ${masterKeyId(NEW)}`,
    ),
  )
  t.ok((await envelopes(deps)).every((b) => envelopeKeyId(b) === masterKeyId(NEW)))
  t.equal(await cli(['rotate-master']), 0)
  t.match(
    out.join(''),
    /re-encrypted 0 agent wallet key\(s\), 0 funding wallet key\(s\), 0 endpoint\(s\)/,
    'rerun: nothing to do',
  )
  t.notOk(out.join('').includes(MASTER_KEY) || out.join('').includes(NEW.toString('base64')), 'no key in the output')
})

t.test('walletsUnderOtherKeys counts the wallets a process with other keys cannot open', async (t) => {
  const { deps } = await seed(t)
  const other = randomBytes(32)
  t.same(
    await walletsUnderOtherKeys(deps.db, OLD),
    { agents: 0, funding_wallets: 0 },
    'the key they were made with opens all',
  )
  t.same(await walletsUnderOtherKeys(deps.db, other), { agents: 2, funding_wallets: 1 }, 'another key opens none')
  t.same(
    await walletsUnderOtherKeys(deps.db, other, [OLD]),
    { agents: 0, funding_wallets: 0 },
    'with the old key kept beside it, all again',
  )
})
