import { computeChannelId, signVoucher } from '@x402/evm/batch-settlement/client'
import t from 'tap'
import { bytesToHex, getAddress } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { recoverAuthorizer } from '../../../../src/chain/recover-signer.js'
import { offeredSchemes } from '../../../../src/schemes/batch-settlement/offered.js'
import { decodeBatchPayload, type BatchPayload } from '../../../../src/schemes/batch-settlement/payload.js'
import { BATCH_SETTLEMENT_REASONS } from '../../../../src/schemes/batch-settlement/reasons.js'
import { checkChannelTerms, checkCumulative } from '../../../../src/schemes/batch-settlement/rules.js'
import {
  batchDomainSeparator,
  channelIdOf,
  voucherDigestOf,
  type ChannelConfig,
} from '../../../../src/schemes/batch-settlement/typed-data.js'
import { HOSTED_NAMESPACE } from '../../../../src/services/hosted-seed.js'

const payer = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d')
const other = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a')
const chainId = 84532
const domain = batchDomainSeparator(chainId)
const config: ChannelConfig = {
  payer: payer.address.toLowerCase() as `0x${string}`,
  payerAuthorizer: payer.address.toLowerCase() as `0x${string}`,
  receiver: '0x1111111111111111111111111111111111111111',
  receiverAuthorizer: '0x2222222222222222222222222222222222222222',
  token: '0x036cbd53842c5426634e7929541ec2318f3dcf7e',
  withdrawDelay: 900,
  salt: `0x${'00'.repeat(31)}07`,
}
const terms = {
  asset: config.token,
  payTo: config.receiver,
  receiverAuthorizer: config.receiverAuthorizer,
  withdrawDelay: 900,
}
const official = (c: ChannelConfig) =>
  computeChannelId(
    {
      ...c,
      payer: getAddress(c.payer),
      payerAuthorizer: getAddress(c.payerAuthorizer),
      receiver: getAddress(c.receiver),
      receiverAuthorizer: getAddress(c.receiverAuthorizer),
      token: getAddress(c.token),
    },
    `eip155:${chainId}`,
  ).toLowerCase()

const wire = (c: ChannelConfig, channelId: string, max: string, signature: string, type = 'voucher') => ({
  type,
  channelConfig: { ...c, payer: getAddress(c.payer) },
  voucher: { channelId, maxClaimableAmount: max, signature },
})

t.test('the channel id and voucher digest are the official client’s (native keccak)', async (t) => {
  const id = channelIdOf(domain, config)
  t.equal(id, official(config), 'channelId = EIP-712 hash of the config under the x402 Batch Settlement domain')
  t.not(channelIdOf(batchDomainSeparator(8453), config), id, 'bound to the chain id')
  t.not(channelIdOf(domain, { ...config, salt: `0x${'00'.repeat(32)}` }), id, 'salt differentiates channels')
  const v = await signVoucher(payer, id, '5000', `eip155:${chainId}`)
  t.equal(recoverAuthorizer(voucherDigestOf(domain, id, 5000n), v.signature), config.payer, 'the voucher recovers')
  t.not(recoverAuthorizer(voucherDigestOf(domain, id, 5001n), v.signature), config.payer, 'another amount does not')
})

t.test('payload decoding: each type, each malformed field named with the spec code of its type', async (t) => {
  const id = channelIdOf(domain, config)
  const { signature } = await signVoucher(payer, id, '1000', `eip155:${chainId}`)
  const ok = decodeBatchPayload(wire(config, id, '1000', signature))
  t.ok(ok.ok, 'a voucher payload')
  if (ok.ok) t.match(ok.payload, { type: 'voucher', channelId: id, maxClaimable: 1000n })
  const bad = (p: unknown) => {
    const d = decodeBatchPayload(p)
    return d.ok ? 'accepted' : d.reason
  }
  t.equal(bad(null), 'invalid_batch_settlement_evm_payload_type')
  t.equal(bad({ ...wire(config, id, '1', signature), type: 'claim' }), 'invalid_batch_settlement_evm_payload_type')
  t.equal(bad(wire(config, id, '-1', signature)), 'invalid_batch_settlement_evm_voucher_payload')
  t.equal(bad(wire(config, id, (1n << 128n).toString(), signature)), 'invalid_batch_settlement_evm_voucher_payload')
  t.equal(bad(wire(config, id.slice(0, 10), '1', signature)), 'invalid_batch_settlement_evm_voucher_payload')
  t.equal(
    bad(wire({ ...config, withdrawDelay: 1.5 }, id, '1', signature)),
    'invalid_batch_settlement_evm_voucher_payload',
  )
  t.equal(bad(wire(config, id, '1', '0x1234')), 'invalid_batch_settlement_evm_voucher_payload')
  t.equal(bad(wire(config, id, '1', signature, 'deposit')), 'invalid_batch_settlement_evm_deposit_payload')
  t.equal(
    bad({ ...wire(config, id, '1', signature, 'deposit'), deposit: { amount: '10', authorization: {} } }),
    'invalid_batch_settlement_evm_erc3009_authorization_required',
  )
  t.equal(
    bad({ ...wire(config, id, '1', signature, 'refund'), amount: '0' }),
    'invalid_batch_settlement_evm_refund_amount_invalid',
  )
  const dep = decodeBatchPayload({
    ...wire(config, id, '1', signature, 'deposit'),
    deposit: {
      amount: '100000',
      authorization: {
        erc3009Authorization: { validAfter: '0', validBefore: '1770000000', salt: `0x${'ab'.repeat(32)}`, signature },
      },
    },
  })
  t.ok(dep.ok && dep.payload.deposit?.amount === 100000n, 'a deposit payload')
})

