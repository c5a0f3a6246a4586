import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { binaryResult } from '../_shared/binary-output.js'
import { FLITE_VOICES, fliteSpeak, type FliteVoice } from './flite.js'

const MAX_TEXT = 2000
const SAMPLE_RATE = 16_000
/** sample magnitude below which the audio counts as silence (full scale is 32 767) */
const SILENCE = 256

interface Input {
  text: string
  voice: FliteVoice
  speed: number
  pitchHz?: number
  amplitude: number
}

const voiceList = Object.entries(FLITE_VOICES)
  .map(([id, v]) => `${id}: ${v.description}`)
  .join('; ')

export default defineHandler<Input>({
  slug: 'text-to-speech',
  description:
    'Synthesize English speech offline with CMU Flite to a WAV file (16-bit mono PCM, 16 000 Hz); four voices (US female and male, Scottish male, diphone male), adjustable speed, pitch and volume. Synthetic voice, not neural.',
  timeoutMs: 60_000,
  inputSchema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_TEXT,
        description: `English text to speak, at most ${MAX_TEXT} characters (letters outside English are skipped or spelled)`,
      },
      voice: {
        type: 'string',
        enum: Object.keys(FLITE_VOICES),
        default: 'slt',
        description: `Flite voice: ${voiceList}`,
      },
      speed: {
        type: 'integer',
        minimum: 80,
        maximum: 450,
        default: 175,
        description: 'words per minute (80–450; each voice is stretched from its own pace, so this is approximate)',
      },
      pitchHz: {
        type: 'integer',
        minimum: 50,
        maximum: 300,
        description:
          "mean pitch in Hz (50–300); the voice's own when omitted (slt ≈ 170, awb ≈ 130, kal16 ≈ 95); rms has a fixed pitch",
      },
      amplitude: {
        type: 'integer',
        minimum: 0,
        maximum: 200,
        default: 100,
        description: "loudness in percent of the voice's own level (0–200; samples are clipped at full scale)",
      },
    },
  },
  output: {
    contentType: 'audio/wav',
    description:
      'a RIFF/WAVE file, PCM 16-bit mono 16 000 Hz; with Accept: application/json only, { contentType, base64, bytes, sampleRate, durationSec }',
    schema: {
      type: 'object',
      description:
        'the JSON variant, answered when Accept asks for application/json only; otherwise the body is the raw bytes in contentType',
      properties: {
        contentType: { type: 'string' },
        base64: { type: 'string', description: 'the bytes, base64 (shortened in the example)' },
        bytes: { type: 'number' },
        sampleRate: { type: 'number' },
        durationSec: { type: 'number' },
      },
      required: ['contentType', 'base64', 'bytes', 'sampleRate', 'durationSec'],
    },
    example: {
      contentType: 'audio/wav',
      base64:
        'UklGRuTaAABXQVZFZm10IBAAAAABAAEAgD4AAAB9AAACABAAZGF0YcDaAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAP//AAAAAAAAAAAAAPv/+/8BAAMABAD8////AQD//wEA/f8FAAMA//8CAAIABAD//////v/8///////8/wAAAAD8//r/…',
      bytes: 56044,
      sampleRate: 16000,
      durationSec: 1.75,
    },
  },
  example: { text: 'Hello from Tollgate.', voice: 'slt', speed: 175, amplitude: 100 },
  async run(input, ctx) {
    if (!/[\p{L}\p{N}]/u.test(input.text))
      throw new HandlerInputError('text', 'text has nothing to speak: give it words or numbers')
    // Flite reads English: letters of other scripts are skipped, so such text would answer silence
    if (!/[A-Za-z0-9]/.test(input.text))
      throw new HandlerInputError('text', 'text has no English letters or digits: Flite speaks English only', 422)
    if (input.pitchHz !== undefined && !FLITE_VOICES[input.voice].pitch) {
      const others = Object.entries(FLITE_VOICES)
        .filter(([, v]) => v.pitch)
        .map(([id]) => id)
      throw new HandlerInputError(
        'pitchHz',
        `voice ${input.voice} has a fixed pitch: leave pitchHz out or choose ${others.join(', ')}`,
      )
    }
    // control characters other than white space mean nothing to speech (and NUL would end the argument)
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    const text = input.text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, ' ')
    const wav = await fliteSpeak(text, { voice: input.voice, wpm: input.speed, pitchHz: input.pitchHz })
    const pcm = pcmOf(wav)
    if (!pcm.samples.some((s) => Math.abs(s) > SILENCE))
      throw new HandlerInputError('text', 'text has nothing Flite can speak: write it in English words or numbers', 422)
    if (input.amplitude !== 100) scale(pcm.samples, input.amplitude / 100)
    return binaryResult(ctx, 'audio/wav', wav, {
      sampleRate: pcm.sampleRate,
      durationSec: Math.round((pcm.samples.length / pcm.sampleRate) * 1000) / 1000,
    })
  },
})

/** The 16-bit samples of a PCM WAV file (a view into it) and its sample rate; throws on anything else. */
function pcmOf(wav: Uint8Array): { samples: Int16Array; sampleRate: number } {
  const b = Buffer.from(wav.buffer, wav.byteOffset, wav.byteLength)
  if (b.length < 44 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE')
    throw new Error('flite wrote no RIFF/WAVE file')
  let sampleRate = 0
  for (let at = 12; at + 8 <= b.length;) {
    const id = b.toString('latin1', at, at + 4)
    const size = b.readUInt32LE(at + 4)
    if (id === 'fmt ') {
      if (b.readUInt16LE(at + 8) !== 1 || b.readUInt16LE(at + 10) !== 1 || b.readUInt16LE(at + 22) !== 16)
        throw new Error('flite wrote WAV that is not 16-bit mono PCM')
      sampleRate = b.readUInt32LE(at + 12)
    } else if (id === 'data') {
      if (sampleRate !== SAMPLE_RATE) throw new Error(`flite wrote ${sampleRate} Hz audio, not ${SAMPLE_RATE}`)
      const bytes = Math.min(size, b.length - at - 8) & ~1
      // chunks start at even offsets and `wav` at 0 (fliteSpeak's buffer), so the view is aligned
      return { samples: new Int16Array(wav.buffer, wav.byteOffset + at + 8, bytes / 2), sampleRate }
    }
    at += 8 + size + (size & 1)
  }
  throw new Error('flite wrote a WAV file without a data chunk')
}

/** Multiplies the samples in place, clipping at full scale. */
function scale(samples: Int16Array, gain: number) {
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i]! * gain)))
}
