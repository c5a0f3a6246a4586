// The user API (/v1) as the dashboard calls it: same origin, the session cookie, JSON in and out.

/** An answer that is not 2xx: its status and the API's `{code, message, param}`. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `the server answered ${status}`)
    this.status = status
    this.code = body?.code
    // validation errors name the field (e.g. `price`, `upstream.timeout_ms`)
    this.param = body?.param
  }
}

/** Same-origin fetch of the user API with the session cookie; throws ApiError. `headers` adds request headers (an Idempotency-Key). */
export async function api(method, path, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json', ...headers } }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let res
  try {
    res = await fetch(path, init)
  } catch {
    throw new ApiError(0, { message: 'the server did not answer; check the connection and retry' })
  }
  const data = res.status === 204 ? null : await res.json().catch(() => null)
  if (!res.ok) throw new ApiError(res.status, data)
  return data
}

/** A path segment from data (a namespace, a service name, an id): never splits or escapes the path. */
export const seg = (s) => encodeURIComponent(s)
