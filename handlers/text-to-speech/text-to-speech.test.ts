import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

function parseWav(bytes: Uint8Array) {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const fmt = b.indexOf('fmt ', 12, 'ascii')
  const data = b.indexOf('data', 12, 'ascii')
  return {
    riff: b.toString('ascii', 0, 4),
    wave: b.toString('ascii', 8, 12),
    riffSize: b.readUInt32LE(4),
    format: b.readUInt16LE(fmt + 8),
    channels: b.readUInt16LE(fmt + 10),
    sampleRate: b.readUInt32LE(fmt + 12),
    bitsPerSample: b.readUInt16LE(fmt + 22),
    dataBytes: b.readUInt32LE(data + 4),
    samples: new Int16Array(b.buffer.slice(b.byteOffset + data + 8, b.byteOffset + data + 8 + b.readUInt32LE(data + 4))),
    length: b.length,
  }
}

t.test('speaks English to a sane WAV', async (t) => {
  const out = await runInline(handler, { text: 'Hello from Tollgate. This is a test of offline speech.' })
  t.ok(out.ok)
  if (!out.ok) return
  t.equal(out.result.contentType, 'audio/wav')
  const w = parseWav(out.result.body as Uint8Array)
  t.match(w, { riff: 'RIFF', wave: 'WAVE', format: 1, channels: 1, sampleRate: 22050, bitsPerSample: 16 })
  t.equal(w.riffSize, w.length - 8)
  const seconds = w.dataBytes / (w.sampleRate * 2)
  t.ok(seconds > 1.5 && seconds < 8, `duration ${seconds}s for ten words at 175 wpm`)
  const peak = w.samples.reduce((m, s) => Math.max(m, Math.abs(s)), 0)
  t.ok(peak > 1000, 'not silence')
})

t.test('slower speech is longer; another language; query-string input', async (t) => {
  const dur = async (input: Record<string, unknown>) => {
    const w = parseWav(okBody<Uint8Array>(await runInline(handler, input, { from: 'query' })))
    return w.dataBytes / (w.sampleRate * 2)
  }
  const fast = await dur({ text: 'one two three four five six', speed: '300' })
  const slow = await dur({ text: 'one two three four five six', speed: '100' })
  t.ok(slow > fast * 1.8, `slow ${slow}s vs fast ${fast}s`)
  t.ok((await dur({ text: 'Guten Tag, wie geht es Ihnen?', voice: 'de' })) > 0.5)
})

t.test('JSON-only Accept returns base64 with the duration', async (t) => {
  const out = await runInline(handler, { text: 'hi' }, { accept: 'application/json' })
  t.ok(out.ok)
  if (!out.ok) return
  t.match(out.result.body, { contentType: 'audio/wav', sampleRate: 22050, base64: /^UklGR/ })
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { text: '' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: '...' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'x'.repeat(2001) }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'hi', voice: 'klingon' }), { ok: false, status: 400, field: 'voice' })
  t.match(await runInline(handler, { text: 'hi', speed: 10 }), { ok: false, status: 400, field: 'speed' })
})
