// Payment headers made by the official clients for our challenge decode, pass the requirement
// checks and recover to the payer on the fast path. Offline: the exact/EIP-3009 clients only
// sign; the end-to-end exchange over HTTP is test/interop.
import t from 'tap'
import { x402Client } from '@x402/core/client'
import { x402HTTPClient } from '@x402/core/http'
import { ExactEvmScheme } from '@x402/evm'
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/client'
import { createPaymentHeader } from 'x402/client'
import { privateKeyToAccount } from 'viem/accounts'
import { makeDomainSeparator, transferAuthDigest } from '../../../src/chain/transfer-auth-digest.js'
import { recoverAuthorizer } from '../../../src/chain/recover-signer.js'
import { decodePaymentHeader } from '../../../src/x402/decode-payment.js'
import { verifyRequirements } from '../../../src/x402/verify-requirements.js'
import type { Challenge } from '../../../src/x402/challenge.js'
import { sampleChallenge } from './fixtures.js'

const account = privateKeyToAccount(`0x${'5a'.repeat(32)}`)

function verifyEndToEnd(
  t: Pick<typeof import('tap').t, 'ok' | 'equal' | 'fail'>,
  ch: Challenge,
  headers: { xPayment?: string; paymentSignature?: string },
  version: 1 | 2,
) {
  const decoded = decodePaymentHeader(headers, ch.paymentHeaderBudget)
  if (!decoded.ok) return t.fail(`decode: ${decoded.reason} ${decoded.message}`)
  t.equal(decoded.version, version)
  const checked = verifyRequirements(decoded, ch, Math.floor(Date.now() / 1000))
  if (!checked.ok) return t.fail(`requirements: ${checked.reason} ${checked.message}`)
  const ds = makeDomainSeparator({ ...ch.terms.token, chainId: ch.terms.chainId, verifyingContract: ch.terms.asset })
  t.equal(
    recoverAuthorizer(transferAuthDigest(ds, checked.authorization), checked.signature),
    account.address.toLowerCase(),
    'signer recovered',
  )
  t.equal(checked.authorization.from, account.address.toLowerCase(), 'from is the payer')
}

for (const method of ['GET', 'POST'] as const) {
  const ch = sampleChallenge({ method })
  const getHeader = (name: string) => (name.toUpperCase() === 'PAYMENT-REQUIRED' ? ch.v2HeaderValue : null)

  t.test(`${method}: @x402/fetch's client (v2, PAYMENT-SIGNATURE)`, async (t) => {
    const http = new x402HTTPClient(new x402Client().register('eip155:84532', new ExactEvmScheme(account)))
    const required = http.getPaymentRequiredResponse(getHeader, JSON.parse(ch.v1BodyJson))
    const payload = await http.createPaymentPayload(required)
    const headers = http.encodePaymentSignatureHeader(payload)
    t.ok(headers['PAYMENT-SIGNATURE'])
    t.ok(headers['PAYMENT-SIGNATURE'].length <= ch.paymentHeaderBudget, 'within the header budget')
    verifyEndToEnd(t, ch, { paymentSignature: headers['PAYMENT-SIGNATURE'] }, 2)
  })

  t.test(`${method}: @x402/core client on the v1 body (X-PAYMENT)`, async (t) => {
    const http = new x402HTTPClient(new x402Client().registerV1('base-sepolia', new ExactEvmSchemeV1(account)))
    const required = http.getPaymentRequiredResponse(() => null, JSON.parse(ch.v1BodyJson))
    const payload = await http.createPaymentPayload(required)
    const headers = http.encodePaymentSignatureHeader(payload)
    t.ok(headers['X-PAYMENT'])
    verifyEndToEnd(t, ch, { xPayment: headers['X-PAYMENT'] }, 1)
  })

  t.test(`${method}: legacy x402 createPaymentHeader (x402-fetch, X-PAYMENT)`, async (t) => {
    const body = JSON.parse(ch.v1BodyJson)
    const header = await createPaymentHeader(account as never, body.x402Version, body.accepts[0])
    verifyEndToEnd(t, ch, { xPayment: header }, 1)
  })
}