t.test('rules 1 to 5 and the withdraw-delay bounds, in the spec’s order', async (t) => {
  const id = channelIdOf(domain, config)
  const p = (c: ChannelConfig, channelId = channelIdOf(domain, c)): BatchPayload => ({
    type: 'voucher',
    config: c,
    channelId,
    maxClaimable: 1n,
    signature: '0x',
  })
  t.equal(checkChannelTerms(p(config), terms, domain), undefined, 'fits')
  const reason = (c: ChannelConfig, channelId?: `0x${string}`) =>
    checkChannelTerms(p(c, channelId), terms, domain)?.reason
  t.equal(reason(config, `0x${'11'.repeat(32)}`), 'invalid_batch_settlement_evm_channel_id_mismatch')
  t.equal(reason({ ...config, salt: `0x${'00'.repeat(32)}` }, id), 'invalid_batch_settlement_evm_channel_id_mismatch')
  t.equal(reason({ ...config, token: config.receiver }), 'invalid_batch_settlement_evm_token_mismatch')
  t.equal(reason({ ...config, receiver: config.token }), 'invalid_batch_settlement_evm_receiver_mismatch')
  t.equal(
    reason({ ...config, receiverAuthorizer: config.payer }),
    'invalid_batch_settlement_evm_receiver_authorizer_mismatch',
  )
  t.equal(reason({ ...config, withdrawDelay: 899 }), 'invalid_batch_settlement_evm_withdraw_delay_out_of_range')
  t.equal(
    reason({ ...config, withdrawDelay: 30 * 86400 + 1 }),
    'invalid_batch_settlement_evm_withdraw_delay_out_of_range',
  )
  t.equal(reason({ ...config, withdrawDelay: 3600 }), 'invalid_batch_settlement_evm_withdraw_delay_mismatch')
  t.ok(bytesToHex(domain).length === 66)
})

t.test('the cumulative rules: exact amount, channel existence, balance, not below claimed', async (t) => {
  const s = { charged: 3000n, balance: 10000n, totalClaimed: 2000n }
  const v = (type: 'voucher' | 'deposit' | 'refund', maxClaimable: bigint, depositAmount = 0n) =>
    checkCumulative({ type, maxClaimable, depositAmount }, s, 1000n)
  t.equal(v('voucher', 4000n), undefined, 'charged + amount')
  t.equal(v('voucher', 3999n), 'invalid_batch_settlement_evm_cumulative_amount_mismatch')
  t.equal(v('voucher', 5000n), 'invalid_batch_settlement_evm_cumulative_amount_mismatch', 'a replay or a skip')
  t.equal(v('refund', 3000n), undefined, 'a refund voucher is zero-charge')
  t.equal(v('refund', 4000n), 'invalid_batch_settlement_evm_cumulative_amount_mismatch')
  t.equal(
    checkCumulative(
      { type: 'voucher', maxClaimable: 1000n, depositAmount: 0n },
      { ...s, charged: 0n, balance: 0n },
      1000n,
    ),
    'invalid_batch_settlement_evm_channel_not_found',
  )
  t.equal(
    checkCumulative({ type: 'voucher', maxClaimable: 11000n, depositAmount: 0n }, { ...s, charged: 10000n }, 1000n),
    'invalid_batch_settlement_evm_cumulative_exceeds_balance',
  )
  t.equal(
    checkCumulative({ type: 'deposit', maxClaimable: 11000n, depositAmount: 5000n }, { ...s, charged: 10000n }, 1000n),
    undefined,
    'balance + deposit',
  )
  t.equal(
    checkCumulative({ type: 'voucher', maxClaimable: 2000n, depositAmount: 0n }, { ...s, charged: 1000n }, 1000n),
    'invalid_batch_settlement_evm_cumulative_below_claimed',
  )
  t.equal(
    checkCumulative({ type: 'refund', maxClaimable: 2000n, depositAmount: 0n }, { ...s, charged: 2000n }, 1000n),
    undefined,
    'a refund may equal totalClaimed',
  )
})

t.test('error codes are the spec’s, and hosted endpoints offer the scheme by default', async (t) => {
  for (const code of Object.keys(BATCH_SETTLEMENT_REASONS))
    t.match(code, /^invalid_batch_settlement_evm_[a-z0-9_]+$/, code)
  t.same(offeredSchemes(HOSTED_NAMESPACE, ['exact']), ['exact', 'batch-settlement'])
  t.same(offeredSchemes(HOSTED_NAMESPACE, ['exact', 'batch-settlement']), ['exact', 'batch-settlement'])
  t.same(offeredSchemes('acme', ['exact']), ['exact'], 'a seller enables it itself')
  t.ok(other.address)
})
