import { randomBytes } from 'node:crypto'
import { createPublicClient, createTestClient, createWalletClient, http, type Abi, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import artifacts from '../../src/chain/contracts/artifacts.json' with { type: 'json' }
import { mintUsdc, type Devnet } from '../../src/chain/devnet.js'
import { deferredEscrowAbi } from '../../src/schemes/deferred/escrow-abi.js'
import { voucherTypedData, type DeferredVoucher } from '../../src/schemes/deferred/typed-data.js'
import type { FastifyInstance } from 'fastify'
import type { Challenge } from '../../src/x402/challenge.js'
import { decodeRequired } from './pay.js'

type Requirement = Challenge['v2']['accepts'][number]

/**
 * A `deferred` buyer as the spec describes one (there is no official client): a key with gas and
 * test USDC that deposits into the escrow itself and signs vouchers with viem.
 */
export interface DeferredBuyer {
  account: PrivateKeyAccount
  address: Address
  /** approves the escrow and deposits `amount` for `seller` */
  deposit(seller: Address, amount: bigint): Promise<void>
  /** approves the escrow and deposits `amount` into `buyer`'s account for `seller` (depositTo) */
  depositFor(buyer: Address, seller: Address, amount: bigint): Promise<void>
  /** a voucher for `requirement`: aggregated onto `previous` when given, else a new id */
  voucher(requirement: Requirement, previous?: DeferredVoucher, o?: Partial<DeferredVoucher>): DeferredVoucher
  sign(v: DeferredVoucher, by?: PrivateKeyAccount): Promise<Hex>
  /** calls the escrow from the buyer's key (thaw, withdraw, collect, ...) */
  send(functionName: string, args: readonly unknown[]): Promise<void>
}

const tokenAbi = artifacts.contracts.TestUSDC.abi as Abi

export async function deferredBuyer(devnet: Devnet, usdc: bigint): Promise<DeferredBuyer> {
  const account = privateKeyToAccount(generatePrivateKey())
  const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl), pollingInterval: 50 })
  await createTestClient({ chain: devnet.chain, mode: 'anvil', transport: http(devnet.rpcUrl) }).setBalance({
    address: account.address,
    value: 10n ** 20n,
  })
  if (usdc > 0n) await mintUsdc(devnet.rpcUrl, account.address, usdc)
  const wallet = createWalletClient({ account, chain: devnet.chain, transport: http(devnet.rpcUrl) })
  const send = async (address: Address, abi: Abi, functionName: string, args: readonly unknown[]) => {
    const { request } = await pub.simulateContract({ account, address, abi, functionName, args })
    const receipt = await pub.waitForTransactionReceipt({ hash: await wallet.writeContract(request) })
    if (receipt.status !== 'success') throw new Error(`${functionName} reverted`)
  }
  let clock = BigInt(Math.floor(Date.now() / 1000))
  return {
    account,
    address: account.address,
    async deposit(seller, amount) {
      await send(devnet.usdcAddress, tokenAbi, 'approve', [devnet.deferredEscrowAddress, amount])
      await send(devnet.deferredEscrowAddress, deferredEscrowAbi as Abi, 'deposit', [
        seller,
        devnet.usdcAddress,
        amount,
      ])
    },
    async depositFor(buyer, seller, amount) {
      await send(devnet.usdcAddress, tokenAbi, 'approve', [devnet.deferredEscrowAddress, amount])
      await send(devnet.deferredEscrowAddress, deferredEscrowAbi as Abi, 'depositTo', [
        buyer,
        seller,
        devnet.usdcAddress,
        amount,
      ])
    },
    voucher(req, previous, o = {}) {
      // each aggregation a second later than the last: the spec wants a later timestamp
      clock = previous && previous.timestamp >= clock ? previous.timestamp + 1n : clock + 1n
      return {
        id: previous?.id ?? (`0x${randomBytes(32).toString('hex')}` as Hex),
        buyer: account.address,
        seller: req.payTo as Address,
        valueAggregate: (previous?.valueAggregate ?? 0n) + BigInt(req.amount),
        asset: req.asset as Address,
        timestamp: clock,
        nonce: previous ? previous.nonce + 1n : 0n,
        escrow: req.extra.escrow as Address,
        chainId: BigInt(req.network.split(':')[1]!),
        ...o,
      }
    },
    sign: (v, by = account) => by.signTypedData(voucherTypedData(v)),
    send: (functionName, args) => send(devnet.deferredEscrowAddress, deferredEscrowAbi as Abi, functionName, args),
  }
}

/** A voucher as JSON on the wire (the spec's forms: valueAggregate a string, the rest numbers). */
export function voucherWire(v: DeferredVoucher): Record<string, unknown> {
  return {
    ...v,
    valueAggregate: v.valueAggregate.toString(),
    timestamp: Number(v.timestamp),
    nonce: Number(v.nonce),
    chainId: Number(v.chainId),
  }
}

/** The v2 PAYMENT-SIGNATURE value of a deferred payment. */
export function deferredHeader(
  required: Challenge['v2'],
  accepted: Requirement,
  payload: Record<string, unknown>,
): string {
  return Buffer.from(JSON.stringify({ x402Version: 2, resource: required.resource, accepted, payload })).toString(
    'base64',
  )
}

/**
 * `n` paid deferred calls of `buyer` to `url` through `proxy`: one new voucher id, aggregated call
 * by call, PAYER-IDENTIFIER sent throughout. Throws on any answer but 200; returns the last voucher.
 */
export async function payDeferredCalls(
  proxy: Pick<FastifyInstance, 'inject'>,
  buyer: DeferredBuyer,
  url: string,
  n: number,
): Promise<DeferredVoucher> {
  const headers = { 'payer-identifier': buyer.address }
  const required = decodeRequired((await proxy.inject({ url, headers })).headers['payment-required'] as string)
  const deferred = required.accepts.find((a) => a.scheme === 'deferred')!
  let v: DeferredVoucher | undefined
  for (let i = 0; i < n; i++) {
    v = buyer.voucher(deferred, v)
    const signature = await buyer.sign(v)
    const r = await proxy.inject({
      url,
      headers: {
        ...headers,
        'payment-signature': deferredHeader(required, deferred, { voucher: voucherWire(v), signature }),
      },
    })
    if (r.statusCode !== 200) throw new Error(`call ${i}: ${r.statusCode} ${r.body}`)
  }
  return v!
}
