/**
 * `upto` settlement on a chain whose upto proxy follows the reference's rules, as public chains
 * run it: only the witness's facilitator itself may call `settle` (never Multicall3), and no proxy
 * event names the payment. The settler reads the proxy's code, sends each upto payment in its own
 * transaction from the facilitator (exact ones still share a Multicall3 batch), records each before
 * it is broadcast, and decides each from the token's transfer in its receipt. A settler killed after
 * broadcasting, and a payment settled on chain outside any recorded transaction, are both resolved.
 */
import t, { type Test } from 'tap'
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { erc20Abi, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { UPTO_PROXY_ADDRESS, uptoSettlementPath } from '../../../src/chain/permit2.js'
import { MULTICALL3_ADDRESS } from '../../../src/chain/multicall3-abi.js'
import type { Payment } from '../../../src/db/database.js'
import { settleCall, simulateBatch } from '../../../src/services/settlement/chain-ops.js'
import { createSettler } from '../../../src/services/settlement/settler.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { installReferenceRulesProxy } from '../../helpers/upto-reference-proxy.js'
import { enableUpto, uptoBuyer, walletFor } from '../../helpers/settlement.js'

const path = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'
const PRICE = 1000n

async function startPlatform(t: Test) {
  const platform = await startTestPlatform(t)
  const { deps } = platform
  await enableUpto(platform)
  t.equal(await uptoSettlementPath(deps.chain), 'batch', 'the devnet runs our proxy, which batches')
  await installReferenceRulesProxy(platform)
  t.equal(await uptoSettlementPath(deps.chain), 'direct', 'any other proxy: one transaction per payment')
  const { url } = await platform.startProxy()
  return { platform, url }
}

/** A new buyer (Permit2 approved) and what each case needs around it. */
async function newBuyer(t: Test, { platform, url }: Awaited<ReturnType<typeof startPlatform>>) {
  const { deps } = platform
  const buyer = await uptoBuyer(platform, 100_000n)
  const account = privateKeyToAccount(buyer.key)
  const payUpto = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:84532', client: new UptoEvmScheme(account) }],
  })
  const payExact = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:84532', client: new ExactEvmScheme(account) }],
  })
  const call = async (pay: typeof fetch) => {
    const res = await pay(`${url}${path}`)
    await res.arrayBuffer()
    t.equal(res.status, 200)
  }
  const payments = () =>
    deps.db
      .selectFrom('payments')
      .selectAll()
      .where('payer', '=', buyer.address.toLowerCase())
      .orderBy('created_at')
      .execute() as Promise<Payment[]>
  const balance = () =>
    deps.chain.readContract({
      address: deps.config.chain.usdc.address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [buyer.address],
    })
  return { platform, deps, buyer, payUpto, payExact, call, payments, balance }
}

// one platform and chain for the three cases, each with its own buyer
const started = startPlatform(t)

