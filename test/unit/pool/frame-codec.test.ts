import { Duplex } from 'node:stream'
import type { Socket } from 'node:net'
import t from 'tap'
import { FRAME, FrameReader, writeFrame, type Frame } from '../../../src/pool/frame-codec.js'
import { readAnswer, writeAnswer } from '../../../src/pool/pool-messages.js'

/** What writeFrame writes, as one buffer. */
function bytesOf(write: (s: Socket) => void): Buffer {
  const chunks: Buffer[] = []
  const sink = new Duplex({ write: (c, _e, cb) => (chunks.push(Buffer.from(c)), cb()), read: () => {} })
  write(sink as unknown as Socket)
  return Buffer.concat(chunks)
}

const read = (bytes: Buffer, cut: number[]) => {
  const frames: Frame[] = []
  const reader = new FrameReader((f) => frames.push(f))
  let at = 0
  for (const c of [...cut, bytes.length]) {
    reader.push(bytes.subarray(at, c))
    at = c
  }
  return frames
}

t.test('frames survive any chunking: split anywhere, several per chunk', async (t) => {
  const body = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i & 255))
  const bytes = Buffer.concat([
    bytesOf((s) => writeFrame(s, 1, FRAME.call, { slug: 'a', input: { text: 'é ✓' } })),
    bytesOf((s) => writeFrame(s, 2, FRAME.result, { kind: 'ok' }, body)),
    bytesOf((s) => writeFrame(s, 0xffff_ffff, FRAME.ready, {})),
  ])
  for (const cut of [[], [1], [3, 4, 5], [20, 21, 70_000], Array.from({ length: 200 }, (_, i) => i * 400)]) {
    const frames = read(
      bytes,
      cut.filter((c) => c < bytes.length),
    )
    t.same(
      frames.map((f) => [f.id, f.type, f.meta]),
      [
        [1, 1, { slug: 'a', input: { text: 'é ✓' } }],
        [2, 2, { kind: 'ok' }],
        [0xffff_ffff, 3, {}],
      ],
      `cut at ${cut.length} places`,
    )
    t.ok(frames[1]!.body?.equals(body), 'the body byte for byte')
    t.equal(frames[0]!.body, undefined, 'no body: undefined')
  }
})

t.test('a length no frame can have is refused, not waited for', async (t) => {
  const bad = Buffer.alloc(8)
  bad.writeUInt32LE(2 ** 31, 0)
  t.throws(() => new FrameReader(() => {}).push(bad), /bad frame length/)
  const short = Buffer.alloc(13)
  short.writeUInt32LE(9, 0)
  short.writeUInt32LE(50, 9)
  t.throws(() => new FrameReader(() => {}).push(short), /bad frame meta length/)
})

t.test('answers: text comes back a string, bytes as bytes, others as they are', async (t) => {
  const one = (out: Parameters<typeof writeAnswer>[2]) =>
    readAnswer(
      read(
        bytesOf((s) => writeAnswer(s, 7, out)),
        [],
      )[0]!,
    )
  t.same(one({ kind: 'ok', status: 201, contentType: 'application/json', body: '{"a":"✓"}' }), {
    kind: 'ok',
    status: 201,
    contentType: 'application/json',
    body: '{"a":"✓"}',
  })
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 255])
  const bin = one({ kind: 'ok', status: 200, contentType: 'image/png', body: png })
  t.ok(bin.kind === 'ok' && bin.body instanceof Uint8Array && Buffer.from(bin.body).equals(Buffer.from(png)))
  t.same(one({ kind: 'ok', status: 200, contentType: 'text/plain', body: '' }), {
    kind: 'ok',
    status: 200,
    contentType: 'text/plain',
    body: '',
  })
  t.same(one({ kind: 'crashed', message: 'm', detail: 'd' }), { kind: 'crashed', message: 'm', detail: 'd' })
  t.same(one({ kind: 'input', status: 400, field: 'x', message: 'bad' }), {
    kind: 'input',
    status: 400,
    field: 'x',
    message: 'bad',
  })
})
