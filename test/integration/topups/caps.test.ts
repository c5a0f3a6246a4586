/**
 * Issue #33 §1: top-ups never fund spending that the caps would not allow. A top-up is at most
 * what the agent's caps still let it spend less what its wallet already holds; the figure asserted
 * is what left the user's funding wallet against the daily cap.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { createPublicClient, createWalletClient, http, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../../../src/chain/devnet.js'
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { createAgents } from '../../../src/services/accounts/agents.js'
import { createUsers } from '../../../src/services/accounts/users.js'
import { createTopups } from '../../../src/services/topups/topups.js'
import { ensureFundingWallet } from '../../../src/services/wallets/funding-wallet.js'
import { MASTER_KEY, startBuyerPlatform } from '../../helpers/buyer.js'
import { decodeRequired } from '../../helpers/pay.js'

const CAP = 5000n
const PRICE = 1000n // the echo endpoint's price

const p = await startBuyerPlatform(t)
const { deps, devnet } = p
const masterKey = Buffer.from(MASTER_KEY, 'hex')
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
const submitter = createWalletClient({
  account: privateKeyToAccount(devnet.accounts.demoPayer.privateKey),
  chain: devnet.chain,
  transport: http(devnet.rpcUrl),
})
const echo = `${p.proxyUrl}/tollgate/toolbox/echo?msg=x`
const balanceOf = (who: string) =>
  pub.readContract({ address: devnet.usdcAddress, abi: usdcAbi, functionName: 'balanceOf', args: [who as Hex] })

/** A user with a funding wallet holding 1 USDC and an agent (daily cap 5,000) with top-ups of `amount` below `threshold`. */
async function setup(o: { fund?: bigint; threshold: bigint; amount: bigint }) {
  const user = await createUsers({ db: deps.db }).create(
    `c${randomBytes(4).toString('hex')}@example.com`,
    'correct horse battery',
  )
  const fw = await ensureFundingWallet(deps.db, masterKey, user.id)
  await mintUsdc(devnet.rpcUrl, fw.address as Hex, 1_000_000n)
  const agent = await p.agent({
    user: user.id,
    fund: o.fund,
    caps: { daily: CAP.toString() },
    allow: [{ kind: 'namespace', value: 'tollgate' }],
  })
  await createAgents({ db: deps.db, masterKey: () => masterKey }).update(user.id, agent.address, {
    top_up: { enabled: true, threshold: o.threshold.toString(), amount: o.amount.toString() },
  })
  return { agent, funding: fw.address }
}

/** The echo endpoint's exact requirement alone, as the agent would send it. */
async function exactChallenge(): Promise<string> {
  const ch = decodeRequired((await fetch(echo)).headers.get('payment-required')!) as unknown as {
    accepts: Array<{ scheme: string }>
  }
  ch.accepts = ch.accepts.filter((a) => a.scheme === 'exact')
  return Buffer.from(JSON.stringify(ch)).toString('base64')
}

/** The agent has the platform sign a payment of the echo endpoint's price (counted against its caps). */
async function sign(agent: { auth: { authorization: string } }) {
  return p.web.inject({
    method: 'POST',
    url: '/v1/agent/payments',
    headers: agent.auth,
    payload: { url: echo, challenge: await exactChallenge() },
  })
}

/** Submits a signed EIP-3009 payment itself, as an agent holding the header would; true when it moved funds. */
async function submitItself(value: string): Promise<boolean> {
  const { payload } = JSON.parse(Buffer.from(value, 'base64').toString()) as {
    payload: { signature: Hex; authorization: Record<string, string> }
  }
  const a = payload.authorization
  try {
    const hash = await submitter.writeContract({
      address: devnet.usdcAddress,
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
    return (await pub.waitForTransactionReceipt({ hash })).status === 'success'
  } catch {
    return false
  }
}

t.test('a top-up of 100,000 for an agent with a daily cap of 5,000 brings at most 5,000 − spent', async (t) => {
  const s = await setup({ fund: PRICE, threshold: 2000n, amount: 100_000n })
  // one payment signed and not settled yet: counted against the cap, still in the wallet
  const r = await sign(s.agent)
  t.equal(r.statusCode, 201, 'signed')
  const topups = createTopups(deps, { backoffMs: 20, receiptTimeoutMs: 20_000 })
  const before = await balanceOf(s.funding)
  const run = await topups.runOnce()
  t.equal(run.created, 1)
  t.same(
    run.processed.map((x) => x.status),
    ['confirmed'],
  )
  const got = before - (await balanceOf(s.funding))
  t.ok(got <= CAP - PRICE, `topped up ${got} ≤ cap − spent ${CAP - PRICE}`)
  t.equal(got, CAP - PRICE - PRICE, 'cap − spent − what the wallet holds')
  t.equal(await balanceOf(s.agent.address), CAP - PRICE, 'the wallet holds exactly what the cap still allows')
  const [row] = await topups.listForAgent(s.agent.id)
  t.equal(row!.amount, (CAP - 2n * PRICE).toString(), 'the top-up records the amount paid')
  // the balance is above the threshold now: no further need
  t.equal((await topups.runOnce()).created, 0)
})

t.test('an agent at its cap below its threshold gets no top-up', async (t) => {
  const s = await setup({ fund: CAP, threshold: CAP + 1n, amount: 100_000n })
  for (let i = 0; i < Number(CAP / PRICE); i++) t.equal((await sign(s.agent)).statusCode, 201)
  const topups = createTopups(deps, { backoffMs: 20, receiptTimeoutMs: 20_000 })
  const before = await balanceOf(s.funding)
  t.equal((await topups.runOnce()).created, 0, 'no need opened: the caps allow nothing more')
  t.equal(await balanceOf(s.funding), before)
  t.same(await topups.listForAgent(s.agent.id), [])
})

t.test('§1 with top-ups on, an agent spending in a loop draws no more than its cap', async (t) => {
  const s = await setup({ threshold: 2000n, amount: 100_000n })
  const topups = createTopups(deps, { backoffMs: 20, receiptTimeoutMs: 20_000 })
  const before = await balanceOf(s.funding)
  let moved = 0n
  for (let i = 0; i < 12; i++) {
    await topups.runOnce()
    const r = await sign(s.agent)
    if (r.statusCode !== 201) continue
    // the agent submits the signature itself, then claims the payment was rejected (the attack)
    if (await submitItself(r.json().value)) moved += PRICE
    await p.web.inject({
      method: 'POST',
      url: `/v1/agent/payments/${r.json().payment_id}/outcome`,
      headers: s.agent.auth,
      payload: { status: 'rejected' },
    })
  }
  await topups.runOnce()
  const drawn = before - (await balanceOf(s.funding))
  t.ok(drawn <= CAP, `drawn ${drawn} from the funding wallet ≤ daily cap ${CAP} (agent moved ${moved})`)
  t.ok(moved <= CAP, `moved ${moved} ≤ cap`)
  t.ok(drawn > 0n, 'top-ups still run within the caps')
})
