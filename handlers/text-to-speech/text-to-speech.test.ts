import { createHash } from 'node:crypto'
import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

function parseWav(bytes: Uint8Array) {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const fmt = b.indexOf('fmt ', 12, 'ascii')
  const data = b.indexOf('data', 12, 'ascii')
  const dataBytes = b.readUInt32LE(data + 4)
  const samples = new Int16Array(b.buffer.slice(b.byteOffset + data + 8, b.byteOffset + data + 8 + dataBytes))
  return {
    riff: b.toString('ascii', 0, 4),
    wave: b.toString('ascii', 8, 12),
    riffSize: b.readUInt32LE(4),
    format: b.readUInt16LE(fmt + 8),
    channels: b.readUInt16LE(fmt + 10),
    sampleRate: b.readUInt32LE(fmt + 12),
    bitsPerSample: b.readUInt16LE(fmt + 22),
    dataBytes,
    samples,
    seconds: dataBytes / (b.readUInt32LE(fmt + 12) * 2),
    peak: samples.reduce((m, s) => Math.max(m, Math.abs(s)), 0),
    length: b.length,
  }
}

/** Median pitch (Hz) of the voiced 40 ms frames, by autocorrelation over 60–400 Hz. */
function medianPitch(w: ReturnType<typeof parseWav>): number {
  const frame = Math.round(w.sampleRate * 0.04)
  const found: number[] = []
  for (let start = 0; start + frame < w.samples.length; start += frame) {
    let energy = 0
    for (let i = 0; i < frame; i++) energy += w.samples[start + i]! ** 2
    if (energy / frame < 1e6) continue
    let best = 0
    let bestLag = 0
    for (let lag = Math.round(w.sampleRate / 400); lag < Math.round(w.sampleRate / 60); lag++) {
      let c = 0
      for (let i = 0; i + lag < frame; i++) c += w.samples[start + i]! * w.samples[start + i + lag]!
      if (c > best) [best, bestLag] = [c, lag]
    }
    if (bestLag) found.push(w.sampleRate / bestLag)
  }
  found.sort((a, b) => a - b)
  return found[found.length >> 1]!
}

const speak = async (input: object) => parseWav(okBody<Uint8Array>(await runInline(handler, input)))

t.test('speaks English to a sane WAV', async (t) => {
  const out = await runInline(handler, { text: 'Hello from Tollgate. This is a test of offline speech.' })
  t.ok(out.ok)
  if (!out.ok) return
  t.equal(out.result.contentType, 'audio/wav')
  const w = parseWav(out.result.body as Uint8Array)
  t.match(w, { riff: 'RIFF', wave: 'WAVE', format: 1, channels: 1, sampleRate: 16000, bitsPerSample: 16 })
  t.equal(w.riffSize, w.length - 8)
  t.equal(w.length, 44 + w.dataBytes)
  t.ok(w.seconds > 2 && w.seconds < 6, `duration ${w.seconds}s for ten words at 175 wpm`)
  t.ok(w.peak > 4000, `peak ${w.peak}: not silence`)
})

// Issue #22: with the eSpeak build, call 80 of the example answered 0.3 s of cut audio and call 81
// aborted Node. Every call must give the same full audio, so byte-identical answers are asserted.
t.test('the example answers the same full audio on every one of 100 calls in one process', async (t) => {
  const first = await speak(handler.example)
  t.ok(first.seconds > 0.8 && first.seconds < 3, `example lasts ${first.seconds}s`)
  const digest = (w: ReturnType<typeof parseWav>) => createHash('sha256').update(w.samples).digest('hex')
  const want = digest(first)
  for (let call = 2; call <= 100; call++) {
    const w = await speak(handler.example)
    if (w.dataBytes !== first.dataBytes || digest(w) !== want) {
      t.fail(`call ${call}: ${w.seconds}s of audio, differs from call 1 (${first.seconds}s)`)
      return
    }
  }
  t.pass('100 identical answers')
})

