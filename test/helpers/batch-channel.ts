/**
 * Batch-settlement channels on a test devnet, opened the way a buyer with the official `@x402/evm`
 * client opens them: the client signs the ERC-3009 deposit authorization and the vouchers, unmodified;
 * a relayer submits `deposit(config, amount, ERC3009DepositCollector, collectorData)`.
 */
import {
  computeChannelId,
  createBatchSettlementEIP3009DepositPayload,
  signVoucher,
} from '@x402/evm/batch-settlement/client'
import { toClientEvmSigner } from '@x402/evm'
import {
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  http,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_USDC_ADDRESS, mintUsdc, type Devnet } from '../../src/chain/devnet.js'
import {
  BATCH_SETTLEMENT_ADDRESS,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
} from '../../src/chain/batch-settlement/addresses.js'
import { encodeDeposit } from '../../src/chain/batch-settlement/calldata.js'
import type { ChannelConfig } from '../../src/chain/batch-settlement/channel.js'

export interface TestChannel {
  payer: PrivateKeyAccount
  config: ChannelConfig
  channelId: Hex
  network: string
  deposited: bigint
  /** the deposit's transaction */
  depositTx: Hex
  /** the official client's voucher signature for a cumulative ceiling */
  voucher(maxClaimable: bigint): Promise<Hex>
}

export function chainClients(devnet: Devnet) {
  const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl), pollingInterval: 50 })
  const wallet = (account: PrivateKeyAccount) =>
    createWalletClient({ chain: devnet.chain, transport: http(devnet.rpcUrl), account })
  return { pub, wallet }
}

/** Requirements as a server would announce them (the client reads network, asset, extra.name/version). */
function requirements(devnet: Devnet, receiver: Address, receiverAuthorizer: Address, withdrawDelay: number) {
  return {
    scheme: 'batch-settlement',
    network: `eip155:${devnet.chainId}`,
    amount: '1000',
    asset: DEVNET_USDC_ADDRESS,
    payTo: receiver,
    maxTimeoutSeconds: 300,
    extra: { receiverAuthorizer, withdrawDelay, name: 'USDC', version: '2' },
  }
}

/**
 * A fresh payer holding `deposit` test USDC, its channel to `receiver` (authorized by
 * `receiverAuthorizer`), the deposit submitted by `relayer` and mined. The first voucher the official
 * client signs with the deposit is for `firstVoucher`.
 */
export async function openChannel(
  devnet: Devnet,
  opts: {
    receiver: Address
    receiverAuthorizer: Address
    relayer: PrivateKeyAccount
    deposit: bigint
    withdrawDelay?: number
    payer?: PrivateKeyAccount
  },
): Promise<TestChannel> {
  const { pub, wallet } = chainClients(devnet)
  const payer = opts.payer ?? privateKeyToAccount(generatePrivateKey())
  await mintUsdc(devnet.rpcUrl, payer.address, opts.deposit)
  const withdrawDelay = opts.withdrawDelay ?? 900
  const network = `eip155:${devnet.chainId}`
  const config: ChannelConfig = {
    payer: payer.address,
    payerAuthorizer: payer.address,
    receiver: opts.receiver,
    receiverAuthorizer: opts.receiverAuthorizer,
    token: DEVNET_USDC_ADDRESS,
    withdrawDelay,
    salt: generatePrivateKey(),
  }
  const signer = toClientEvmSigner(payer)
  const req = requirements(devnet, opts.receiver, opts.receiverAuthorizer, withdrawDelay)
  const result = await createBatchSettlementEIP3009DepositPayload(
    signer,
    2,
    req as never,
    config,
    opts.deposit.toString(),
    '1000',
  )
  const payload = result.payload as {
    deposit: { amount: string; authorization: { erc3009Authorization: Record<string, string> } }
  }
  const auth = payload.deposit.authorization.erc3009Authorization
  const collectorData = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
    [BigInt(auth.validAfter!), BigInt(auth.validBefore!), BigInt(auth.salt!), auth.signature as Hex],
  )
  const hash = await wallet(opts.relayer).sendTransaction({
    to: BATCH_SETTLEMENT_ADDRESS,
    data: encodeDeposit(config, opts.deposit, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, collectorData),
  })
  const receipt = await pub.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error('openChannel: the deposit reverted')
  const channelId = computeChannelId(config, network)
  return {
    payer,
    config,
    channelId,
    network,
    deposited: opts.deposit,
    depositTx: hash,
    voucher: async (max) => (await signVoucher(signer, channelId, max.toString(), network)).signature,
  }
}
