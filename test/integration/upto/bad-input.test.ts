/**
 * Bad `upto` payments against the proxy: a Permit2 payload with the wrong spender, witness (payTo,
 * facilitator, validAfter), token, deadline or amount, a forged signature, a replayed nonce, no
 * Permit2 allowance, and the v1 header — each a clear 402 naming the reason, never a 5xx, and
 * nothing recorded or charged. The official upto client's payload is the base each case edits.
 */
import t from 'tap'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { uptoPermit2WitnessTypes } from '@x402/evm'
import { erc20Abi, maxUint256, type Hex } from 'viem'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { PERMIT2_ADDRESS } from '../../../src/chain/permit2.js'
import { decodeRequired } from '../../helpers/pay.js'
import { startTestPlatform } from '../../helpers/platform.js'
import { newPayer, walletFor } from '../../helpers/settlement.js'

const path = '/tollgate/toolbox/hash-generator?text=abc&algorithms=sha256'

interface Auth {
  from: string
  permitted: { token: string; amount: string }
  spender: string
  nonce: string
  deadline: string
  witness: { to: string; facilitator: string; validAfter: string }
}

t.test('upto: bad payments are refused with their reason, nothing charged', async (t) => {
  const platform = await startTestPlatform(t)
  const { deps, proxy, devnet } = platform
  await deps.db
    .updateTable('endpoints')
    .set({ schemes: ['exact', 'upto'] })
    .where('slug', '=', 'hash-generator')
    .execute()
  const { app } = await platform.startProxy()
  const challenge = await app.inject(path)
  const required = decodeRequired(challenge.headers['payment-required'] as string)
  const upto = required.accepts.find((a: { scheme: string }) => a.scheme === 'upto')!
  t.ok(upto, 'upto is offered')
  void proxy

  const buyer = await newPayer(platform, 100_000n)
  const account = privateKeyToAccount(buyer.key as Hex)
  await walletFor(platform, buyer.key as Hex).writeContract({
    address: deps.config.chain.usdc.address,
    abi: erc20Abi,
    functionName: 'approve',
    args: [PERMIT2_ADDRESS, maxUint256],
  })

  /** the official client's payload, optionally edited and re-signed (so that only the edited field is wrong) */
  async function payload(edit?: (a: Auth) => void, signer: PrivateKeyAccount = account) {
    const made = (await new UptoEvmScheme(account).createPaymentPayload(2, upto)).payload as {
      signature: Hex
      permit2Authorization: Auth
    }
    if (!edit) return made
    const a = made.permit2Authorization
    edit(a)
    const signature = await signer.signTypedData({
      domain: { name: 'Permit2', chainId: devnet.chainId, verifyingContract: PERMIT2_ADDRESS },
      types: uptoPermit2WitnessTypes,
      primaryType: 'PermitWitnessTransferFrom',
      message: {
        permitted: { token: a.permitted.token as Hex, amount: BigInt(a.permitted.amount) },
        spender: a.spender as Hex,
        nonce: BigInt(a.nonce),
        deadline: BigInt(a.deadline),
        witness: {
          to: a.witness.to as Hex,
          facilitator: a.witness.facilitator as Hex,
          validAfter: BigInt(a.witness.validAfter),
        },
      },
    })
    return { signature, permit2Authorization: a }
  }
  const send = (p: object, accepted: object = upto) =>
    app.inject({
      url: path,
      headers: {
        'payment-signature': Buffer.from(
          JSON.stringify({ x402Version: 2, resource: required.resource, accepted, payload: p }),
        ).toString('base64'),
      },
    })
  async function refused(name: string, p: object, reason: string, accepted?: object) {
    const res = await send(p, accepted)
    t.equal(res.statusCode, 402, `${name}: 402`)
    const body = decodeRequired(res.headers['payment-required'] as string) as { error?: string }
    t.match(body.error ?? '', new RegExp(`^${reason}`), `${name}: ${reason}`)
  }

  const other = devnet.accounts.faucet.address
  await refused(
    'wrong spender',
    await payload((a) => (a.spender = '0x402085c248EeA27D92E8b30b2C58ed07f9E20001')),
    'invalid_permit2_spender',
  )
  await refused(
    'witness pays another recipient',
    await payload((a) => (a.witness.to = other)),
    'invalid_permit2_recipient_mismatch',
  )
  await refused(
    'witness names another facilitator',
    await payload((a) => (a.witness.facilitator = other)),
    'upto_facilitator_mismatch',
  )
  await refused(
    'witness not valid yet',
    await payload((a) => (a.witness.validAfter = String(Math.floor(Date.now() / 1000) + 3600))),
    'permit2_not_yet_valid',
  )
  await refused('another token', await payload((a) => (a.permitted.token = other)), 'permit2_token_mismatch')
  await refused(
    'deadline passed',
    await payload((a) => (a.deadline = String(Math.floor(Date.now() / 1000) - 1))),
    'permit2_deadline_expired',
  )
  await refused('amount below the maximum', await payload((a) => (a.permitted.amount = '1')), 'permit2_amount_mismatch')
  await refused('accepted for another amount', await payload(), 'accepted_requirements_mismatch', {
    ...upto,
    amount: '1',
  })
  const forged = await payload()
  forged.permit2Authorization.witness.validAfter = '1'
  await refused('a field changed after signing', forged, 'invalid_permit2_signature')
  const stranger = await payload((a) => a, privateKeyToAccount(devnet.accounts.faucet.privateKey))
  await refused('signed by someone else', stranger, 'invalid_permit2_signature')
  await refused('malformed', { signature: '0x12', permit2Authorization: {} }, 'invalid_payload')

  // no Permit2 allowance: refused before anything is reserved
  const unapproved = await newPayer(platform, 100_000n)
  const ua = privateKeyToAccount(unapproved.key as Hex)
  const noAllowance = (await new UptoEvmScheme(ua).createPaymentPayload(2, upto)).payload
  await refused('no Permit2 allowance', noAllowance, 'permit2_allowance_required')

  // a good payment is served once; its replay is refused
  const good = await payload()
  const served = await send(good)
  t.equal(served.statusCode, 200, 'the good payment is served')
  await refused('replayed nonce', good, 'permit2_invalid_nonce')

  const rows = await deps.db
    .selectFrom('payments')
    .select(['status', 'value'])
    .where('payer', 'in', [buyer.address.toLowerCase(), unapproved.address.toLowerCase()])
    .execute()
  t.same(
    rows,
    [{ status: 'served', value: '1000' }],
    'only the good payment is recorded (a fixed-price handler charges its maximum)',
  )
})
