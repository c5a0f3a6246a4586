import t from 'tap'
import {
  formatSIWEMessage,
  parseSIWxHeader,
  validateSIWxMessage,
  verifySIWxSignature,
} from '@x402/extensions/sign-in-with-x'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signInHeader, signInOffer } from '../../../src/client/sign-in.js'
import { parseChallenge } from '../../../src/client/challenge.js'
import { buildChallenge, paymentRequiredHeader } from '../../../src/x402/challenge.js'
import {
  checkSignInFields,
  parseSignInHeader,
  signInDeclaration,
  signInMessage,
  type SignInPayload,
  type SignInTerms,
} from '../../../src/x402/sign-in-with-x.js'

const terms: SignInTerms = {
  domain: 'api.example.com:8443',
  uri: 'https://api.example.com:8443/acme/weather/now',
  statement: 'Sign in with the wallet that paid for access to /acme/weather/now',
  chainIds: ['eip155:84532'],
}
const account = privateKeyToAccount(generatePrivateKey())
const payloadOf = (over: Partial<SignInPayload> = {}, nowMs = Date.now()): SignInPayload => ({
  ...signInDeclaration(terms, nowMs).info,
  address: account.address,
  chainId: 'eip155:84532',
  type: 'eip191',
  signature: '0x',
  ...over,
})

/** The official message text for a payload. */
const official = (p: SignInPayload) =>
  formatSIWEMessage({ ...p, type: 'eip191', signatureScheme: undefined }, p.address)

t.test('the message is the official EIP-4361 text, with every optional field and without', async (t) => {
  const full = payloadOf({ notBefore: '2026-01-01T00:00:00.000Z', requestId: 'r-1' })
  t.equal(signInMessage(full), official(full))
  const bare = payloadOf({ statement: undefined, expirationTime: undefined, resources: undefined })
  t.equal(signInMessage(bare), official(bare))
  const lower = payloadOf({ address: account.address.toLowerCase() })
  t.equal(signInMessage(lower), official(lower), 'a lower-case address is checksummed, as the siwe library does')
})

t.test('our client proof passes the official server checks (parse, validate, verify)', async (t) => {
  const challenge = buildChallenge({
    resourceUrl: terms.uri,
    description: 'weather',
    mimeType: 'application/json',
    payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    amount: 1000n,
    maxTimeoutSeconds: 60,
    chain: {
      chainId: 84532,
      network: 'base-sepolia',
      caip2: 'eip155:84532',
      usdc: { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2' },
    },
    method: 'GET',
    signIn: terms,
  })
  const parsed = parseChallenge(paymentRequiredHeader(challenge))
  const offer = signInOffer([{ parsed }], `${terms.uri}?city=Paris`)
  t.ok(offer, 'offered, bound to the origin asked')
  t.equal(signInOffer([{ parsed }], 'https://other.example/acme/weather/now'), undefined, 'never for another origin')
  const header = await signInHeader(offer!, account.address, (message) => account.signMessage({ message }))
  const official = parseSIWxHeader(header)
  t.same(await validateSIWxMessage(official, new URL('https://api.example.com:8443')), { isValid: true })
  t.same(await verifySIWxSignature(official), { isValid: true, payer: account.address })
  const ours = parseSignInHeader(header)
  t.ok(ours.ok)
  if (ours.ok) t.equal(checkSignInFields(ours.payload, terms, Date.now()), undefined)
})

t.test('each 402 header carries a new nonce; the precomputed challenge leaves the declaration out', async (t) => {
  const challenge = buildChallenge({
    resourceUrl: terms.uri,
    description: '',
    mimeType: '',
    payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    amount: 1n,
    maxTimeoutSeconds: 60,
    chain: {
      chainId: 84532,
      network: 'base-sepolia',
      caip2: 'eip155:84532',
      usdc: { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2' },
    },
    method: 'GET',
    signIn: terms,
  })
  const decode = (h: string) => JSON.parse(Buffer.from(h, 'base64').toString()) as Record<string, any>
  const a = decode(paymentRequiredHeader(challenge))
  const b = decode(paymentRequiredHeader(challenge, 'invalid_siwx_nonce'))
  t.not(a.extensions['sign-in-with-x'].info.nonce, b.extensions['sign-in-with-x'].info.nonce)
  t.equal(b.error, 'invalid_siwx_nonce')
  t.same(a.extensions['sign-in-with-x'].supportedChains, [{ chainId: 'eip155:84532', type: 'eip191' }])
  t.equal(challenge.v2.extensions?.['sign-in-with-x'], undefined)
})

t.test('field checks name the extension reasons', async (t) => {
  const now = Date.now()
  const check = (over: Partial<SignInPayload>) => checkSignInFields(payloadOf(over, now), terms, now)?.reason
  t.equal(check({}), undefined)
  t.equal(check({ domain: 'api.example.com' }), 'invalid_siwx_domain_mismatch', 'the port is part of the domain')
  t.equal(check({ uri: 'https://api.example.com:8443/acme/weather/other' }), 'invalid_siwx_uri_mismatch')
  t.equal(check({ uri: 'not a url' }), 'invalid_siwx_uri_mismatch')
  t.equal(check({ issuedAt: 'yesterday' }), 'invalid_siwx_issued_at')
  t.equal(check({ issuedAt: new Date(now - 301_000).toISOString() }), 'invalid_siwx_issued_at_too_old')
  t.equal(check({ issuedAt: new Date(now + 10_000).toISOString() }), 'invalid_siwx_issued_at_in_future')
  t.equal(check({ expirationTime: 'soon' }), 'invalid_siwx_expiration_time')
  t.equal(check({ expirationTime: new Date(now - 1).toISOString() }), 'invalid_siwx_expired')
  t.equal(check({ notBefore: 'later' }), 'invalid_siwx_not_before')
  t.equal(check({ notBefore: new Date(now + 60_000).toISOString() }), 'invalid_siwx_not_yet_valid')
  t.equal(check({ chainId: 'eip155:x' }), 'invalid_siwx_chain_id')
  t.equal(check({ chainId: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' }), 'invalid_siwx_unsupported_chain')
  t.equal(check({ chainId: 'eip155:1' }), 'invalid_siwx_unsupported_chain')
})

t.test('a malformed header is refused with what is wrong, a line break in a field included', async (t) => {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64')
  const good = payloadOf({ signature: '0x00' })
  t.ok(parseSignInHeader(enc(good)).ok)
  t.match(parseSignInHeader('%%%'), { ok: false, detail: 'not base64' })
  t.match(parseSignInHeader(enc([1])), { ok: false, detail: 'not a JSON object' })
  t.match(parseSignInHeader(enc({ ...good, nonce: 7 })), { ok: false, detail: 'nonce must be a string' })
  t.match(parseSignInHeader(enc({ ...good, statement: 'a\nURI: https://evil' })), {
    ok: false,
    detail: 'statement must be one line of text',
  })
  t.match(parseSignInHeader(enc({ ...good, address: '0x12' })), { ok: false, detail: /address/ })
  t.match(parseSignInHeader(enc({ ...good, nonce: 'short' })), { ok: false, detail: /nonce/ })
  t.match(parseSignInHeader('A'.repeat(20_000)), { ok: false, detail: /larger/ })
})
