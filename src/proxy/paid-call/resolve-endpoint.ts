import { appError } from '../../errors.js'
import type { EndpointTable } from '../endpoint-table.js'
import type { CallRequest, ResolvedCall } from './call.js'
import { CallRefusal } from './refusal.js'

/** Stage 1: the endpoint at the path, and its challenge for the method (HEAD is GET). */
export function resolveEndpoint(
  table: EndpointTable,
  req: Pick<CallRequest, 'path' | 'method'>,
): ResolvedCall | CallRefusal {
  const entry = table.get(req.path)
  if (!entry) return CallRefusal.error(appError('not_found', { what: `endpoint ${req.path}` }))
  const method = req.method === 'HEAD' ? 'GET' : req.method
  if (!entry.methods.has(method)) {
    return CallRefusal.error(
      appError('method_not_allowed', { method: req.method, allow: entry.allow }, { headers: { allow: entry.allow } }),
    )
  }
  return { entry, method, challenge: entry.challenges.get(method)! }
}
