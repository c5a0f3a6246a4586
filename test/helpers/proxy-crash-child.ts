/**
 * A proxy process for the lost-answer test (`node --import tsx test/helpers/proxy-crash-child.ts`):
 * the proxy role on PROXY_PORT with the hosted handlers of HANDLERS_DIR. With
 * CRASH_BEFORE_PAID_ANSWER=1 it kills itself with SIGKILL (no cleanup, as `kill -9`) the moment it
 * starts writing a paid answer, one that carries a payment response header: the paid route has
 * committed `served` by then (it awaits that record before replying) and no byte of the answer has
 * left. With CRASH_BEFORE_SIGN_IN_ANSWER=1 it does the same as it starts writing the answer to a
 * call served on a sign-in (a 2xx to a request with SIGN-IN-WITH-X): its use is committed by then.
 * TOLLGATE_TEST_PROXY_CRASH_AT=<stage> kills it between a paid call's stages (proxy/paid-call/test-hooks.ts).
 * Prints `listening` once it listens. Test-only; refused in a production deployment.
 */
import http from 'node:http'
import { loadConfig } from '../../src/config.js'
import { createDeps } from '../../src/deps.js'
import { buildProxyApp } from '../../src/http/proxy-app.js'
import { proxyCrashHooksFromEnv } from '../../src/proxy/paid-call/test-hooks.js'

const config = loadConfig(process.env)
if (config.deployment === 'production')
  throw new Error('proxy-crash-child is a test helper and is refused with TOLLGATE_DEPLOYMENT=production')

if (process.env.CRASH_BEFORE_PAID_ANSWER === '1') {
  const writeHead = http.ServerResponse.prototype.writeHead
  const paid = (h: unknown) =>
    typeof h === 'object' && h !== null && ('payment-response' in h || 'x-payment-response' in h)
  http.ServerResponse.prototype.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    if (this.hasHeader('payment-response') || this.hasHeader('x-payment-response') || args.some(paid)) {
      process.kill(process.pid, 'SIGKILL')
      // nothing else runs (no byte is written) until the signal lands
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
    }
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args)
  } as typeof writeHead
}

if (process.env.CRASH_BEFORE_SIGN_IN_ANSWER === '1') {
  const writeHead = http.ServerResponse.prototype.writeHead
  http.ServerResponse.prototype.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    const status = typeof args[0] === 'number' ? args[0] : this.statusCode
    if (status < 300 && this.req?.headers['sign-in-with-x'] !== undefined) {
      process.kill(process.pid, 'SIGKILL')
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
    }
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args)
  } as typeof writeHead
}

const deps = createDeps(config)
const app = await buildProxyApp(deps, {
  logger: false,
  handlersDir: process.env.HANDLERS_DIR,
  hooks: proxyCrashHooksFromEnv(process.env, config),
})
await app.listen({ host: '127.0.0.1', port: config.proxyPort })
process.stdout.write('listening\n')
