import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_TOKEN = 16_384
const HMAC_ALGS = ['HS256', 'HS384', 'HS512']
const ASYMMETRIC_ALGS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]

interface Input {
  token: string
  secret?: string
  secretEncoding: 'utf8' | 'base64' | 'base64url' | 'hex'
  publicKey?: string
  jwks?: { keys: Record<string, unknown>[] }
  algorithms?: string[]
  issuer?: string
  audience?: string
  clockToleranceSec: number
  at?: number
}

type TimeClaim = { value: number; iso: string; status: string } | { status: 'absent' }

function timeClaim(v: unknown, field: string, status: (t: number) => string): TimeClaim {
  if (v === undefined) return { status: 'absent' }
  if (typeof v !== 'number' || !Number.isFinite(v))
    return { value: v as number, iso: '', status: `invalid: ${field} is not a number` }
  return { value: v, iso: new Date(v * 1000).toISOString(), status: status(v) }
}

export default defineHandler<Input>({
  slug: 'jwt-decoder-validator',
  description:
    'Decode a JWT (header, payload, signature) and optionally verify it with an HMAC secret, a PEM public key or certificate, or an inline JWKS; reports exp/nbf/iat status and issuer/audience checks.',
  inputSchema: {
    type: 'object',
    required: ['token'],
    additionalProperties: false,
    properties: {
      token: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_TOKEN,
        description: `compact JWS (header.payload.signature), at most ${MAX_TOKEN} characters`,
      },
      secret: {
        type: 'string',
        minLength: 1,
        maxLength: 1024,
        description: 'shared secret for HS256/HS384/HS512 verification',
      },
      secretEncoding: {
        type: 'string',
        enum: ['utf8', 'base64', 'base64url', 'hex'],
        default: 'utf8',
        description: 'how `secret` is encoded',
      },
      publicKey: {
        type: 'string',
        minLength: 1,
        maxLength: 16_384,
        description: 'PEM public key (SPKI "BEGIN PUBLIC KEY") or X.509 certificate for RS/PS/ES/EdDSA verification',
      },
      jwks: {
        type: 'object',
        required: ['keys'],
        description:
          'a JSON Web Key Set given inline ({ "keys": [...] }); the key is chosen by kid/alg. Never fetched from a URL.',
        properties: {
          keys: { type: 'array', minItems: 1, maxItems: 50, items: { type: 'object' }, description: 'public JWKs' },
        },
      },
      algorithms: {
        type: 'array',
        minItems: 1,
        maxItems: 14,
        items: { type: 'string', enum: [...HMAC_ALGS, ...ASYMMETRIC_ALGS] },
        description:
          'allowed algorithms; defaults to the HS family with a secret and the asymmetric ones with a key or JWKS',
      },
      issuer: { type: 'string', maxLength: 1024, description: 'expected iss claim' },
      audience: { type: 'string', maxLength: 1024, description: 'expected value (or member) of the aud claim' },
      clockToleranceSec: {
        type: 'integer',
        minimum: 0,
        maximum: 3600,
        default: 0,
        description: 'leeway in seconds for exp and nbf',
      },
      at: {
        type: 'integer',
        minimum: 0,
        maximum: 32503680000,
        description: 'evaluate time claims at this Unix time (seconds) instead of now',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'header, payload, signature; claims (exp/nbf/iat each with value, ISO time, status); verification (attempted, method, signatureValid, valid, error)',
    schema: {
      type: 'object',
      properties: {
        header: { type: 'object' },
        payload: {},
        signature: { type: 'string' },
        claims: { type: 'object' },
        verification: { type: 'object' },
      },
    },
    example: {
      header: { alg: 'HS256', typ: 'JWT' },
      payload: { sub: '1234567890', name: 'John Doe', iat: 1516239022 },
      signature: 'SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
      claims: {
        evaluatedAt: 1795870362,
        exp: { status: 'absent' },
        nbf: { status: 'absent' },
        iat: { value: 1516239022, iso: '2018-01-18T01:30:22.000Z', status: 'valid' },
      },
      verification: {
        attempted: true,
        method: 'secret',
        algorithm: 'HS256',
        signatureValid: true,
        valid: true,
        error: null,
        claimProblems: [],
      },
    },
  },
  example: {
    token:
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
    secret: 'your-256-bit-secret',
    secretEncoding: 'utf8',
    clockToleranceSec: 0,
  },
  async run(input) {
    const jose = await import('jose')
    const parts = input.token.trim().split('.')
    if (parts.length === 5)
      throw new HandlerInputError('token', 'token is an encrypted JWT (JWE); only signed JWTs can be decoded')
    if (parts.length !== 3) throw new HandlerInputError('token', 'token must have three dot-separated parts')
    const token = parts.join('.')

    let header: Record<string, unknown>
    let payload: unknown
    try {
      header = jose.decodeProtectedHeader(token) as Record<string, unknown>
    } catch {
      throw new HandlerInputError('token', 'token header is not base64url-encoded JSON')
    }
    try {
      payload = jose.decodeJwt(token)
    } catch {
      // a JWS whose payload is not a JSON object: show it as text
      try {
        payload = Buffer.from(parts[1], 'base64url').toString('utf8')
      } catch {
        throw new HandlerInputError('token', 'token payload is not base64url')
      }
    }

    const claimsObj = (payload && typeof payload === 'object' ? payload : {}) as Record<string, unknown>
    const now = input.at ?? Math.floor(Date.now() / 1000)
    const tol = input.clockToleranceSec
    const claims = {
      evaluatedAt: now,
      exp: timeClaim(claimsObj.exp, 'exp', (v) => (now - tol >= v ? 'expired' : 'valid')),
      nbf: timeClaim(claimsObj.nbf, 'nbf', (v) => (now + tol < v ? 'not_yet_valid' : 'valid')),
      iat: timeClaim(claimsObj.iat, 'iat', (v) => (v > now + tol ? 'in_future' : 'valid')),
    }

    const keys = [input.secret, input.publicKey, input.jwks].filter((k) => k !== undefined).length
    if (keys > 1) throw new HandlerInputError('secret', 'give only one of secret, publicKey and jwks')

    const checks: string[] = []
    if (input.issuer !== undefined && claimsObj.iss !== input.issuer)
      checks.push(`iss is ${JSON.stringify(claimsObj.iss ?? null)}, expected ${JSON.stringify(input.issuer)}`)
    if (input.audience !== undefined) {
      const aud = claimsObj.aud
      const ok = Array.isArray(aud) ? aud.includes(input.audience) : aud === input.audience
      if (!ok) checks.push(`aud ${JSON.stringify(aud ?? null)} does not include ${JSON.stringify(input.audience)}`)
    }
    if ('status' in claims.exp && claims.exp.status !== 'valid' && claims.exp.status !== 'absent')
      checks.push(`exp: ${claims.exp.status}`)
    if ('status' in claims.nbf && claims.nbf.status !== 'valid' && claims.nbf.status !== 'absent')
      checks.push(`nbf: ${claims.nbf.status}`)

    let verification: Record<string, unknown> = { attempted: false, claimProblems: checks }
    if (keys === 1) {
      const method = input.secret !== undefined ? 'secret' : input.publicKey !== undefined ? 'publicKey' : 'jwks'
      const algorithms = input.algorithms ?? (method === 'secret' ? HMAC_ALGS : ASYMMETRIC_ALGS)
      const alg = typeof header.alg === 'string' ? header.alg : ''
      let signatureValid = false
      let error: string | null = null
      try {
        if (!algorithms.includes(alg))
          throw new Error(`alg ${JSON.stringify(header.alg)} is not allowed (allowed: ${algorithms.join(', ')})`)
        if (input.secret !== undefined) {
          const key =
            input.secretEncoding === 'utf8'
              ? new TextEncoder().encode(input.secret)
              : Buffer.from(input.secret, input.secretEncoding)
          await jose.compactVerify(token, key, { algorithms })
        } else if (input.publicKey !== undefined) {
          const pem = input.publicKey.trim()
          let key
          try {
            key = pem.includes('BEGIN CERTIFICATE') ? await jose.importX509(pem, alg) : await jose.importSPKI(pem, alg)
          } catch (err) {
            throw new HandlerInputError(
              'publicKey',
              `publicKey could not be read for ${alg}: ${(err as Error).message}`,
            )
          }
          await jose.compactVerify(token, key, { algorithms })
        } else {
          let keySet
          try {
            keySet = jose.createLocalJWKSet(input.jwks as Parameters<typeof jose.createLocalJWKSet>[0])
          } catch (err) {
            throw new HandlerInputError('jwks', `jwks is not a valid JSON Web Key Set: ${(err as Error).message}`)
          }
          await jose.compactVerify(token, keySet, { algorithms })
        }
        signatureValid = true
      } catch (err) {
        if (err instanceof HandlerInputError) throw err
        const e = err as { code?: string; message: string }
        error = e.code ? `${e.code}: ${e.message}` : e.message
      }
      verification = {
        attempted: true,
        method,
        algorithm: alg,
        signatureValid,
        valid: signatureValid && checks.length === 0,
        error,
        claimProblems: checks,
      }
    }

    return { body: { header, payload, signature: parts[2], claims, verification } }
  },
})
