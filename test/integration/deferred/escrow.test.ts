/**
 * DeferredPaymentEscrow on the dev chain (anvil), where the devnet installs it at
 * DEVNET_DEFERRED_ESCROW_ADDRESS: every function and every refusal. One chain for the file; each
 * test makes its own buyers and sellers, and reads time from the chain (tests move its clock).
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import solc from 'solc'
import t from 'tap'
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  hashDomain,
  http,
  keccak256,
  parseEventLogs,
  parseSignature,
  serializeSignature,
  toFunctionSelector,
  toHex,
  zeroAddress,
  type Abi,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import {
  DEVNET_DEFERRED_ESCROW_ADDRESS,
  DEVNET_ESCROW_THAWING_PERIOD,
  escrowCreation,
  mintUsdc,
  runtimeCode,
} from '../../../src/chain/devnet.js'
import artifacts from '../../../src/chain/contracts/artifacts.json' with { type: 'json' }
import { usdcAbi } from '../../../src/chain/usdc-abi.js'
import { deferredEscrowAbi } from '../../../src/schemes/deferred/escrow-abi.js'
import {
  depositAuthorizationTypedData,
  escrowDomain,
  flushAllAuthorizationTypedData,
  flushAuthorizationTypedData,
  permitTypedData,
  voucherTypedData,
  type DeferredVoucher,
} from '../../../src/schemes/deferred/typed-data.js'
import { withDevnet } from '../../helpers/devnet.js'

const devnet = await withDevnet(t)
const escrow = devnet.deferredEscrowAddress
const usdc = devnet.usdcAddress
const chainId = BigInt(devnet.chainId)
const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl), pollingInterval: 50 })
const testClient = createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) })
const PERIOD = DEVNET_ESCROW_THAWING_PERIOD
/** TestUSDC's whole ABI: approve, permit and nonces are not in the platform's usdcAbi */
const tokenAbi = artifacts.contracts.TestUSDC.abi as Abi

interface Actor {
  account: PrivateKeyAccount
  address: Address
  /** writes a contract call from this actor and returns the receipt's escrow events */
  send(
    functionName: string,
    args: readonly unknown[],
    address?: Address,
    abi?: Abi,
  ): Promise<ReturnType<typeof escrowEvents>>
}

/** A fresh account with gas and `usdcAmount` test USDC, approved to the escrow when asked. */
async function actor(usdcAmount = 0n, approve = false): Promise<Actor> {
  const account = privateKeyToAccount(generatePrivateKey())
  await testClient.setBalance({ address: account.address, value: 10n ** 20n })
  if (usdcAmount > 0n) await mintUsdc(devnet.rpcUrl, account.address, usdcAmount)
  const wallet = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) })
  const send: Actor['send'] = async (functionName, args, address = escrow, abi = deferredEscrowAbi as Abi) => {
    // simulate first: a revert surfaces as the contract's custom error, not a bare receipt
    const { request } = await pub.simulateContract({ account, address, abi, functionName, args })
    const hash = await wallet.writeContract(request)
    const receipt = await pub.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error(`${functionName} reverted on chain`)
    return escrowEvents(receipt.logs)
  }
  const a: Actor = { account, address: account.address, send }
  if (approve) await a.send('approve', [escrow, 2n ** 256n - 1n], usdc, tokenAbi)
  return a
}

function escrowEvents(logs: Parameters<typeof parseEventLogs>[0]['logs']) {
  return parseEventLogs({ abi: deferredEscrowAbi, logs }).map((l) => ({
    eventName: l.eventName,
    args: l.args as Record<string, unknown>,
  }))
}

/** The custom error a call reverts with, from a dry run. */
async function revertOf(from: Address, functionName: string, args: readonly unknown[]): Promise<string> {
  try {
    await pub.simulateContract({ account: from, address: escrow, abi: deferredEscrowAbi as Abi, functionName, args })
  } catch (e) {
    const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
    if (revert instanceof ContractFunctionRevertedError) return revert.data?.errorName ?? revert.shortMessage
    throw e
  }
  return 'no revert'
}

function read<T>(functionName: string, args: readonly unknown[] = []): Promise<T> {
  return pub.readContract({ address: escrow, abi: deferredEscrowAbi as Abi, functionName, args }) as Promise<T>
}

const usdcBalance = (who: Address) =>
  pub.readContract({ address: usdc, abi: usdcAbi, functionName: 'balanceOf', args: [who] })
const account = (buyer: Address, seller: Address) =>
  read<{ balance: bigint; thawingAmount: bigint; thawEndTime: bigint }>('getAccount', [buyer, seller, usdc])
const chainNow = async () => (await pub.getBlock()).timestamp
const nonce32 = (): Hex => toHex(randomBytes(32))
/** moves the chain's clock and mines a block at the new time */
const advance = async (seconds: bigint) => {
  await testClient.increaseTime({ seconds: Number(seconds) })
  await testClient.mine({ blocks: 1 })
}

