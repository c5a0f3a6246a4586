import t from 'tap'
import { createPublicClient, createWalletClient, http, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { runCli, type Io } from '../../../src/cli/main.js'
import { wrapFetch } from '../../../src/client.js'
import { createAgentPayments } from '../../../src/services/agent-payments/agent-payments.js'
import { buildChallenge } from '../../../src/x402/challenge.js'
import { startWorkers } from '../../../workers/index.js'
import { until } from '../../helpers/until.js'
import { startBuyerPlatform, type BuyerPlatform } from '../../helpers/buyer.js'

const HOUR = 3_600_000
type Agent = Awaited<ReturnType<BuyerPlatform['agent']>>

t.test(
  "an agent's report never lowers its spend; only the chain's proof that a signature is unusable does",
  async (t) => {
    const p = await startBuyerPlatform(t)
    const { db } = p.deps
    const echo = `${p.proxyUrl}/tollgate/toolbox/echo?msg=x`
    const throws = `${p.proxyUrl}/tollgate/toolbox/throws`
    const challengeOf = async (url: string) => (await fetch(url)).headers.get('payment-required')!

    // transfers (opted out of the hosted endpoints' batch-settlement): what the chain proves of an exact signature
    const pay = async (agent: Agent, url: string, challenge: unknown) =>
      p.web.inject({
        method: 'POST',
        url: '/v1/agent/payments',
        headers: agent.auth,
        payload: { url, challenge, batch_settlement: false },
      })
    const report = async (agent: Agent, id: string, status: string) =>
      p.web.inject({
        method: 'POST',
        url: `/v1/agent/payments/${id}/outcome`,
        headers: agent.auth,
        payload: { status },
      })
    const spent = async (agent: Agent) =>
      (await p.web.inject({ method: 'GET', url: '/v1/agent', headers: agent.auth })).json().spent as {
        daily: string
        monthly: string
      }
    const row = (id: string) =>
      db.selectFrom('agent_payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    const events = async (id: string) =>
      (
        await db
          .selectFrom('agent_payment_events')
          .select('type')
          .where('agent_payment_id', '=', id)
          .orderBy('id')
          .execute()
      ).map((e) => e.type)
    /** the sweep as it runs once every authorization signed so far is past its validBefore (the chain's clock too) */
    const sweepLater = async () => {
      await p.chainTimeAtLeast(Math.floor(Date.now() / 1000) + 2 * 3600)
      const svc = createAgentPayments({ ...p.deps, now: () => new Date(Date.now() + 2 * HOUR), cacheAuth: false })
      try {
        return await svc.sweep(5000)
      } finally {
        await svc.close()
      }
    }
    const sweepNow = async () => {
      const svc = createAgentPayments({ ...p.deps, cacheAuth: false })
      try {
        return await svc.sweep(5000)
      } finally {
        await svc.close()
      }
    }

    const usedOnChain = (payer: string, nonce: string) =>
      p.deps.chain.readContract({
        address: p.devnet.usdcAddress,
        abi: usdcAbi,
        functionName: 'authorizationState',
        args: [payer as Hex, nonce as Hex],
      })

    // first: it settles on chain itself, before a later subtest moves the chain's clock past every validBefore
    t.test(
      'a seller elsewhere: a reported rejection cancels on chain; one the seller used first stays counted',
      async (t) => {
        const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '2000' } })
        const foreign = 'http://127.0.0.1:9/elsewhere/quote'
        const chain = p.deps.config.chain
        const ch = buildChallenge({
          resourceUrl: foreign,
          description: 'quote',
          mimeType: 'application/json',
          payTo: p.devnet.accounts.receiver.address,
          amount: 1000n,
          maxTimeoutSeconds: 60,
          method: 'GET',
          chain: { chainId: chain.chainId, network: chain.network, caip2: chain.caip2, usdc: chain.usdc },
        })
        const s = (await pay(agent, foreign, ch.v2HeaderValue)).json()
        const out = await report(agent, s.payment_id, 'rejected')
        t.equal(out.statusCode, 200)
        t.match(out.json(), { status: 'expired', counted: false, reason: /^released: the platform cancelled/ })
        t.same(await spent(agent), { daily: '0', monthly: '0' })

        // the seller (or the agent itself) submits the authorization before the report: the cancel cannot be sent
        const s2 = (await pay(agent, foreign, ch.v2HeaderValue)).json()
        const { payload } = JSON.parse(Buffer.from(s2.value, 'base64').toString()) as {
          payload: { signature: Hex; authorization: Record<string, string> }
        }
        const a = payload.authorization
        const wallet = createWalletClient({
          account: privateKeyToAccount(p.devnet.accounts.demoPayer.privateKey),
          chain: p.devnet.chain,
          transport: http(p.devnet.rpcUrl),
        })
        const hash = await wallet.writeContract({
          address: p.devnet.usdcAddress,
          abi: usdcAbi,
          functionName: 'transferWithAuthorization',
          args: [
            a.from as Hex,
            a.to as Hex,
            BigInt(a.value!),
            BigInt(a.validAfter!),
            BigInt(a.validBefore!),
            a.nonce as Hex,
            payload.signature,
          ],
        })
        t.equal(
          (
            await createPublicClient({
              chain: p.devnet.chain,
              transport: http(p.devnet.rpcUrl),
            }).waitForTransactionReceipt({
              hash,
            })
          ).status,
          'success',
        )
        const out2 = await report(agent, s2.payment_id, 'rejected')
        t.equal(out2.statusCode, 202)
        t.match(out2.json(), {
          status: 'reserved',
          counted: true,
          reason: /^still counted: the platform could not cancel/,
        })
        t.same(await spent(agent), { daily: '1000', monthly: '1000' })
      },
    )

    t.test(
      'the attack: served calls reported as rejected stay counted, so a daily cap of 5 calls serves 5 of 20, and they settle',
      async (t) => {
        const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '5000' } })
        const challenge = await challengeOf(echo)
        let served = 0
        const refused: string[] = []
        const answers = new Set<string>()
        for (let i = 0; i < 20; i++) {
          const signed = await pay(agent, echo, challenge)
          if (signed.statusCode !== 201) {
            refused.push(signed.json().code)
            continue
          }
          const s = signed.json()
          const call = await fetch(echo, { headers: { [s.header]: s.value } })
          await call.arrayBuffer()
          if (call.status === 200) served++
          const out = await report(agent, s.payment_id, 'rejected')
          const o = out.json()
          answers.add(
            `${out.statusCode} ${o.status} counted=${o.counted} until=${o.counted_until} ${o.reason.split(' (')[0]}`,
          )
        }
        t.equal(served, 5, 'at most the cap served')
        t.same(refused, Array(15).fill('spend_cap_exceeded'), 'the other 15 refused: the cap is spent')
        t.same(
          [...answers],
          [
            '202 reserved counted=true until=settlement or expiry still counted: the proxy recorded this payment as served, so only its settlement or expiry decides',
          ],
        )
        t.same(await spent(agent), { daily: '5000', monthly: '5000' }, 'GET /v1/agent shows the 5 calls')
        const payer = agent.address.toLowerCase()
        t.equal(
          (await db.selectFrom('payments').select('id').where('payer', '=', payer).execute()).length,
          5,
          'the proxy recorded 5 payments',
        )

        // they settle on chain; past validBefore the sweep finds them used: accepted, still counted
        const workers = await startWorkers(p.deps, {
          everyMs: {
            'topup-check': HOUR,
            'settlement-tick': 200,
            'recovery-sweep': HOUR,
            'balance-refresh': HOUR,
            'relayer-funds-check': HOUR,
          },
          log: { info: () => {}, warn: () => {}, error: () => {} },
        })
        try {
          await until(
            'the 5 payments to settle',
            async () =>
              (
                await db
                  .selectFrom('payments')
                  .select('status')
                  .where('payer', '=', payer)
                  .where('status', '=', 'settled')
                  .execute()
              ).length === 5,
          )
        } finally {
          await workers.close()
        }
        await sweepLater()
        const rows = await db.selectFrom('agent_payments').select('status').where('agent_id', '=', agent.id).execute()
        t.same(
          rows.map((r) => r.status),
          Array(5).fill('accepted'),
          'used on chain: accepted',
        )
        t.same(await spent(agent), { daily: '5000', monthly: '5000' }, 'still counted after the sweep')
      },
    )

    t.test(
      'a rejection reported before the payment is sent is cancelled on chain, then released; the proxy refuses it',
      async (t) => {
        const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '1000' } })
        const challenge = await challengeOf(echo)
        const s = (await pay(agent, echo, challenge)).json()
        const out = await report(agent, s.payment_id, 'rejected')
        t.equal(out.statusCode, 200)
        t.match(out.json(), {
          status: 'expired',
          counted: false,
          counted_until: null,
          reason: /^released: the platform cancelled the authorization on chain \(0x[0-9a-f]{64}\)/,
        })
        t.equal(await usedOnChain(agent.address, s.nonce), true, 'the nonce is spent on chain: it can never move funds')
        t.same(await spent(agent), { daily: '0', monthly: '0' })
        const call = await fetch(echo, { headers: { [s.header]: s.value } })
        t.equal(call.status, 402)
        t.equal(
          (await call.json()).error,
          'invalid_exact_evm_nonce_already_used',
          'the proxy refuses the released payment',
        )
        t.equal(
          (await db.selectFrom('payments').select('id').where('payer', '=', agent.address.toLowerCase()).execute())
            .length,
          0,
          'nothing recorded',
        )
        t.same(await events(s.payment_id), ['sending', 'rejected', 'cancelled'])
        t.equal((await pay(agent, echo, challenge)).statusCode, 201, 'the cap is free again')
      },
    )

    t.test(
      'a call the proxy voided stops counting once cancelled on chain: wrapFetch and the CLI ("not charged")',
      async (t) => {
        const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '1000' } })
        const res = await wrapFetch(fetch, { baseUrl: p.webUrl, agentKey: agent.key, batchSettlement: false })(throws)
        t.equal(res.status, 502)
        t.match(res.payment, { success: false })
        const id = res.payment!.agentPaymentId!
        t.equal(
          (await row(id)).status,
          'expired',
          'released as soon as the wrapper reported it and the cancel was mined',
        )
        t.same(await events(id), ['sending', 'error', 'cancelled'])
        t.same(await spent(agent), { daily: '0', monthly: '0' }, 'no sweep needed')
        const seller = await db
          .selectFrom('payments')
          .select('status')
          .where('payer', '=', agent.address.toLowerCase())
          .executeTakeFirstOrThrow()
        t.equal(seller.status, 'voided')

        // with a cap of one call, the CLI can pay again only because the first was released
        const err: string[] = []
        const out: Buffer[] = []
        const io: Io = {
          stdout: (c) => out.push(Buffer.from(c)),
          stderr: (l) => err.push(l),
          env: { TOLLGATE_API_URL: p.webUrl, TOLLGATE_AGENT_KEY: agent.key },
          home: '/nonexistent',
        }
        t.equal(await runCli(['fetch', throws, '--no-batch'], io), 3, err.join(''))
        t.match(err.join(''), /not charged: the call failed/)
        out.length = 0
        t.equal(await runCli(['budget', '--json'], io), 0)
        t.match(JSON.parse(Buffer.concat(out).toString()), { spent: { daily: '0' } }, 'the budget shows nothing spent')
      },
    )

    t.test('a voided call the agent never reports stays counted until the chain is past its validBefore', async (t) => {
      const agent = await p.agent({ fund: 1_000_000n, caps: { daily: '1000' } })
      const s = (await pay(agent, throws, await challengeOf(throws))).json()
      t.equal((await fetch(throws, { headers: { [s.header]: s.value } })).status, 502)
      const swept = await sweepNow()
      t.equal(swept.released, 0, 'voided is not proof: the signature stays valid on chain')
      t.same(await spent(agent), { daily: '1000', monthly: '1000' })
      t.equal((await pay(agent, throws, await challengeOf(throws))).json().code, 'spend_cap_exceeded', 'the cap holds')
      await sweepLater()
      t.equal((await row(s.payment_id)).status, 'expired', 'unused on chain past validBefore')
      t.same(await spent(agent), { daily: '0', monthly: '0' }, 'released then')
    })
  },
)
