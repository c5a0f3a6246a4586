import type { FastifyError, FastifyInstance } from 'fastify'
import { AppError, appError } from '../../errors.js'
import { sendAppError } from '../../error-render.js'
import { MasterKeyUnavailableError } from '../../secrets/wallet-crypto.js'

/**
 * One renderer for every error: `{statusCode, code, error, message}` plus any details.
 * 5xx bodies never carry the original message or stack (they may hold internals); the log does.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
    let e: AppError
    if (err instanceof AppError) {
      e = err
    } else if (err.validation) {
      const v = err.validation[0]
      const param =
        (v?.instancePath || '').replace(/^\//, '').replace(/\//g, '.') ||
        (v?.params as { missingProperty?: string })?.missingProperty ||
        (v?.params as { additionalProperty?: string })?.additionalProperty ||
        err.validationContext ||
        'request'
      // Ajv's enum message ("must be equal to one of the allowed values") does not say which: name them
      const allowed = v?.keyword === 'enum' ? (v.params as { allowedValues?: unknown[] }).allowedValues : undefined
      const detail = allowed
        ? `expected one of ${allowed.join(', ')}`
        : v?.keyword === 'additionalProperties'
          ? 'not a field of this request; remove it'
          : (v?.message ?? 'invalid')
      e = appError('invalid_parameter', { param, detail }, { details: { param } })
    } else if (err instanceof MasterKeyUnavailableError) {
      // a configuration fault, not the caller's: say what is wrong without naming any key material
      request.log.error({ keyId: err.keyId }, 'a stored secret is under a master key this process does not have')
      e = appError('service_unavailable', {
        detail:
          'a stored key is encrypted under a master key this deployment is not configured with; an operator must configure that key as TOLLGATE_MASTER_KEY, or re-encrypt the secrets with `tollgate keys rotate-master`',
      })
    } else if (err.statusCode === 413) {
      e = appError('payload_too_large', {
        limit: request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 'the allowed number of',
      })
    } else if (err.statusCode === 415) {
      e = appError('unsupported_media_type', { type: String(request.headers['content-type'] ?? 'none') })
    } else if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      // Fastify's own client errors (bad JSON, bad content length, ...) keep their message: it names the problem.
      e = new AppError('bad_request', err.statusCode, err.message)
    } else {
      request.log.error({ err }, 'unhandled error')
      e = appError('internal_error', { requestId: request.id })
    }
    if (e.statusCode >= 500 && e.code !== 'internal_error')
      request.log.warn({ code: e.code, msg: e.message }, 'request failed')
    return sendAppError(reply, e)
  })
  app.setNotFoundHandler((request, reply) =>
    sendAppError(reply, appError('route_not_found', { method: request.method, path: request.url.split('?')[0] })),
  )
}
