import t from 'tap'
import * as jose from 'jose'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Body = {
  header: Record<string, unknown>
  payload: Record<string, unknown>
  claims: Record<string, { status: string; value?: number }>
  verification: {
    attempted: boolean
    signatureValid?: boolean
    valid?: boolean
    error?: string | null
    claimProblems: string[]
  }
}
const call = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Body>(await runInline(handler, input, { from }))

// jwt.io's well-known example token
const JWT_IO =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c'

const tamper = (token: string) => {
  const [h, p, s] = token.split('.')
  const payload = JSON.parse(Buffer.from(p, 'base64url').toString())
  payload.admin = true
  return [h, Buffer.from(JSON.stringify(payload)).toString('base64url'), s].join('.')
}

t.test('known HS256 token decodes and verifies; tampered one is rejected', async (t) => {
  const ok = await call({ token: JWT_IO, secret: 'your-256-bit-secret' })
  t.same(ok.header, { alg: 'HS256', typ: 'JWT' })
  t.same(ok.payload, { sub: '1234567890', name: 'John Doe', iat: 1516239022 })
  t.match(ok.claims.iat, { status: 'valid', value: 1516239022 })
  t.match(ok.claims.exp, { status: 'absent' })
  t.match(ok.verification, { attempted: true, signatureValid: true, valid: true, error: null })

  const bad = await call({ token: tamper(JWT_IO), secret: 'your-256-bit-secret' })
  t.equal(bad.payload.admin, true)
  t.match(bad.verification, { signatureValid: false, valid: false, error: /signature verification failed/ })

  const wrongSecret = await call({ token: JWT_IO, secret: 'not-the-secret' })
  t.equal(wrongSecret.verification.signatureValid, false)
})

t.test('decode only, from the query string', async (t) => {
  const r = await call({ token: JWT_IO, at: '1516239000' }, 'query')
  t.equal(r.verification.attempted, false)
  t.equal(r.claims.iat.status, 'in_future')
})

t.test('exp and nbf status with tolerance', async (t) => {
  const secret = new TextEncoder().encode('s3cret-s3cret-s3cret-s3cret-s3cret')
  const token = await new jose.SignJWT({ scope: 'read' })
    .setProtectedHeader({ alg: 'HS512' })
    .setIssuedAt(1_700_000_000)
    .setNotBefore(1_700_000_100)
    .setExpirationTime(1_700_003_600)
    .setIssuer('https://issuer.example')
    .setAudience(['api', 'web'])
    .sign(secret)
  const early = await call({ token, secret: 's3cret-s3cret-s3cret-s3cret-s3cret', at: 1_700_000_050 })
  t.equal(early.claims.nbf.status, 'not_yet_valid')
  t.match(early.verification, { signatureValid: true, valid: false })
  const inWindow = await call({
    token,
    secret: 's3cret-s3cret-s3cret-s3cret-s3cret',
    at: 1_700_000_200,
    issuer: 'https://issuer.example',
    audience: 'api',
  })
  t.match(inWindow.verification, { signatureValid: true, valid: true })
  const late = await call({ token, secret: 's3cret-s3cret-s3cret-s3cret-s3cret', at: 1_700_003_650 })
  t.equal(late.claims.exp.status, 'expired')
  t.equal(late.verification.valid, false)
  const lenient = await call({
    token,
    secret: 's3cret-s3cret-s3cret-s3cret-s3cret',
    at: 1_700_003_650,
    clockToleranceSec: 60,
  })
  t.equal(lenient.claims.exp.status, 'valid')
  const wrongAud = await call({
    token,
    secret: 's3cret-s3cret-s3cret-s3cret-s3cret',
    at: 1_700_000_200,
    audience: 'admin',
    issuer: 'https://other.example',
  })
  t.equal(wrongAud.verification.valid, false)
  t.equal(wrongAud.verification.claimProblems.length, 2)
})

t.test('RS256 with a PEM public key and ES256 with an inline JWKS', async (t) => {
  const rsa = await jose.generateKeyPair('RS256', { extractable: true })
  const rsToken = await new jose.SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'RS256' }).sign(rsa.privateKey)
  const pem = await jose.exportSPKI(rsa.publicKey)
  t.match((await call({ token: rsToken, publicKey: pem })).verification, { signatureValid: true, valid: true })
  t.match((await call({ token: tamper(rsToken), publicKey: pem })).verification, { signatureValid: false })

  const ec = await jose.generateKeyPair('ES256', { extractable: true })
  const jwk = { ...(await jose.exportJWK(ec.publicKey)), kid: 'k1', alg: 'ES256' }
  const other = {
    ...(await jose.exportJWK((await jose.generateKeyPair('ES256', { extractable: true })).publicKey)),
    kid: 'k2',
    alg: 'ES256',
  }
  const esToken = await new jose.SignJWT({ sub: 'bob' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .sign(ec.privateKey)
  t.match((await call({ token: esToken, jwks: { keys: [other, jwk] } })).verification, {
    method: 'jwks',
    signatureValid: true,
  })
  t.match((await call({ token: esToken, jwks: { keys: [other] } })).verification, {
    signatureValid: false,
    error: /JWKS/,
  })
})

t.test('algorithm confusion and alg none are refused', async (t) => {
  // HS256 token checked against a public key: not an allowed algorithm for keys
  const rsa = await jose.generateKeyPair('RS256', { extractable: true })
  const pem = await jose.exportSPKI(rsa.publicKey)
  t.match((await call({ token: JWT_IO, publicKey: pem })).verification, { signatureValid: false, error: /not allowed/ })
  const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.`
  const r = await call({ token: none, secret: 'x' })
  t.equal(r.header.alg, 'none')
  t.match(r.verification, { signatureValid: false, error: /not allowed/ })
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { token: '' }), { ok: false, status: 400, field: 'token' })
  t.match(await runInline(handler, { token: 'a.b' }), { ok: false, status: 400, field: 'token' })
  t.match(await runInline(handler, { token: '!!!.e30.x' }), { ok: false, status: 400, field: 'token' })
  t.match(await runInline(handler, { token: 'x'.repeat(16_385) }), { ok: false, status: 400, field: 'token' })
  t.match(await runInline(handler, { token: JWT_IO, secret: 'a', jwks: { keys: [{}] } }), {
    ok: false,
    status: 400,
    field: 'secret',
  })
  t.match(await runInline(handler, { token: 'eyJhbGciOiJSUzI1NiJ9.e30.c2ln', publicKey: 'not a pem' }), {
    ok: false,
    status: 400,
    field: 'publicKey',
  })
  t.match(await runInline(handler, { token: JWT_IO, algorithms: ['XX1'] }), {
    ok: false,
    status: 400,
    field: 'algorithms.0',
  })
})
