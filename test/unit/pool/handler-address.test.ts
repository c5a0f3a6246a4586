import t from 'tap'
import { formatHandlerAddress, parseHandlerAddress } from '../../../src/pool/handler-address.js'

t.test('HANDLERS_URL addresses: a Unix socket or TCP, nothing else', async (t) => {
  t.same(parseHandlerAddress('unix:/run/tollgate/handlers.sock'), { path: '/run/tollgate/handlers.sock' })
  t.same(parseHandlerAddress(' unix:///tmp/h.sock '), { path: '/tmp/h.sock' })
  t.same(parseHandlerAddress('tcp://10.0.0.7:4030'), { host: '10.0.0.7', port: 4030 })
  t.same(parseHandlerAddress('tcp://handlers.internal:4030'), { host: 'handlers.internal', port: 4030 })
  t.same(parseHandlerAddress('tcp://[fd00::7]:4030'), { host: 'fd00::7', port: 4030 })
  for (const bad of [
    'unix:relative.sock',
    `unix:/${'x'.repeat(120)}`,
    'tcp://host',
    'tcp://host:0',
    'tcp://host:70000',
    'http://host:80',
    '/tmp/h.sock',
    '',
  ]) {
    t.type(parseHandlerAddress(bad), 'string', `refused: ${bad.slice(0, 30)}`)
  }
  for (const ok of ['unix:/tmp/h.sock', 'tcp://10.0.0.7:4030', 'tcp://[fd00::7]:4030'])
    t.equal(formatHandlerAddress(parseHandlerAddress(ok) as never), ok)
})
