/**
 * Child process of test/integration/handlers/soak.test.ts: calls every self-contained handler
 * (no provider settings, no public hosts) on its declared example, many times in this one
 * process, as a pool process would, validating every answer by what it is (JSON against the
 * declared output schema, WAV duration, image size, PDF pages, QR contents, ...). Prints one JSON
 * line per handler: { slug, calls, ms, cpuMs (the calls and their checks), rss and heap before, after a third
 * of the calls and after the last (each after a forced GC), problem }.
 *
 *   node --expose-gc --import tsx test/helpers/handler-soak-runner.ts
 *   env: SOAK_CALLS (default 20), SOAK_TTS_CALLS (text-to-speech; default SOAK_CALLS), SOAK_ONLY (slugs, comma-separated)
 *
 * Handler modules are imported through the registry and run directly (no Piscina), so the test
 * does not depend on how the pool hosts them.
 */
import { Ajv } from 'ajv'
import * as ajvFormats from 'ajv-formats'
import jsqr from 'jsqr'
import sharp from 'sharp'
import type { HandlerContext, HandlerModule } from '../../src/pool/handler-contract.js'
import { loadHandlerRegistry } from '../../src/pool/handler-registry.js'

const CALLS = Number(process.env.SOAK_CALLS ?? 20)
const TTS_CALLS = Number(process.env.SOAK_TTS_CALLS ?? CALLS)
const ONLY = process.env.SOAK_ONLY?.split(',').filter(Boolean)
/** calls before the first measurement (module loads, lazy imports, WASM compiles, caches filled), and one more a second later */
const WARMUP = 5

const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run with --expose-gc')
// the validator's own image decoding must not hold memory between calls
sharp.cache(false)
sharp.concurrency(1)

// jsqr is CommonJS: under NodeNext its default import is module.exports, whose .default is the decoder
const jsQR = jsqr.default
const addFormats = ajvFormats.default as unknown as (ajv: Ajv) => Ajv
const ajv = addFormats(new Ajv({ strict: false, allErrors: true }))

interface Answer {
  status: number
  contentType: string
  bytes: Buffer
}

const ctx: HandlerContext = { method: 'POST', accept: '*/*', providers: {}, allowPrivateNetwork: false }

async function call(mod: HandlerModule, validate: (input: unknown, from: 'body') => unknown): Promise<Answer> {
  const input = structuredClone(mod.example)
  const problem = validate(input, 'body')
  if (problem) throw new Error(`the example is invalid: ${JSON.stringify(problem)}`)
  const r = await mod.run(input, ctx)
  const body = r.body
  const bytes =
    body instanceof Uint8Array
      ? Buffer.from(body.buffer, body.byteOffset, body.byteLength)
      : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
  return { status: r.status ?? 200, contentType: r.contentType ?? mod.output.contentType, bytes: Buffer.from(bytes) }
}

type Check = (a: Answer) => Promise<string | null>

