/**
 * Issue #33 §5: a service's payee that no seller can spend from is refused at publish; a withdrawal
 * is validated as docs/api.md states it (EIP-55 checksum, amount a string, no unknown fields);
 * an agent signs in only where the seller itself offers that sign-in.
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { getAddress, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { buildChallenge, paymentRequiredHeader } from '../../../src/x402/challenge.js'
import { userWithKey } from '../../helpers/accounts.js'
import { startBuyerPlatform } from '../../helpers/buyer.js'

const p = await startBuyerPlatform(t, { env: { TOLLGATE_ALLOW_PRIVATE_UPSTREAMS: 'true' } })
const { deps, devnet } = p
const owner = await userWithKey(deps)
const chain = deps.config.chain

t.test('publish: the zero address, the USDC contract and our relayers are refused as pay_to', async (t) => {
  const post = (url: string, payload: object) => p.web.inject({ method: 'POST', url, headers: owner.auth, payload })
  t.equal((await post('/v1/sellers', { namespace: 'guard-seller' })).statusCode, 201)
  const cases: Array<[string, string, RegExp]> = [
    ['zero', '0x0000000000000000000000000000000000000000', /the zero address/],
    ['usdc', chain.usdc.address, /the USDC token contract/],
    ['relayer', devnet.accounts.relayers[0]!.address, /relayers/],
  ]
  for (const [name, payTo, why] of cases) {
    const r = await post('/v1/sellers/guard-seller/services', { name: `svc-${name}`, pay_to: payTo })
    t.equal(r.statusCode, 400, name)
    t.match(r.json(), { code: 'invalid_parameter', param: 'pay_to', message: why }, name)
  }
  const ok = await post('/v1/sellers/guard-seller/services', {
    name: 'svc-ok',
    pay_to: devnet.accounts.receiver.address,
  })
  t.equal(ok.statusCode, 201, 'a wallet is accepted')
  const patched = await p.web.inject({
    method: 'PATCH',
    url: '/v1/sellers/guard-seller/services/svc-ok',
    headers: owner.auth,
    payload: { pay_to: '0x0000000000000000000000000000000000000000' },
  })
  t.equal(patched.statusCode, 400, 'nor can a service be changed to one')
})

t.test('withdrawals: a bad checksum, a number amount and unknown fields are refused; nothing is sent', async (t) => {
  const agent = await p.agent({ user: owner.userId, fund: 5_000_000n })
  const balance = () =>
    deps.chain.readContract({
      address: chain.usdc.address,
      abi: usdcAbi,
      functionName: 'balanceOf',
      args: [agent.address as Address],
    })
  const before = await balance()
  const to = getAddress(privateKeyToAccount(generatePrivateKey()).address)
  // flip the case of one letter of the checksummed form: a typo EIP-55 catches
  const i = [...to].findIndex((c, k) => k > 1 && /[a-fA-F]/.test(c))
  const typo =
    to.slice(0, i) + (to[i] === to[i]!.toLowerCase() ? to[i]!.toUpperCase() : to[i]!.toLowerCase()) + to.slice(i + 1)
  const post = (payload: object) =>
    p.web.inject({
      method: 'POST',
      url: `/v1/agents/${agent.address}/withdrawals`,
      headers: { ...owner.auth, 'idempotency-key': randomUUID() },
      payload,
    })
  const bad = [
    [{ to: typo, amount: '1000' }, 'to', /EIP-55 checksum/],
    [{ to, amount: 1000 }, 'amount', /string/],
    [{ to, amount: '1000', memo: 'hi' }, 'memo', /not a field of this request/],
  ] as const
  for (const [body, param, message] of bad) {
    const r = await post(body)
    t.equal(r.statusCode, 400, JSON.stringify(body))
    t.match(r.json(), { code: 'invalid_parameter', param, message }, param)
  }
  t.equal(
    (await post({ to: to.toLowerCase(), amount: '1000' })).statusCode,
    201,
    'an all-lower-case address has no checksum to fail',
  )
  t.equal((await post({ to, amount: '1000' })).statusCode, 201, 'the checksummed form')
  t.ok((await balance()) >= before - 2000n, 'only the two valid withdrawals leave the wallet')
})

t.test('sign-in: with an empty allowlist the agent signs only a sign-in the seller itself offers', async (t) => {
  const agent = await p.agent({ user: owner.userId })
  // a host that answers 402 without any sign-in
  const server = createServer((req, res) => {
    const url = `http://localhost:${(server.address() as AddressInfo).port}${req.url}`
    const ch = buildChallenge({
      resourceUrl: url,
      description: 'x',
      mimeType: 'application/json',
      payTo: devnet.accounts.receiver.address,
      amount: 1000n,
      maxTimeoutSeconds: 60,
      method: 'GET',
      chain: { chainId: chain.chainId, network: chain.network, caip2: chain.caip2, usdc: chain.usdc },
    })
    res.writeHead(402, { 'payment-required': ch.v2HeaderValue }).end('{}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const url = `http://localhost:${(server.address() as AddressInfo).port}/account/login`
  // the agent writes its own sign-in for that domain, with a statement of its choosing
  const forged = buildChallenge({
    resourceUrl: url,
    description: 'x',
    mimeType: 'application/json',
    payTo: devnet.accounts.receiver.address,
    amount: 1000n,
    maxTimeoutSeconds: 60,
    method: 'GET',
    chain: { chainId: chain.chainId, network: chain.network, caip2: chain.caip2, usdc: chain.usdc },
    signIn: {
      domain: new URL(url).host,
      uri: url,
      statement: 'I approve moving all my funds',
      chainIds: [chain.caip2],
    },
  })
  let signed = 0
  const codes = new Set<string>()
  for (let k = 0; k < 10; k++) {
    const r = await p.web.inject({
      method: 'POST',
      url: '/v1/agent/sign-in',
      headers: agent.auth,
      payload: { url, challenge: paymentRequiredHeader(forged) },
    })
    if (r.statusCode === 200 || r.statusCode === 201) signed++
    codes.add(`${r.statusCode} ${r.json().code}`)
  }
  t.equal(signed, 0, 'nothing signed')
  t.same([...codes], ['403 seller_not_allowed'])
})