t.test('upto payments settle one transaction each where the proxy refuses Multicall3', async (t) => {
  const { deps, payUpto, payExact, call, payments, balance } = await newBuyer(t, await started)
  for (let i = 0; i < 3; i++) await call(payUpto)
  for (let i = 0; i < 2; i++) await call(payExact)
  const served = await payments()
  t.same(served.map((p) => p.scheme).sort(), ['exact', 'exact', 'upto', 'upto', 'upto'])

  // the fixture really holds the reference's rule: through Multicall3 the upto settle reverts
  const uptoRows = served.filter((p) => p.scheme === 'upto')
  // the relayer the endpoint names as facilitator
  const relayerAddress = uptoRows[0]!.facilitator!
  const sim = await simulateBatch(deps.chain, relayerAddress as Hex, deps.config.chain.usdc.address, uptoRows)
  t.same(sim, ['UnauthorizedFacilitator', 'UnauthorizedFacilitator', 'UnauthorizedFacilitator'])

  // two in flight at a time: the third follows their receipts
  const stats = await createSettler(deps, { directInFlight: 2 }).runOnce()
  t.equal(stats.settled, 5, 'every payment settled')
  t.equal(stats.batches, 4, 'one Multicall3 batch for the exact payments, one transaction per upto payment')
  const settled = await payments()
  t.same(
    settled.map((p) => p.status),
    ['settled', 'settled', 'settled', 'settled', 'settled'],
  )
  t.equal(await balance(), 100_000n - 5n * PRICE, 'charged once each')
  const hashes = settled.filter((p) => p.scheme === 'upto').map((p) => p.tx_hash!)
  t.equal(new Set(hashes).size, 3, 'a transaction per upto payment')
  for (const hash of hashes) {
    const tx = await deps.chain.getTransaction({ hash: hash as Hex })
    t.equal(tx.to?.toLowerCase(), UPTO_PROXY_ADDRESS.toLowerCase(), 'sent to the proxy itself')
    t.equal(tx.from.toLowerCase(), relayerAddress.toLowerCase(), 'by the facilitator')
  }
  const exactHashes = new Set(settled.filter((p) => p.scheme === 'exact').map((p) => p.tx_hash!))
  t.equal(exactHashes.size, 1, 'the exact payments share one batch')
  const batchTx = await deps.chain.getTransaction({ hash: [...exactHashes][0] as Hex })
  t.equal(batchTx.to?.toLowerCase(), MULTICALL3_ADDRESS.toLowerCase())
  const batches = await deps.db
    .selectFrom('settlement_batches as b')
    .select(['b.size', 'b.status'])
    .where('b.id', 'in', (q) =>
      q
        .selectFrom('settlement_batch_items')
        .select('batch_id')
        .where(
          'payment_id',
          'in',
          settled.map((p) => p.id),
        ),
    )
    .execute()
  t.same(batches.map((b) => b.size).sort(), [1, 1, 1, 2], 'each recorded before it was sent')
  t.ok(batches.every((b) => b.status === 'confirmed'))
})

t.test(
  'a settler killed after broadcasting its direct transactions: the sweep settles them from the receipts',
  async (t) => {
    const { deps, payUpto, call, payments, balance } = await newBuyer(t, await started)
    for (let i = 0; i < 2; i++) await call(payUpto)
    let sent = 0
    const dying = createSettler(deps, {
      hooks: {
        afterSend: async () => {
          if (++sent === 2) throw new Error('settler died after broadcasting')
        },
      },
    })
    await t.rejects(dying.runOnce(), /died after broadcasting/)
    t.same(
      (await payments()).map((p) => p.status),
      ['settling', 'settling'],
      'left settling, both transactions pending',
    )
    const restarted = createSettler(deps, { stuckAfterMs: 0, receiptTimeoutMs: 5_000 })
    await restarted.sweep()
    t.same(
      (await payments()).map((p) => p.status),
      ['settled', 'settled'],
      'decided from the token transfers in their receipts',
    )
    t.equal(await balance(), 100_000n - 2n * PRICE)
  },
)

t.test('an upto payment settled on chain outside any recorded transaction is found from the token logs', async (t) => {
  const { platform, deps, payUpto, call, payments, balance } = await newBuyer(t, await started)
  await call(payUpto)
  const [p] = await payments()
  // the facilitator settles it itself, as if another worker had and its record were lost
  const { target, callData } = settleCall(p!)
  const facilitatorKey = deps.config.relayerKeys.find(
    (k) => privateKeyToAccount(k).address.toLowerCase() === p!.facilitator,
  )!
  const wallet = walletFor(platform, facilitatorKey)
  const hash = await wallet.sendTransaction({ to: target, data: callData })
  t.equal((await deps.chain.waitForTransactionReceipt({ hash })).status, 'success')

  const stats = await createSettler(deps).runOnce()
  t.equal(stats.settled, 1)
  t.equal(stats.batches, 0, 'nothing sent: the nonce was already used')
  const [after] = await payments()
  t.equal(after!.status, 'settled')
  t.equal(after!.tx_hash?.toLowerCase(), hash.toLowerCase(), 'the transaction that used it, found in the logs')
  t.equal(await balance(), 100_000n - PRICE, 'charged once')
})
