import { createServer } from 'node:net'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { createPublicClient, http } from 'viem'
import { installErrorHandler } from '../../src/http/plugins/error-handler.js'
import { loggerOptions, processLogger } from '../../src/logger.js'

// Production RPC URLs carry the provider's key in the path (Alchemy, Infura) or the query.
const PATH_KEY = 'RpcPathKey0123456789'
const QUERY_KEY = 'RpcQueryKey0123456789'

/** The error viem throws when the RPC does not answer: its message, `url` and `metaMessages` hold the whole URL. */
async function rpcError(): Promise<Error> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  const client = createPublicClient({
    transport: http(`http://127.0.0.1:${port}/v2/${PATH_KEY}?apikey=${QUERY_KEY}`, { retryCount: 0 }),
  })
  return client.getBlockNumber().then(
    () => {
      throw new Error('expected the RPC call to fail')
    },
    (err: Error) => err,
  )
}

function captured() {
  const lines: string[] = []
  return { lines, stream: new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }) }
}

function noKey(t: Test, lines: string[], what: string) {
  t.ok(lines.length > 0, `${what}: logged`)
  for (const l of lines) {
    t.notOk(l.includes(PATH_KEY), `${what}: no key from the RPC URL's path`)
    t.notOk(l.includes(QUERY_KEY), `${what}: no key from the RPC URL's query`)
  }
}

t.test("an RPC error logged by a process (worker) keeps the RPC URL's key out of the log", async (t) => {
  const err = await rpcError()
  t.match(err.message, PATH_KEY, 'viem puts the URL in its message')
  const { lines, stream } = captured()
  const log = processLogger('info', stream)
  log.warn({ err }, 'agent payment sweep failed')
  // the proxy logs the message alone under `err` (balance refresh, smart wallet check, ...)
  log.warn({ err: err.message }, 'balance refresh failed')
  // an error carrying another as a property (serialized on its own by pino)
  log.warn({ err: Object.assign(new Error('settlement step failed'), { during: err }) }, 'wrapped')
  noKey(t, lines, 'processLogger')
  const first = JSON.parse(lines[0]!)
  t.match(
    first.err,
    { type: 'HttpRequestError', message: /HTTP request failed[\s\S]*127\.0\.0\.1/ },
    'the error stays useful: its type, message and host',
  )
  t.match(JSON.parse(lines[1]!).err, /HTTP request failed[\s\S]*127\.0\.0\.1/)
})

t.test("an RPC error that reaches a web app's error handler keeps the key out of the log and the answer", async (t) => {
  const err = await rpcError()
  const { lines, stream } = captured()
  const app = Fastify({ logger: { ...(loggerOptions('info') as object), stream } })
  installErrorHandler(app)
  app.get('/boom', async () => {
    throw err
  })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'GET', url: '/boom' })
  t.equal(res.statusCode, 500)
  t.notOk(res.body.includes(PATH_KEY) || res.body.includes(QUERY_KEY), 'not in the answer')
  noKey(
    t,
    lines.filter((l) => JSON.parse(l).msg === 'unhandled error'),
    'the web logger',
  )
})