t.test('different texts and voices give different audio', async (t) => {
  const a = await speak({ text: 'The quick brown fox.' })
  const b = await speak({ text: 'Jumps over the lazy dog.' })
  t.not(Buffer.compare(Buffer.from(a.samples.buffer), Buffer.from(b.samples.buffer)), 0)
  const lengths = new Set<number>()
  for (const voice of ['slt', 'rms', 'awb', 'kal16']) {
    const w = await speak({ text: 'Good morning, how are you today?', voice })
    t.ok(w.seconds > 1 && w.seconds < 4 && w.peak > 2000, `${voice}: ${w.seconds}s, peak ${w.peak}`)
    lengths.add(w.dataBytes)
  }
  t.equal(lengths.size, 4, 'each voice speaks differently')
})

t.test('speed, pitch and amplitude do what they say; query-string input', async (t) => {
  const dur = async (input: Record<string, unknown>) =>
    parseWav(okBody<Uint8Array>(await runInline(handler, input, { from: 'query' }))).seconds
  const fast = await dur({ text: 'one two three four five six seven eight nine ten', speed: '300' })
  const slow = await dur({ text: 'one two three four five six seven eight nine ten', speed: '100' })
  t.ok(slow > fast * 2.5 && slow < fast * 3.5, `slow ${slow}s vs fast ${fast}s (3x the words per minute)`)
  // ten words at 100 wpm is 6 s of words; pauses at the ends add a little
  t.ok(slow > 5 && slow < 8, `10 words at 100 wpm took ${slow}s`)

  const text = 'Hello from Tollgate. This is a test of offline speech.'
  const low = medianPitch(await speak({ text, pitchHz: 100 }))
  const high = medianPitch(await speak({ text, pitchHz: 220 }))
  t.ok(
    Math.abs(low - 100) < 20 && Math.abs(high - 220) < 35,
    `measured ${low.toFixed(0)} Hz and ${high.toFixed(0)} Hz for 100 and 220`,
  )

  const loud = await speak({ text })
  const quiet = await speak({ text, amplitude: 50 })
  t.ok(Math.abs(quiet.peak - loud.peak / 2) <= 1, `peak ${quiet.peak} at 50% of ${loud.peak}`)
  t.equal((await speak({ text, amplitude: 0 })).peak, 0)
})

t.test('JSON-only Accept returns base64 with the duration', async (t) => {
  const out = await runInline(handler, { text: 'hi' }, { accept: 'application/json' })
  t.ok(out.ok)
  if (!out.ok) return
  t.match(out.result.body, { contentType: 'audio/wav', sampleRate: 16000, base64: /^UklGR/, durationSec: Number })
  const body = out.result.body as { durationSec: number; base64: string }
  t.equal(body.durationSec, Math.round(parseWav(Buffer.from(body.base64, 'base64')).seconds * 1000) / 1000)
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, { text: '' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: '...' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'Привет мир' }), {
    ok: false,
    status: 422,
    field: 'text',
    message: /English/,
  })
  t.match(await runInline(handler, { text: 'x'.repeat(2001) }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'hi', voice: 'en-us' }), { ok: false, status: 400, field: 'voice' })
  t.match(await runInline(handler, { text: 'hi', speed: 10 }), { ok: false, status: 400, field: 'speed' })
  t.match(await runInline(handler, { text: 'hi', pitchHz: 20 }), { ok: false, status: 400, field: 'pitchHz' })
  t.match(await runInline(handler, { text: 'hi', voice: 'rms', pitchHz: 120 }), {
    ok: false,
    status: 400,
    field: 'pitchHz',
    message: /fixed pitch/,
  })
  t.match(await runInline(handler, { text: 'hi', wordGap: 5 }), { ok: false, status: 400, field: 'wordGap' })
})

t.test('control characters are spoken around, not cut at', async (t) => {
  const whole = await speak({ text: 'alpha bravo' })
  const nul = await speak({ text: 'alpha\u0000bravo' })
  t.ok(nul.seconds > whole.seconds * 0.8, `${nul.seconds}s with a NUL inside vs ${whole.seconds}s`)
})