/** Compiles one contract from test/fixtures with the solc package. */
function compileFixture(file: string, name: string): { abi: Abi; bytecode: Hex } {
  const source = readFileSync(new URL(`../../fixtures/${file}`, import.meta.url), 'utf8')
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { [file]: { content: source } },
        settings: { evmVersion: 'cancun', outputSelection: { '*': { [name]: ['abi', 'evm.bytecode.object'] } } },
      }),
    ),
  )
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error')
  if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'))
  const c = out.contracts[file][name]
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` }
}

async function deploy(from: Actor, compiled: { abi: Abi; bytecode: Hex }, args: readonly unknown[]): Promise<Address> {
  const wallet = createWalletClient({ account: from.account, chain: devnet.chain, transport: http(devnet.rpcUrl) })
  const hash = await wallet.deployContract({ abi: compiled.abi, bytecode: compiled.bytecode, args })
  return (await pub.waitForTransactionReceipt({ hash })).contractAddress!
}

function voucherOf(
  buyer: Address,
  seller: Address,
  valueAggregate: bigint,
  over: Partial<DeferredVoucher> = {},
): DeferredVoucher {
  return {
    id: nonce32(),
    buyer,
    seller,
    valueAggregate,
    asset: usdc,
    timestamp: 1_740_673_000n,
    nonce: 1n,
    escrow,
    chainId,
    ...over,
  }
}
const signVoucher = (signer: PrivateKeyAccount, v: DeferredVoucher) => signer.signTypedData(voucherTypedData(v))

t.test(
  'installed at its fixed address with the dev thawing period, domain and type hashes matching the TypeScript typed data',
  async (t) => {
    t.equal(escrow, DEVNET_DEFERRED_ESCROW_ADDRESS)
    t.equal(await read<bigint>('THAWING_PERIOD'), 86_400n)
    t.equal(await read<bigint>('MAX_THAWING_PERIOD'), 30n * 86_400n)
    t.equal(
      await read<Hex>('DOMAIN_SEPARATOR'),
      hashDomain({
        domain: escrowDomain(chainId, escrow),
        types: {
          EIP712Domain: [
            { name: 'name', type: 'string' },
            { name: 'version', type: 'string' },
            { name: 'chainId', type: 'uint256' },
            { name: 'verifyingContract', type: 'address' },
          ],
        },
      }),
    )
    const domain = await read<readonly unknown[]>('eip712Domain')
    t.same(domain.slice(1, 5), ['DeferredPaymentEscrow', '1', chainId, escrow])
    const typeString = (name: string, fields: readonly { name: string; type: string }[]) =>
      `${name}(${fields.map((f) => `${f.type} ${f.name}`).join(',')})`
    const v = voucherTypedData(voucherOf(zeroAddress, zeroAddress, 0n))
    t.equal(await read<Hex>('VOUCHER_TYPEHASH'), keccak256(toHex(typeString('Voucher', v.types.Voucher))))
    const d = depositAuthorizationTypedData(
      { buyer: zeroAddress, seller: zeroAddress, asset: zeroAddress, amount: 0n, nonce: nonce32(), expiry: 0n },
      chainId,
      escrow,
    )
    t.equal(
      await read<Hex>('DEPOSIT_AUTHORIZATION_TYPEHASH'),
      keccak256(toHex(typeString('DepositAuthorization', d.types.DepositAuthorization))),
    )
    const f = flushAuthorizationTypedData(
      { buyer: zeroAddress, seller: zeroAddress, asset: zeroAddress, nonce: nonce32(), expiry: 0n },
      chainId,
      escrow,
    )
    t.equal(
      await read<Hex>('FLUSH_AUTHORIZATION_TYPEHASH'),
      keccak256(toHex(typeString('FlushAuthorization', f.types.FlushAuthorization))),
    )
    const fa = flushAllAuthorizationTypedData({ buyer: zeroAddress, nonce: nonce32(), expiry: 0n }, chainId, escrow)
    t.equal(
      await read<Hex>('FLUSH_ALL_AUTHORIZATION_TYPEHASH'),
      keccak256(toHex(typeString('FlushAllAuthorization', fa.types.FlushAllAuthorization))),
    )
  },
)

t.test(
  'the devnet setup is idempotent and a thawing period outside (0, 30 days] is refused at construction',
  async (t) => {
    const code = await pub.getCode({ address: escrow })
    t.equal(code, await runtimeCode(devnet.rpcUrl, escrowCreation(PERIOD)))
    await t.rejects(runtimeCode(devnet.rpcUrl, escrowCreation(0n)))
    await t.rejects(runtimeCode(devnet.rpcUrl, escrowCreation(30n * 86_400n + 1n)))
    t.ok(await runtimeCode(devnet.rpcUrl, escrowCreation(30n * 86_400n)))
  },
)

t.test("deposit, depositTo and depositMany credit the named accounts and pull the payer's tokens", async (t) => {
  const buyer = await actor(10_000_000n, true)
  const [s1, s2, s3] = [await actor(), await actor(), await actor()]
  const events = await buyer.send('deposit', [s1.address, usdc, 1_000_000n])
  t.same(
    events.map((e) => e.eventName),
    ['Deposited'],
  )
  t.same(events[0]!.args, {
    buyer: buyer.address,
    seller: s1.address,
    asset: usdc,
    amount: 1_000_000n,
    newBalance: 1_000_000n,
  })
  t.same(await account(buyer.address, s1.address), { balance: 1_000_000n, thawingAmount: 0n, thawEndTime: 0n })

  const sponsor = await actor(5_000_000n, true)
  await sponsor.send('depositTo', [buyer.address, s1.address, usdc, 500_000n])
  t.equal((await account(buyer.address, s1.address)).balance, 1_500_000n, 'depositTo credits the buyer, not the payer')
  t.equal(await usdcBalance(sponsor.address), 4_500_000n)

  await buyer.send('depositMany', [
    usdc,
    [
      { seller: s2.address, amount: 2_000_000n },
      { seller: s3.address, amount: 3_000_000n },
    ],
  ])
  t.equal((await account(buyer.address, s2.address)).balance, 2_000_000n)
  t.equal((await account(buyer.address, s3.address)).balance, 3_000_000n)
  t.equal(await usdcBalance(buyer.address), 10_000_000n - 6_000_000n)
  t.equal((await usdcBalance(escrow)) >= 6_500_000n, true)
})

t.test(
  'deposits refuse a zero amount, a zero seller or buyer, an asset without code, an empty batch and a missing allowance',
  async (t) => {
    const buyer = await actor(1_000_000n, true)
    const seller = await actor()
    t.equal(await revertOf(buyer.address, 'deposit', [seller.address, usdc, 0n]), 'InvalidAmount')
    t.equal(await revertOf(buyer.address, 'deposit', [zeroAddress, usdc, 1n]), 'InvalidAddress')
    t.equal(await revertOf(buyer.address, 'depositTo', [zeroAddress, seller.address, usdc, 1n]), 'InvalidAddress')
    t.equal(await revertOf(buyer.address, 'deposit', [seller.address, seller.address, 1n]), 'InvalidAsset')
    t.equal(await revertOf(buyer.address, 'depositMany', [usdc, []]), 'NoDepositsProvided')
    t.equal(
      await revertOf(buyer.address, 'deposit', [seller.address, usdc, 2_000_000n]),
      'TokenTransferFailed',
      'more than the buyer holds',
    )
    const unapproved = await actor(1_000_000n, false)
    t.equal(await revertOf(unapproved.address, 'deposit', [seller.address, usdc, 1n]), 'TokenTransferFailed')
  },
)

t.test(
  'depositWithAuthorization after an EIP-2612 permit: a gasless deposit; replay, expiry and a wrong signer are refused',
  async (t) => {
    const buyer = await actor(5_000_000n) // no approval: the permit gives it
    const seller = await actor()
    const facilitator = await actor()
    const now = await chainNow()

    // the permit, as a facilitator would send it first
    const permitNonce = (await pub.readContract({
      address: usdc,
      abi: tokenAbi,
      functionName: 'nonces',
      args: [buyer.address],
    })) as bigint
    const permit = {
      owner: buyer.address,
      spender: escrow,
      value: 5_000_000n,
      nonce: permitNonce,
      deadline: now + 3600n,
    }
    const permitSig = parseSignature(
      await buyer.account.signTypedData(
        permitTypedData(permit, { name: 'USDC', version: '2', chainId, address: usdc }),
      ),
    )
    await facilitator.send(
      'permit',
      [permit.owner, permit.spender, permit.value, permit.deadline, Number(permitSig.v), permitSig.r, permitSig.s],
      usdc,
      tokenAbi,
    )

    const auth = {
      buyer: buyer.address,
      seller: seller.address,
      asset: usdc,
      amount: 3_000_000n,
      nonce: nonce32(),
      expiry: now + 600n,
    }
    const sig = await buyer.account.signTypedData(depositAuthorizationTypedData(auth, chainId, escrow))
    t.equal(await read('isDepositAuthorizationValid', [auth, sig]), true)
    t.equal(await read('isNonceUsed', [buyer.address, auth.nonce]), false)
    const events = await facilitator.send('depositWithAuthorization', [auth, sig])
    t.same(
      events.map((e) => e.eventName),
      ['DepositAuthorized', 'Deposited'],
    )
    t.equal((await account(buyer.address, seller.address)).balance, 3_000_000n)
    t.equal(await usdcBalance(buyer.address), 2_000_000n)
    t.equal(await read('isNonceUsed', [buyer.address, auth.nonce]), true)

    t.equal(
      await revertOf(facilitator.address, 'depositWithAuthorization', [auth, sig]),
      'NonceAlreadyUsed',
      'a replayed authorization',
    )

    const expired = { ...auth, nonce: nonce32(), expiry: now - 1n }
    t.equal(
      await revertOf(facilitator.address, 'depositWithAuthorization', [
        expired,
        await buyer.account.signTypedData(depositAuthorizationTypedData(expired, chainId, escrow)),
      ]),
      'AuthorizationExpired',
    )

    const other = privateKeyToAccount(generatePrivateKey())
    const forged = { ...auth, nonce: nonce32() }
    const forgedSig = await other.signTypedData(depositAuthorizationTypedData(forged, chainId, escrow))
    t.equal(await read('isDepositAuthorizationValid', [forged, forgedSig]), false)
    t.equal(
      await revertOf(facilitator.address, 'depositWithAuthorization', [forged, forgedSig]),
      'InvalidAuthorization',
    )
    const tampered = { ...auth, nonce: nonce32(), amount: 2_000_000n }
    const tamperedSig = await buyer.account.signTypedData(
      depositAuthorizationTypedData({ ...tampered, amount: 1n }, chainId, escrow),
    )
    t.equal(
      await revertOf(facilitator.address, 'depositWithAuthorization', [tampered, tamperedSig]),
      'InvalidAuthorization',
      'the amount is not what was signed',
    )
  },
)

t.test('thaw, withdraw after the thawing period, cancelThaw, and their refusals', async (t) => {
  const buyer = await actor(10_000_000n, true)
  const seller = await actor()
  await buyer.send('deposit', [seller.address, usdc, 4_000_000n])

  t.equal(await revertOf(buyer.address, 'thaw', [seller.address, usdc, 0n]), 'InvalidAmount')
  t.equal(
    await revertOf(buyer.address, 'thaw', [seller.address, usdc, 4_000_001n]),
    'InsufficientBalance',
    'more than the balance',
  )
  t.equal(await revertOf(buyer.address, 'withdraw', [seller.address, usdc]), 'NoThawingInProgress')
  t.equal(await revertOf(buyer.address, 'cancelThaw', [seller.address, usdc]), 'NoThawingInProgress')

  const [first] = await buyer.send('thaw', [seller.address, usdc, 1_000_000n])
  const acc = await account(buyer.address, seller.address)
  t.equal(acc.thawingAmount, 1_000_000n)
  t.equal(acc.thawEndTime, (await chainNow()) + PERIOD)
  t.same(first!.args, {
    buyer: buyer.address,
    seller: seller.address,
    asset: usdc,
    newThawingAmount: 1_000_000n,
    previousThawingAmount: 0n,
    newThawEndTime: acc.thawEndTime,
    previousThawEndTime: 0n,
  })
  t.equal(
    await revertOf(buyer.address, 'thaw', [seller.address, usdc, 3_000_001n]),
    'InsufficientBalance',
    'only the part not thawing yet may be thawed',
  )

  await advance(PERIOD / 2n)
  await buyer.send('thaw', [seller.address, usdc, 1_000_000n])
  const again = await account(buyer.address, seller.address)
  t.equal(again.thawingAmount, 2_000_000n, 'a second thaw adds to the thawing amount')
  t.equal(again.thawEndTime, (await chainNow()) + PERIOD, 'and restarts the period')

  await advance(PERIOD / 2n)
  t.equal(await revertOf(buyer.address, 'withdraw', [seller.address, usdc]), 'ThawingPeriodNotCompleted')
  await advance(PERIOD / 2n + 10n)
  const before = await usdcBalance(buyer.address)
  const [withdrawn] = await buyer.send('withdraw', [seller.address, usdc])
  t.same(withdrawn!.args, {
    buyer: buyer.address,
    seller: seller.address,
    asset: usdc,
    amount: 2_000_000n,
    remainingBalance: 2_000_000n,
  })
  t.equal(await usdcBalance(buyer.address), before + 2_000_000n)
  t.same(await account(buyer.address, seller.address), { balance: 2_000_000n, thawingAmount: 0n, thawEndTime: 0n })
  t.equal(
    await revertOf(buyer.address, 'withdraw', [seller.address, usdc]),
    'NoThawingInProgress',
    'nothing left thawing',
  )

  await buyer.send('thaw', [seller.address, usdc, 500_000n])
  const [cancelled] = await buyer.send('cancelThaw', [seller.address, usdc])
  t.same(cancelled, {
    eventName: 'ThawCancelled',
    args: { buyer: buyer.address, seller: seller.address, asset: usdc, amount: 500_000n },
  })
  t.same(await account(buyer.address, seller.address), { balance: 2_000_000n, thawingAmount: 0n, thawEndTime: 0n })
  await advance(PERIOD + 1n)
  t.equal(
    await revertOf(buyer.address, 'withdraw', [seller.address, usdc]),
    'NoThawingInProgress',
    'a cancelled thaw cannot be withdrawn',
  )
})

t.test(
  "collect pays the seller the voucher's outstanding amount, once; an aggregated voucher pays the difference",
  async (t) => {
    const buyer = await actor(10_000_000n, true)
    const seller = await actor()
    const facilitator = await actor()
    await buyer.send('deposit', [seller.address, usdc, 5_000_000n])

    const v1 = voucherOf(buyer.address, seller.address, 1_000_000n)
    const s1 = await signVoucher(buyer.account, v1)
    t.equal(await read('isVoucherSignatureValid', [v1, s1]), true)
    t.same(await read('getOutstandingAndCollectableAmount', [v1]), [1_000_000n, 1_000_000n])
    const [collected] = await facilitator.send('collect', [v1, s1])
    t.same(collected, {
      eventName: 'VoucherCollected',
      args: {
        voucherId: v1.id,
        buyer: buyer.address,
        seller: seller.address,
        asset: usdc,
        amount: 1_000_000n,
        totalCollected: 1_000_000n,
      },
    })
    t.equal(await usdcBalance(seller.address), 1_000_000n, 'paid to the seller, whoever sends the collect')
    t.equal(await read('getVoucherCollected', [buyer.address, seller.address, usdc, v1.id]), 1_000_000n)
    t.same(await read('getOutstandingAndCollectableAmount', [v1]), [0n, 0n])

    const [repeat] = await facilitator.send('collect', [v1, s1])
    t.same(repeat, {
      eventName: 'VoucherAlreadyCollected',
      args: { voucherId: v1.id, buyer: buyer.address, seller: seller.address, asset: usdc, totalCollected: 1_000_000n },
    })
    t.equal(await usdcBalance(seller.address), 1_000_000n, 'a voucher collected in full pays nothing again')

    const v2 = { ...v1, valueAggregate: 2_500_000n, nonce: 2n, timestamp: v1.timestamp + 60n }
    await facilitator.send('collect', [v2, await signVoucher(buyer.account, v2)])
    t.equal(await usdcBalance(seller.address), 2_500_000n, 'the aggregate pays only what is new')
    t.equal((await account(buyer.address, seller.address)).balance, 2_500_000n)
  },
)

t.test(
  'collect refuses a bad signature, a malleable copy, a tampered voucher, another escrow and another chain',
  async (t) => {
    const buyer = await actor(2_000_000n, true)
    const seller = await actor()
    await buyer.send('deposit', [seller.address, usdc, 2_000_000n])
    const v = voucherOf(buyer.address, seller.address, 1_000_000n)
    const sig = await signVoucher(buyer.account, v)

    const stranger = privateKeyToAccount(generatePrivateKey())
    const strangerSig = await signVoucher(stranger, v)
    t.equal(await read('isVoucherSignatureValid', [v, strangerSig]), false)
    t.equal(
      await revertOf(seller.address, 'collect', [v, strangerSig]),
      'InvalidSignature',
      'signed by someone other than the buyer',
    )
    t.equal(
      await revertOf(seller.address, 'collect', [{ ...v, valueAggregate: 2_000_000n }, sig]),
      'InvalidSignature',
      'a raised valueAggregate',
    )
    t.equal(await revertOf(seller.address, 'collect', [v, '0x1234']), 'InvalidSignature', 'a short signature')
    // the same signature with s mirrored to the upper half of the curve order
    const { r, s, yParity } = parseSignature(sig)
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
    const high = serializeSignature({ r, s: toHex(n - BigInt(s), { size: 32 }), yParity: yParity === 0 ? 1 : 0 })
    t.equal(
      await revertOf(seller.address, 'collect', [v, high]),
      'InvalidSignature',
      'a high-s copy of a valid signature',
    )

    const otherEscrow = { ...v, escrow: usdc }
    t.equal(
      await revertOf(seller.address, 'collect', [otherEscrow, await signVoucher(buyer.account, otherEscrow)]),
      'InvalidEscrow',
    )
    const otherChain = { ...v, chainId: 8453n }
    t.equal(
      await revertOf(seller.address, 'collect', [otherChain, await signVoucher(buyer.account, otherChain)]),
      'InvalidChainId',
    )
    t.equal(await usdcBalance(seller.address), 0n)
  },
)

t.test(
  'partial collection: a voucher over the balance collects what is there, the rest after a top-up; a thaw in progress shrinks with it',
  async (t) => {
    const buyer = await actor(20_000_000n, true)
    const seller = await actor()
    await buyer.send('deposit', [seller.address, usdc, 3_000_000n])
    await buyer.send('thaw', [seller.address, usdc, 2_000_000n])
    const v = voucherOf(buyer.address, seller.address, 5_000_000n)
    const sig = await signVoucher(buyer.account, v)
    t.same(await read('getOutstandingAndCollectableAmount', [v]), [5_000_000n, 3_000_000n])

    const [partial] = await seller.send('collect', [v, sig])
    t.same(partial!.args, {
      voucherId: v.id,
      buyer: buyer.address,
      seller: seller.address,
      asset: usdc,
      amount: 3_000_000n,
      totalCollected: 3_000_000n,
    })
    const acc = await account(buyer.address, seller.address)
    t.equal(acc.balance, 0n)
    t.equal(
      acc.thawingAmount,
      0n,
      'sellers collect from the thawing part too, and the thawing amount never exceeds the balance',
    )

    const [none] = await seller.send('collect', [v, sig])
    t.same(none, {
      eventName: 'VoucherNoCollectableBalance',
      args: {
        voucherId: v.id,
        buyer: buyer.address,
        seller: seller.address,
        asset: usdc,
        outstanding: 2_000_000n,
        alreadyCollected: 3_000_000n,
      },
    })

    await buyer.send('deposit', [seller.address, usdc, 10_000_000n])
    t.same(await read('getOutstandingAndCollectableAmount', [v]), [2_000_000n, 2_000_000n])
    const [rest] = await seller.send('collect', [v, sig])
    t.same(rest!.args, {
      voucherId: v.id,
      buyer: buyer.address,
      seller: seller.address,
      asset: usdc,
      amount: 2_000_000n,
      totalCollected: 5_000_000n,
    })
    t.equal(await usdcBalance(seller.address), 5_000_000n)
    t.equal((await account(buyer.address, seller.address)).balance, 8_000_000n)

    // a thaw larger than what stays after a collection is cut to it, and withdraw pays that
    await buyer.send('thaw', [seller.address, usdc, 8_000_000n])
    const v2 = voucherOf(buyer.address, seller.address, 6_000_000n)
    await seller.send('collect', [v2, await signVoucher(buyer.account, v2)])
    const cut = await account(buyer.address, seller.address)
    t.same([cut.balance, cut.thawingAmount], [2_000_000n, 2_000_000n])
    await advance(PERIOD + 1n)
    const [withdrawn] = await buyer.send('withdraw', [seller.address, usdc])
    t.equal(withdrawn!.args.amount, 2_000_000n)
  },
)

t.test(
  "collectMany collects several buyers' vouchers in one transaction; an empty or partly forged batch is refused whole",
  async (t) => {
    const seller = await actor()
    const b1 = await actor(5_000_000n, true)
    const b2 = await actor(5_000_000n, true)
    await b1.send('deposit', [seller.address, usdc, 5_000_000n])
    await b2.send('deposit', [seller.address, usdc, 1_000_000n])
    const v1 = voucherOf(b1.address, seller.address, 2_000_000n)
    const v2 = voucherOf(b2.address, seller.address, 1_500_000n)
    const batch = [
      { voucher: v1, signature: await signVoucher(b1.account, v1) },
      { voucher: v2, signature: await signVoucher(b2.account, v2) },
    ]
    t.equal(await revertOf(seller.address, 'collectMany', [[]]), 'NoVouchersProvided')
    t.equal(
      await revertOf(seller.address, 'collectMany', [
        [batch[0], { voucher: v2, signature: await signVoucher(b1.account, v2) }],
      ]),
      'InvalidSignature',
    )

    const events = await seller.send('collectMany', [batch])
    t.same(
      events.map((e) => [e.eventName, e.args.amount]),
      [
        ['VoucherCollected', 2_000_000n],
        ['VoucherCollected', 1_000_000n],
      ],
    )
    t.equal(await usdcBalance(seller.address), 3_000_000n)
    t.same(await read('getOutstandingAndCollectableAmount', [v2]), [500_000n, 0n])
  },
)

t.test(
  'flushWithAuthorization thaws the account, a second flush after the period withdraws it; replay, expiry and a wrong signer are refused',
  async (t) => {
    const buyer = await actor(3_000_000n, true)
    const seller = await actor()
    const facilitator = await actor()
    await buyer.send('deposit', [seller.address, usdc, 3_000_000n])
    const flush = async () => {
      const auth = {
        buyer: buyer.address,
        seller: seller.address,
        asset: usdc,
        nonce: nonce32(),
        expiry: (await chainNow()) + 600n,
      }
      return { auth, sig: await buyer.account.signTypedData(flushAuthorizationTypedData(auth, chainId, escrow)) }
    }

    const first = await flush()
    t.equal(await read('isFlushAuthorizationValid', [first.auth, first.sig]), true)
    const events = await facilitator.send('flushWithAuthorization', [first.auth, first.sig])
    t.same(
      events.map((e) => e.eventName),
      ['ThawInitiated', 'FlushAuthorized'],
    )
    t.equal(events[1]!.args.thawing, true)
    t.equal((await account(buyer.address, seller.address)).thawingAmount, 3_000_000n)
    t.equal(
      await revertOf(facilitator.address, 'flushWithAuthorization', [first.auth, first.sig]),
      'NonceAlreadyUsed',
      'a replayed flush',
    )

    const early = await flush()
    t.equal(
      await revertOf(facilitator.address, 'flushWithAuthorization', [
        { ...early.auth, expiry: (await chainNow()) - 1n },
        early.sig,
      ]),
      'AuthorizationExpired',
    )
    const stranger = privateKeyToAccount(generatePrivateKey())
    t.equal(
      await read('isFlushAuthorizationValid', [
        early.auth,
        await stranger.signTypedData(flushAuthorizationTypedData(early.auth, chainId, escrow)),
      ]),
      false,
    )
    t.equal(
      await revertOf(facilitator.address, 'flushWithAuthorization', [
        early.auth,
        await stranger.signTypedData(flushAuthorizationTypedData(early.auth, chainId, escrow)),
      ]),
      'InvalidAuthorization',
    )

    await advance(PERIOD + 1n)
    const second = await flush()
    const done = await facilitator.send('flushWithAuthorization', [second.auth, second.sig])
    t.same(
      done.map((e) => e.eventName),
      ['Withdrawn', 'FlushAuthorized'],
    )
    t.equal(done[1]!.args.thawing, false)
    t.equal(await usdcBalance(buyer.address), 3_000_000n, 'everything back to the buyer')
    t.same(await account(buyer.address, seller.address), { balance: 0n, thawingAmount: 0n, thawEndTime: 0n })
  },
)

t.test('flushAllWithAuthorization flushes every account of the buyer; its nonce is not reusable', async (t) => {
  const buyer = await actor(6_000_000n, true)
  const [s1, s2, s3] = [await actor(), await actor(), await actor()]
  const facilitator = await actor()
  await buyer.send('depositMany', [
    usdc,
    [
      { seller: s1.address, amount: 1_000_000n },
      { seller: s2.address, amount: 2_000_000n },
      { seller: s3.address, amount: 3_000_000n },
    ],
  ])
  // s3's account is emptied by its seller, so it is skipped
  const v = voucherOf(buyer.address, s3.address, 3_000_000n)
  await s3.send('collect', [v, await signVoucher(buyer.account, v)])
  const flushAll = async () => {
    const auth = { buyer: buyer.address, nonce: nonce32(), expiry: (await chainNow()) + 600n }
    return { auth, sig: await buyer.account.signTypedData(flushAllAuthorizationTypedData(auth, chainId, escrow)) }
  }

  const first = await flushAll()
  t.equal(await read('isFlushAllAuthorizationValid', [first.auth, first.sig]), true)
  const events = await facilitator.send('flushAllWithAuthorization', [first.auth, first.sig])
  t.same(events.at(-1), {
    eventName: 'FlushAllAuthorized',
    args: { buyer: buyer.address, nonce: first.auth.nonce, accountsFlushed: 2n },
  })
  t.equal((await account(buyer.address, s1.address)).thawingAmount, 1_000_000n)
  t.equal((await account(buyer.address, s2.address)).thawingAmount, 2_000_000n)
  t.equal(await revertOf(facilitator.address, 'flushAllWithAuthorization', [first.auth, first.sig]), 'NonceAlreadyUsed')
  const stranger = privateKeyToAccount(generatePrivateKey())
  const later = await flushAll()
  t.equal(
    await revertOf(facilitator.address, 'flushAllWithAuthorization', [
      later.auth,
      await stranger.signTypedData(flushAllAuthorizationTypedData(later.auth, chainId, escrow)),
    ]),
    'InvalidAuthorization',
  )
  t.equal(
    await revertOf(facilitator.address, 'flushAllWithAuthorization', [
      { ...later.auth, expiry: (await chainNow()) - 1n },
      later.sig,
    ]),
    'AuthorizationExpired',
  )

  await advance(PERIOD + 1n)
  const last = await flushAll()
  await facilitator.send('flushAllWithAuthorization', [last.auth, last.sig])
  t.equal(await usdcBalance(buyer.address), 3_000_000n, 'both remaining accounts paid back')
  t.equal((await account(buyer.address, s1.address)).balance, 0n)
  t.equal((await account(buyer.address, s2.address)).balance, 0n)
})

t.test(
  'getAccountDetails: the balance left after thawing and the given vouchers, the allowance and the permit nonce',
  async (t) => {
    const buyer = await actor(10_000_000n, true)
    const seller = await actor()
    await buyer.send('deposit', [seller.address, usdc, 5_000_000n])
    await buyer.send('thaw', [seller.address, usdc, 1_000_000n])
    const v = voucherOf(buyer.address, seller.address, 1_500_000n)
    await seller.send('collect', [
      { ...v, valueAggregate: 500_000n },
      await signVoucher(buyer.account, { ...v, valueAggregate: 500_000n }),
    ])
    // balance 4.5, thawing 1 → 3.5 free; v owes 1.0 more, a new id owes 0.7
    const [balance, allowance, nonce] = await read<[bigint, bigint, bigint]>('getAccountDetails', [
      buyer.address,
      seller.address,
      usdc,
      [v.id, nonce32()],
      [1_500_000n, 700_000n],
    ])
    t.equal(balance, 1_800_000n)
    t.equal(allowance, 2n ** 256n - 1n)
    t.equal(nonce, 0n)
    const [none] = await read<[bigint, bigint, bigint]>('getAccountDetails', [
      buyer.address,
      seller.address,
      usdc,
      [nonce32()],
      [100_000_000n],
    ])
    t.equal(none, 0n, 'vouchers beyond the balance leave nothing, never an underflow')
    t.equal(
      await revertOf(buyer.address, 'getAccountDetails', [buyer.address, seller.address, usdc, [v.id], []]),
      'LengthMismatch',
    )
  },
)

t.test(
  'an ERC-1271 smart wallet is a buyer: its vouchers and authorizations are checked by isValidSignature',
  async (t) => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const deployer = await actor(5_000_000n, true)
    const wallet = await deploy(deployer, compileFixture('smart-wallet/TestSmartWallet.sol', 'TestSmartWallet'), [
      owner.address,
    ])
    const seller = await actor()
    await deployer.send('depositTo', [wallet, seller.address, usdc, 2_000_000n])

    const wrap = (ecdsa: Hex) => encodeAbiParameters([{ type: 'uint256' }, { type: 'bytes' }], [0n, ecdsa])
    const v = voucherOf(wallet, seller.address, 1_200_000n)
    const sig = wrap(await owner.signTypedData(voucherTypedData(v)))
    t.equal(await read('isVoucherSignatureValid', [v, sig]), true)
    t.equal(
      await read('isVoucherSignatureValid', [
        v,
        wrap(await privateKeyToAccount(generatePrivateKey()).signTypedData(voucherTypedData(v))),
      ]),
      false,
    )
    t.equal(
      await read('isVoucherSignatureValid', [v, await owner.signTypedData(voucherTypedData(v))]),
      false,
      "the owner's bare signature is not the wallet's",
    )
    await seller.send('collect', [v, sig])
    t.equal(await usdcBalance(seller.address), 1_200_000n)

    const flush = {
      buyer: wallet,
      seller: seller.address,
      asset: usdc,
      nonce: nonce32(),
      expiry: (await chainNow()) + 600n,
    }
    const events = await seller.send('flushWithAuthorization', [
      flush,
      wrap(await owner.signTypedData(flushAuthorizationTypedData(flush, chainId, escrow))),
    ])
    t.equal(events.at(-1)!.eventName, 'FlushAuthorized')
    t.equal((await account(wallet, seller.address)).thawingAmount, 800_000n)
  },
)

t.test('a token that calls back into the escrow during a transfer meets the reentrancy lock', async (t) => {
  const token = compileFixture('deferred/ReentrantToken.sol', 'ReentrantToken')
  const buyer = await actor()
  const seller = await actor()
  const asset = await deploy(buyer, token, [])
  await buyer.send('mint', [buyer.address, 10_000_000n], asset, token.abi)
  await buyer.send('approve', [escrow, 10_000_000n], asset, token.abi)
  const lastResult = () =>
    pub.readContract({ address: asset, abi: token.abi, functionName: 'lastResult' }) as Promise<Hex>
  const reentrancy = toFunctionSelector('Reentrancy()')

  // during deposit's transferFrom the token deposits again
  await buyer.send(
    'arm',
    [
      escrow,
      encodeFunctionData({ abi: deferredEscrowAbi, functionName: 'deposit', args: [seller.address, asset, 1n] }),
    ],
    asset,
    token.abi,
  )
  await buyer.send('deposit', [seller.address, asset, 5_000_000n])
  t.equal(await lastResult(), reentrancy, 'the nested deposit is refused')
  t.equal((await read<{ balance: bigint }>('getAccount', [buyer.address, seller.address, asset])).balance, 5_000_000n)

  // during collect's transfer to the seller the token collects the same voucher again
  const v = voucherOf(buyer.address, seller.address, 2_000_000n, { asset })
  const sig = await signVoucher(buyer.account, v)
  await buyer.send(
    'arm',
    [escrow, encodeFunctionData({ abi: deferredEscrowAbi, functionName: 'collect', args: [v, sig] })],
    asset,
    token.abi,
  )
  await seller.send('collect', [v, sig])
  t.equal(await lastResult(), reentrancy, 'the nested collect is refused')
  t.equal(
    await pub.readContract({ address: asset, abi: token.abi, functionName: 'balanceOf', args: [seller.address] }),
    2_000_000n,
    'paid once',
  )
  t.equal((await read<{ balance: bigint }>('getAccount', [buyer.address, seller.address, asset])).balance, 3_000_000n)

  // during withdraw's transfer to the buyer the token tries a second withdraw
  await buyer.send('thaw', [seller.address, asset, 3_000_000n])
  await advance(PERIOD + 1n)
  await buyer.send(
    'arm',
    [escrow, encodeFunctionData({ abi: deferredEscrowAbi, functionName: 'withdraw', args: [seller.address, asset] })],
    asset,
    token.abi,
  )
  await buyer.send('withdraw', [seller.address, asset])
  t.equal(await lastResult(), reentrancy, 'the nested withdraw is refused')
  t.equal(
    await pub.readContract({ address: asset, abi: token.abi, functionName: 'balanceOf', args: [buyer.address] }),
    8_000_000n,
  )
})
