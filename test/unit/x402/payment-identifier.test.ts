import t from 'tap'
import {
  appendPaymentIdentifierToExtensions,
  isPaymentIdentifierExtension,
  isValidPaymentId as officialIsValid,
  validatePaymentIdentifier,
} from '@x402/extensions/payment-identifier'
import { buildChallenge } from '../../../src/x402/challenge.js'
import {
  isValidPaymentId,
  PAYMENT_IDENTIFIER,
  paymentIdentifierDeclaration,
  readPaymentIdentifier,
} from '../../../src/x402/payment-identifier.js'

const chain = {
  chainId: 84532,
  network: 'base-sepolia' as const,
  caip2: 'eip155:84532',
  usdc: { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2' },
}
const input = {
  resourceUrl: 'https://proxy.example/a/b/c',
  description: 'd',
  mimeType: 'application/json',
  payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
  amount: 1000n,
  maxTimeoutSeconds: 300,
  chain,
  method: 'GET',
}

t.test('the id format is the official package’s', async (t) => {
  for (const id of [
    'pay_7d5d747be160e280504c099d984bcfe0',
    'a'.repeat(16),
    'a'.repeat(15),
    'a'.repeat(128),
    'a'.repeat(129),
    'has space in it 123',
    'ünïcödé_ünïcödé_1',
    'ok-ok_ok-ok_ok-ok',
    '',
    42,
    null,
  ]) {
    t.equal(isValidPaymentId(id), officialIsValid(id as string), JSON.stringify(id))
  }
})

t.test('the 402 declares payment-identifier as the official helpers read it', async (t) => {
  const ch = buildChallenge({ ...input, paymentIdentifier: true })
  const declared = ch.v2.extensions?.[PAYMENT_IDENTIFIER]
  t.same(declared, paymentIdentifierDeclaration())
  t.ok(isPaymentIdentifierExtension(declared), 'isPaymentIdentifierExtension')
  t.same(validatePaymentIdentifier(declared), { valid: true })
  const echoed = appendPaymentIdentifierToExtensions(
    structuredClone(ch.v2.extensions!),
    'pay_7d5d747be160e280504c099d984bcfe0',
  )
  t.same(
    readPaymentIdentifier(echoed),
    { ok: true, id: 'pay_7d5d747be160e280504c099d984bcfe0' },
    'the id the official client helper adds is read back',
  )
  t.ok(
    ch.paymentHeaderBudget > Buffer.from(JSON.stringify({ extensions: echoed })).length * 1.3,
    'the header budget leaves room for the longest id',
  )
  t.notOk(buildChallenge(input).v2.extensions?.[PAYMENT_IDENTIFIER], 'not declared unless asked')
})

t.test('reading the id from a payload: absent, declared without an id, bad', async (t) => {
  t.same(readPaymentIdentifier(undefined), { ok: true, id: undefined })
  t.same(readPaymentIdentifier({ bazaar: {} }), { ok: true, id: undefined })
  t.same(
    readPaymentIdentifier({ [PAYMENT_IDENTIFIER]: paymentIdentifierDeclaration() }),
    { ok: true, id: undefined },
    'the declaration echoed back carries no id',
  )
  for (const bad of [{ info: { required: false, id: 'short' } }, { info: { id: 7 } }, { info: 'x' }, 'x', [1]]) {
    t.match(readPaymentIdentifier({ [PAYMENT_IDENTIFIER]: bad }), { ok: false, detail: /./ }, JSON.stringify(bad))
  }
})