/** The validity check of one handler's answers, from its declared output (and its example). */
function checkFor(mod: HandlerModule): Check {
  const type = mod.output.contentType.split(';')[0]!.trim()
  const example = mod.example as Record<string, unknown>
  const schema = mod.output.schema ? ajv.compile(mod.output.schema) : undefined
  const byType: Record<string, Check> = {
    'application/json': async (a) => {
      let v: unknown
      try {
        v = JSON.parse(a.bytes.toString('utf8'))
      } catch {
        return 'the answer is not JSON'
      }
      if (v === null || typeof v !== 'object') return 'the answer is not a JSON object or array'
      if (schema && !schema(v))
        return `the answer does not match the declared output schema: ${ajv.errorsText(schema.errors)}`
      return null
    },
    'image/png': async (a) => {
      const m = await sharp(a.bytes).metadata()
      if (m.format !== 'png' || !m.width || !m.height) return `not a PNG image (${m.format} ${m.width}×${m.height})`
      if (mod.slug === 'qr-code-generator') {
        if (m.width !== example.size) return `QR image is ${m.width} px wide, asked ${example.size}`
        const { data, info } = await sharp(a.bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true })
        const qr = jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), info.width, info.height)
        if (qr?.data !== example.text)
          return `the QR code decodes to ${JSON.stringify(qr?.data)}, not ${JSON.stringify(example.text)}`
      } else {
        // a drawn code has both ink and background
        const { data } = await sharp(a.bytes)
          .flatten({ background: '#ffffff' })
          .greyscale()
          .raw()
          .toBuffer({ resolveWithObject: true })
        let dark = 0
        for (const px of data) if (px < 128) dark++
        if (dark === 0 || dark === data.length) return 'the image is blank'
      }
      return null
    },
    'image/webp': async (a) => {
      const m = await sharp(a.bytes).metadata()
      if (m.format !== 'webp') return `not a WebP image (${m.format})`
      if (typeof example.width === 'number' && m.width !== example.width)
        return `the image is ${m.width} px wide, asked ${example.width}`
      return null
    },
    'application/pdf': async (a) => {
      if (
        a.bytes.subarray(0, 5).toString('latin1') !== '%PDF-' ||
        !a.bytes.subarray(-32).toString('latin1').includes('%%EOF')
      )
        return 'not a complete PDF file'
      const pages = a.bytes.toString('latin1').match(/\/Type\s*\/Page(?![s\w])/g)?.length ?? 0
      return pages === 1 ? null : `the example's PDF has ${pages} pages, not 1`
    },
    'audio/wav': async (a) => checkWav(a.bytes),
    'text/html': async (a) => {
      const html = a.bytes.toString('utf8')
      const heading = /^#\s+(.+)$/m.exec(String(example.markdown ?? ''))?.[1]
      if (!/^<!doctype html>/i.test(html.trimStart())) return 'not an HTML page'
      return heading && !html.includes(heading) ? `the page lacks the heading "${heading}"` : null
    },
  }
  const check = byType[type]
  if (!check) throw new Error(`${mod.slug}: no soak check for ${type}`)
  return async (a) => {
    if (a.status >= 400) return `status ${a.status}`
    if (a.contentType.split(';')[0]!.trim() !== type) return `content type ${a.contentType}, declared ${type}`
    return check(a)
  }
}

/** A 16-bit mono PCM WAV file of 0.5–5 s (the example is three words) that is not silence. */
function checkWav(b: Buffer): string | null {
  if (
    b.toString('latin1', 0, 4) !== 'RIFF' ||
    b.toString('latin1', 8, 12) !== 'WAVE' ||
    b.readUInt32LE(4) !== b.length - 8
  )
    return 'not a complete RIFF/WAVE file'
  const fmt = b.indexOf('fmt ', 12, 'latin1')
  const data = b.indexOf('data', 12, 'latin1')
  if (
    fmt < 0 ||
    data < 0 ||
    b.readUInt16LE(fmt + 8) !== 1 ||
    b.readUInt16LE(fmt + 10) !== 1 ||
    b.readUInt16LE(fmt + 22) !== 16
  )
    return 'not 16-bit mono PCM'
  const rate = b.readUInt32LE(fmt + 12)
  const bytes = b.readUInt32LE(data + 4)
  if (data + 8 + bytes !== b.length) return 'the data chunk does not fill the file'
  const seconds = bytes / 2 / rate
  if (seconds < 0.5 || seconds > 5) return `${seconds.toFixed(3)} s of audio for the example`
  let peak = 0
  for (let i = data + 8; i + 1 < b.length; i += 2) peak = Math.max(peak, Math.abs(b.readInt16LE(i)))
  return peak > 1000 ? null : `silence (peak ${peak})`
}

/** Resident and live memory after a full GC; WebAssembly memories and other backing stores are freed just after it, so twice. */
async function memory() {
  gc!()
  await new Promise((resolve) => setTimeout(resolve, 100))
  gc!()
  const m = process.memoryUsage()
  return { rss: m.rss, heap: m.heapUsed + m.external }
}

