import type { FastifyServerOptions } from 'fastify'

/** Paths pino blanks out: credentials, payment headers and anything key-like. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-payment"]',
  'req.headers["payment-signature"]',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'headers["x-payment"]',
  'headers["payment-signature"]',
  'headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["x-payment"]',
  '*.headers["payment-signature"]',
  '*.headers["x-api-key"]',
  // upstream settings: forwarded header values and the signing secret
  '*.forward_headers',
  '*.signingSecret',
  '*.signing_secret',
  '*.privateKey',
  '*.secret',
  '*.password',
  '*.apiKey',
  '*.agentKey',
  '*.masterKey',
]

/** Logger options shared by every Fastify app and standalone process. */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return { level, redact: { paths: redactPaths, censor: '[redacted]' } }
}
