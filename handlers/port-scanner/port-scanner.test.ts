import { createServer, type Server } from 'node:net'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { compileInputValidator } from '../../src/pool/input-validator.js'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const listen = async (t: { teardown(fn: () => void): void }): Promise<number> => {
  const s: Server = createServer((c) => c.end())
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  t.teardown(() => s.close())
  return (s.address() as AddressInfo).port
}
const closedPort = async (): Promise<number> => {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as AddressInfo).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

t.test('the example is valid', async (t) => {
  t.equal(compileInputValidator(handler).validate(structuredClone(handler.example), 'body'), null)
})

t.test('open and closed ports on localhost', async (t) => {
  const a = await listen(t)
  const b = await listen(t)
  const closed = await closedPort()
  const out = okBody(await runInline(handler, { host: 'localhost', ports: [a, closed, b] }))
  t.equal(out.host, 'localhost')
  t.equal(out.address, '127.0.0.1')
  t.same(
    out.ports.map((p: any) => [p.port, p.state]),
    [
      [a, 'open'],
      [closed, 'closed'],
      [b, 'open'],
    ],
    'in the order asked',
  )
  t.same(out.summary, { open: 2, closed: 1, filtered: 0 })
  t.equal(out.connectTimeoutMs, 2000)
  t.equal(out.concurrency, 10)
})

t.test('service names come from the IANA table', async (t) => {
  const out = okBody(await runInline(handler, { host: '127.0.0.1', ports: [22, 5432, 1] }, { from: 'query' }))
  t.same(
    out.ports.map((p: any) => p.service),
    ['ssh', 'postgresql', null],
  )
})

t.test('the default list is 20 common ports, scanned with bounded concurrency', async (t) => {
  const out = okBody(await runInline(handler, { host: '127.0.0.1' }))
  t.equal(out.ports.length, 20)
  t.same(
    out.ports.slice(0, 6).map((p: any) => p.port),
    [21, 22, 23, 25, 53, 80],
  )
  for (const p of out.ports) t.ok(['open', 'closed', 'filtered'].includes(p.state))
})

t.test('internal hosts are refused outside tests', async (t) => {
  t.match(await runInline(handler, { host: '127.0.0.1', ports: [80] }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'host',
  })
  t.match(await runInline(handler, { host: 'localhost' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'host',
  })
  t.match(await runInline(handler, { host: '[::1]' }, { allowPrivateNetwork: false }), {
    ok: false,
    status: 400,
    field: 'host',
  })
})

t.test('bad input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: '' }), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: '10.0.0.0/24' }), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: 'http://example.com' }), { ok: false, status: 400, field: 'host' })
  t.match(await runInline(handler, { host: 'example.com', ports: [0] }), { ok: false, status: 400, field: 'ports.0' })
  t.match(await runInline(handler, { host: 'example.com', ports: [65536] }), {
    ok: false,
    status: 400,
    field: 'ports.0',
  })
  t.match(await runInline(handler, { host: 'example.com', ports: [80, 80] }), {
    ok: false,
    status: 400,
    field: 'ports',
  })
  t.match(await runInline(handler, { host: 'example.com', ports: Array.from({ length: 21 }, (_, i) => i + 1) }), {
    ok: false,
    status: 400,
    field: 'ports',
  })
})
