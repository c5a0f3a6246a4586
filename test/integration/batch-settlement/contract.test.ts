/**
 * Tollgate's dev-chain build of the x402 batch-settlement contracts, installed by the devnet at their
 * canonical addresses, against the official `@x402/evm` batch-settlement client (unmodified): deposits
 * through the ERC-3009 collector, one claimWithSignature for several channels, settle, cooperative
 * refund, the refusals, and the timed withdrawal.
 */
import {
  BATCH_SETTLEMENT_ADDRESS as OFFICIAL_SETTLEMENT,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS as OFFICIAL_ERC3009,
  toClientEvmSigner,
} from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import t from 'tap'
import {
  BaseError,
  createTestClient,
  decodeErrorResult,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  http,
  maxUint256,
  parseEther,
  type Hex,
  type PrivateKeyAccount,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_USDC_ADDRESS, mintUsdc, type Devnet } from '../../../src/chain/devnet.js'
import { batchSettlementAbi } from '../../../src/chain/batch-settlement/abi.js'
import {
  BATCH_SETTLEMENT_ADDRESS,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  PERMIT2_DEPOSIT_COLLECTOR_ADDRESS,
} from '../../../src/chain/batch-settlement/addresses.js'
import { signClaimBatch, signRefund } from '../../../src/chain/batch-settlement/authorizer.js'
import {
  claimEntries,
  encodeClaimWithSignature,
  encodeDeposit,
  encodeRefundWithSignature,
  encodeSettle,
  type VoucherClaimInput,
} from '../../../src/chain/batch-settlement/calldata.js'
import {
  channelIdOf,
  normalizeConfig,
  readChannel,
  type ChannelConfig,
} from '../../../src/chain/batch-settlement/channel.js'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { withDevnet } from '../../helpers/devnet.js'
import { chainClients, openChannel, type TestChannel } from '../../helpers/batch-channel.js'

/** The custom error a transaction would revert with (simulated), or 'ok'. */
async function revertName(devnet: Devnet, from: PrivateKeyAccount, data: Hex): Promise<string> {
  const { pub } = chainClients(devnet)
  try {
    await pub.call({ account: from, to: BATCH_SETTLEMENT_ADDRESS, data })
    return 'ok'
  } catch (err) {
    const withData =
      err instanceof BaseError ? err.walk((e) => typeof (e as { data?: unknown }).data === 'string') : null
    const raw = (withData as { data?: Hex } | null)?.data
    if (!raw) return `failed: ${(err as Error).message.slice(0, 120)}`
    try {
      return decodeErrorResult({ abi: batchSettlementAbi, data: raw }).errorName
    } catch {
      return `reverted ${raw.slice(0, 10)}`
    }
  }
}

const testClient = (devnet: Devnet) =>
  createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })

async function send(devnet: Devnet, from: PrivateKeyAccount, data: Hex) {
  const { pub, wallet } = chainClients(devnet)
  const hash = await wallet(from).sendTransaction({ to: BATCH_SETTLEMENT_ADDRESS, data })
  return pub.waitForTransactionReceipt({ hash })
}

function usdcOf(devnet: Devnet, who: Hex) {
  return chainClients(devnet).pub.readContract({
    address: DEVNET_USDC_ADDRESS,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [who],
  })
}

async function claimOf(ch: TestChannel, max: bigint, total = max): Promise<VoucherClaimInput> {
  return { config: ch.config, maxClaimableAmount: max, signature: await ch.voucher(max), totalClaimed: total }
}

async function claimData(devnet: Devnet, authorizer: PrivateKeyAccount, claims: VoucherClaimInput[]) {
  const ids = claims.map((c) => channelIdOf(c.config, devnet.chainId))
  const sig = await signClaimBatch(authorizer, devnet.chainId, claimEntries(claims, ids))
  return encodeClaimWithSignature(claims, sig)
}