const registry = await loadHandlerRegistry()
const selected = [...registry].filter(([slug, h]) => !h.io && (!ONLY || ONLY.includes(slug)))

interface Warm {
  line: Record<string, unknown>
  check?: Check
  answers: Answer[]
  warmupStart: number
}

// Warm-up, in two passes so that no handler waits alone: the first WARMUP calls of every handler,
// then (in the soak below) each handler's last warm-up call, over a second after its first, so
// answers that hold the time of the call (a clock in seconds, a creation date) differ and are not
// held constant. One wait of a second a handler was 40 s of the test.
const warmed: Warm[] = []
for (const [slug, h] of selected) {
  const calls = slug === 'text-to-speech' ? TTS_CALLS : CALLS
  const w: Warm = { line: { slug, calls }, answers: [], warmupStart: performance.now() }
  warmed.push(w)
  if (process.env.SOAK_PROGRESS) process.stderr.write(`${slug} (warm-up)…\n`)
  try {
    w.check = checkFor(h.module)
    for (let i = 0; i < WARMUP; i++) {
      const a = await call(h.module, h.validate)
      const problem = await w.check(a)
      if (problem) throw new Error(`warm-up call ${i + 1}: ${problem}`)
      w.answers.push(a)
    }
  } catch (err) {
    w.line.problem = `threw: ${(err as Error).message}`
  }
}

for (const [index, [slug, h]] of selected.entries()) {
  const { line, answers, warmupStart } = warmed[index]!
  const check = warmed[index]!.check
  if (line.problem || !check) {
    process.stdout.write(`${JSON.stringify(line)}\n`)
    continue
  }
  const calls = line.calls as number
  if (process.env.SOAK_PROGRESS) process.stderr.write(`${slug}…\n`)
  try {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1100 - (performance.now() - warmupStart))))
    const a = await call(h.module, h.validate)
    const problem = await check(a)
    if (problem) throw new Error(`warm-up call ${WARMUP + 1}: ${problem}`)
    answers.push(a)
    // a handler that answered its example the same way every time must keep doing so
    const reference = answers.every((a) => a.bytes.equals(answers[0]!.bytes)) ? answers[0]!.bytes : undefined
    const before = await memory()
    const started = performance.now()
    const cpu = process.cpuUsage()
    const third = Math.ceil(calls / 3)
    let measuring = 0
    let measuringCpu = 0
    for (let i = 1; i <= calls; i++) {
      if (i === third + 1) {
        const [pause, pauseCpu] = [performance.now(), process.cpuUsage()]
        const mid = await memory()
        Object.assign(line, { rssMid: mid.rss, heapMid: mid.heap })
        const gcCpu = process.cpuUsage(pauseCpu)
        measuring = performance.now() - pause
        measuringCpu = (gcCpu.user + gcCpu.system) / 1000
      }
      const a = await call(h.module, h.validate)
      const problem =
        (await check(a)) ??
        (reference && !a.bytes.equals(reference)
          ? `the answer differs from the warm-up's (${a.bytes.length} bytes vs ${reference.length})`
          : null)
      if (problem) {
        line.problem = `call ${i}: ${problem}`
        break
      }
    }
    const used = process.cpuUsage(cpu)
    line.ms = Math.round(performance.now() - started - measuring)
    line.cpuMs = Math.round((used.user + used.system) / 1000 - measuringCpu)
    const after = await memory()
    Object.assign(line, {
      deterministic: reference !== undefined,
      rssBefore: before.rss,
      rssAfter: after.rss,
      heapBefore: before.heap,
      heapAfter: after.heap,
    })
  } catch (err) {
    line.problem = `threw: ${(err as Error).message}`
  }
  process.stdout.write(`${JSON.stringify(line)}\n`)
}
// some handlers' libraries keep timers or workers alive (a pool process lives on); this run is done
process.exit(0)