t.test('batch-settlement contracts on the devnet, with the official client', async (t) => {
  const devnet = await withDevnet(t)
  const { pub } = chainClients(devnet)
  const relayer = privateKeyToAccount(devnet.accounts.relayer.privateKey)
  const authorizer = privateKeyToAccount(generatePrivateKey())
  const receiver = privateKeyToAccount(generatePrivateKey()).address

  t.equal(BATCH_SETTLEMENT_ADDRESS, OFFICIAL_SETTLEMENT, 'settlement address is the official constant')
  t.equal(ERC3009_DEPOSIT_COLLECTOR_ADDRESS, OFFICIAL_ERC3009, 'ERC-3009 collector address is the official one')
  for (const address of [
    BATCH_SETTLEMENT_ADDRESS,
    ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
    PERMIT2_DEPOSIT_COLLECTOR_ADDRESS,
  ]) {
    t.ok(((await pub.getCode({ address })) ?? '0x').length > 2, `code at ${address}`)
  }
  const collectorAbi = [
    {
      type: 'function',
      name: 'x402BatchSettlement',
      inputs: [],
      outputs: [{ type: 'address' }],
      stateMutability: 'view',
    },
    { type: 'function', name: 'PERMIT2', inputs: [], outputs: [{ type: 'address' }], stateMutability: 'view' },
  ] as const
  t.equal(
    await pub.readContract({
      address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      abi: collectorAbi,
      functionName: 'x402BatchSettlement',
    }),
    BATCH_SETTLEMENT_ADDRESS,
    'the ERC-3009 collector is bound to the canonical settlement contract',
  )
  t.equal(
    await pub.readContract({
      address: PERMIT2_DEPOSIT_COLLECTOR_ADDRESS,
      abi: collectorAbi,
      functionName: 'x402BatchSettlement',
    }),
    BATCH_SETTLEMENT_ADDRESS,
    'the Permit2 collector too',
  )
  t.equal(
    await pub.readContract({ address: PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, abi: collectorAbi, functionName: 'PERMIT2' }),
    PERMIT2_ADDRESS,
    'and to canonical Permit2',
  )

  const open = (deposit: bigint, withdrawDelay?: number) =>
    openChannel(devnet, { receiver, receiverAuthorizer: authorizer.address, relayer, deposit, withdrawDelay })
  const a = await open(5_000_000n)
  const b = await open(3_000_000n)
  t.equal(
    await pub.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'getChannelId',
      args: [a.config],
    }),
    a.channelId,
    "the contract's channel id is the official client's computeChannelId",
  )
  t.equal(channelIdOf(a.config, devnet.chainId), a.channelId, 'and ours')
  t.match(await readChannel(pub, a.channelId), { balance: 5_000_000n, totalClaimed: 0n, withdrawRequestedAt: 0 })
  t.equal(await usdcOf(devnet, BATCH_SETTLEMENT_ADDRESS), 8_000_000n, 'both deposits are in escrow')

  await t.test('refusals', async (t) => {
    const stranger = privateKeyToAccount(generatePrivateKey())
    // a voucher signed by another key
    const forged = { ...(await claimOf(a, 1000n)), signature: await stranger.signMessage({ message: 'x' }) }
    t.equal(await revertName(devnet, relayer, await claimData(devnet, authorizer, [forged])), 'InvalidSignature')
    // a claim above the voucher's ceiling
    const above = await claimOf(a, 1000n, 1001n)
    t.equal(await revertName(devnet, relayer, await claimData(devnet, authorizer, [above])), 'ClaimExceedsCeiling')
    // the batch signed by a key that is not the channels' receiverAuthorizer
    t.equal(
      await revertName(devnet, relayer, await claimData(devnet, stranger, [await claimOf(a, 1000n)])),
      'InvalidSignature',
      'wrong authorizer',
    )
    // above the channel's balance
    const tooMuch = await claimOf(b, 3_000_001n)
    t.equal(await revertName(devnet, relayer, await claimData(devnet, authorizer, [tooMuch])), 'ClaimExceedsBalance')
    // a refund signed by another key
    const nonce = (await readChannel(pub, a.channelId)).refundNonce
    const badRefund = await signRefund(stranger, devnet.chainId, { channelId: a.channelId, nonce, amount: 1n })
    t.equal(
      await revertName(devnet, relayer, encodeRefundWithSignature(a.config, 1n, nonce, badRefund)),
      'InvalidSignature',
    )
    const staleNonce = await signRefund(authorizer, devnet.chainId, {
      channelId: a.channelId,
      nonce: nonce + 1n,
      amount: 1n,
    })
    t.equal(
      await revertName(devnet, relayer, encodeRefundWithSignature(a.config, 1n, nonce + 1n, staleNonce)),
      'InvalidRefundNonce',
    )
  })

  await t.test('one claimWithSignature for two channels, then settle', async (t) => {
    const claims = [await claimOf(a, 1_234_000n), await claimOf(b, 567_000n, 500_000n)]
    const receipt = await send(devnet, relayer, await claimData(devnet, authorizer, claims))
    t.equal(receipt.status, 'success')
    t.equal((await readChannel(pub, a.channelId)).totalClaimed, 1_234_000n)
    t.equal((await readChannel(pub, b.channelId)).totalClaimed, 500_000n, 'claimed below the ceiling')
    // the same claim again is a no-op (cumulative)
    const again = await send(devnet, relayer, await claimData(devnet, authorizer, claims))
    t.equal(again.status, 'success')
    t.equal((await readChannel(pub, a.channelId)).totalClaimed, 1_234_000n, 'a replayed claim claims nothing more')
    t.equal(await usdcOf(devnet, receiver), 0n, 'nothing moved before settle')
    t.equal((await send(devnet, relayer, encodeSettle(receiver, DEVNET_USDC_ADDRESS))).status, 'success')
    t.equal(await usdcOf(devnet, receiver), 1_734_000n, 'settle moves exactly the claimed sum')
    await send(devnet, relayer, encodeSettle(receiver, DEVNET_USDC_ADDRESS))
    t.equal(await usdcOf(devnet, receiver), 1_734_000n, 'a second settle moves nothing')
  })

  await t.test('cooperative refund returns the rest', async (t) => {
    const state = await readChannel(pub, b.channelId)
    const sig = await signRefund(authorizer, devnet.chainId, {
      channelId: b.channelId,
      nonce: state.refundNonce,
      amount: 10_000_000n,
    })
    const before = await usdcOf(devnet, b.payer.address)
    const receipt = await send(
      devnet,
      relayer,
      encodeRefundWithSignature(b.config, 10_000_000n, state.refundNonce, sig),
    )
    t.equal(receipt.status, 'success')
    t.equal((await usdcOf(devnet, b.payer.address)) - before, 2_500_000n, 'the unclaimed 2.5 USDC went back')
    t.match(await readChannel(pub, b.channelId), { balance: 500_000n, totalClaimed: 500_000n, refundNonce: 1n })
  })

  await t.test('a Permit2 deposit signed by the official client goes through the Permit2 collector', async (t) => {
    const payer = privateKeyToAccount(generatePrivateKey())
    await mintUsdc(devnet.rpcUrl, payer.address, 10_000_000n)
    await testClient(devnet).setBalance({ address: payer.address, value: parseEther('1') })
    const { wallet } = chainClients(devnet)
    await pub.waitForTransactionReceipt({
      hash: await wallet(payer).writeContract({
        address: DEVNET_USDC_ADDRESS,
        abi: erc20Abi,
        functionName: 'approve',
        args: [PERMIT2_ADDRESS, maxUint256],
      }),
    })
    const client = new BatchSettlementEvmScheme(toClientEvmSigner(payer))
    const { payload } = (await client.createPaymentPayload(2, {
      scheme: 'batch-settlement',
      network: `eip155:${devnet.chainId}`,
      amount: '1000',
      asset: DEVNET_USDC_ADDRESS,
      payTo: receiver,
      maxTimeoutSeconds: 300,
      extra: {
        receiverAuthorizer: authorizer.address,
        withdrawDelay: 900,
        name: 'USDC',
        version: '2',
        assetTransferMethod: 'permit2',
      },
    } as never)) as unknown as {
      payload: {
        type: string
        channelConfig: ChannelConfig
        deposit: {
          amount: string
          authorization: { permit2Authorization: { nonce: string; deadline: string; signature: Hex } }
        }
      }
    }
    t.equal(payload.type, 'deposit')
    const auth = payload.deposit.authorization.permit2Authorization
    const collectorData = encodeAbiParameters(
      [{ type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }, { type: 'bytes' }],
      [BigInt(auth.nonce), BigInt(auth.deadline), auth.signature, '0x'],
    )
    const amount = BigInt(payload.deposit.amount)
    const receipt = await send(
      devnet,
      relayer,
      encodeDeposit(payload.channelConfig, amount, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, collectorData),
    )
    t.equal(receipt.status, 'success')
    const id = channelIdOf(payload.channelConfig, devnet.chainId)
    t.equal((await readChannel(pub, id)).balance, amount, `the channel holds the deposit (${amount})`)
    t.equal(await usdcOf(devnet, payer.address), 10_000_000n - amount)
    // the same signed permit again: Permit2's nonce is spent
    t.not(
      await revertName(
        devnet,
        relayer,
        encodeDeposit(payload.channelConfig, amount, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, collectorData),
      ),
      'ok',
      'a replayed Permit2 deposit is refused',
    )
  })

  await t.test('timed withdrawal: only after the delay, and only what is unclaimed', async (t) => {
    const ch = await open(2_000_000n)
    await testClient(devnet).setBalance({ address: ch.payer.address, value: parseEther('1') })
    const config = normalizeConfig(ch.config)
    const asPayer = (data: Hex) => send(devnet, ch.payer, data)
    const withdrawData = encodeFunctionData({
      abi: batchSettlementAbi,
      functionName: 'initiateWithdraw',
      args: [config, 2_000_000n],
    })
    const finalizeData = encodeFunctionData({
      abi: batchSettlementAbi,
      functionName: 'finalizeWithdraw',
      args: [config],
    })
    t.equal(await revertName(devnet, relayer, withdrawData), 'InvalidChannel', 'only the payer starts it')
    t.equal((await asPayer(withdrawData)).status, 'success')
    t.ok((await readChannel(pub, ch.channelId)).withdrawRequestedAt > 0)
    t.equal(await revertName(devnet, ch.payer, finalizeData), 'WithdrawDelayNotElapsed')
    // the receiver side claims within the window
    const claim = await claimOf(ch, 700_000n)
    await send(devnet, relayer, await claimData(devnet, authorizer, [claim]))
    await testClient(devnet).increaseTime({ seconds: 800 })
    await testClient(devnet).mine({ blocks: 1 })
    t.equal(await revertName(devnet, ch.payer, finalizeData), 'WithdrawDelayNotElapsed', 'not before the delay')
    await testClient(devnet).increaseTime({ seconds: 101 })
    await testClient(devnet).mine({ blocks: 1 })
    const before = await usdcOf(devnet, ch.payer.address)
    t.equal((await asPayer(finalizeData)).status, 'success')
    t.equal((await usdcOf(devnet, ch.payer.address)) - before, 1_300_000n, 'the payer takes only the unclaimed rest')
    t.match(await readChannel(pub, ch.channelId), { balance: 700_000n, totalClaimed: 700_000n, withdrawRequestedAt: 0 })
    // a claim above what is left now reverts
    t.equal(
      await revertName(devnet, relayer, await claimData(devnet, authorizer, [await claimOf(ch, 800_000n)])),
      'ClaimExceedsBalance',
    )
  })
})
