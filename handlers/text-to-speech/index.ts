import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'
import { binaryResult } from '../_shared/binary-output.js'

const MAX_TEXT = 2000

/** Voice files shipped inside the mespeak npm package (eSpeak voices), by id. */
const VOICES: Record<string, string> = {
  'en-us': 'en/en-us', en: 'en/en', 'en-rp': 'en/en-rp', 'en-sc': 'en/en-sc', 'en-n': 'en/en-n', 'en-wm': 'en/en-wm',
  ca: 'ca', cs: 'cs', de: 'de', el: 'el', eo: 'eo', es: 'es', 'es-la': 'es-la', fi: 'fi', fr: 'fr', hu: 'hu', it: 'it',
  kn: 'kn', la: 'la', lv: 'lv', nl: 'nl', pl: 'pl', pt: 'pt', 'pt-pt': 'pt-pt', ro: 'ro', sk: 'sk', sv: 'sv', tr: 'tr',
  zh: 'zh', 'zh-yue': 'zh-yue',
}

interface Input {
  text: string
  voice: string
  speed: number
  pitch: number
  amplitude: number
  wordGap: number
}

interface MeSpeak {
  loadConfig(data: object): void
  loadVoice(data: object): void
  isVoiceLoaded(id: string): boolean
  speak(text: string, opts: Record<string, unknown>): Uint8Array | null
}

let engine: Promise<{ meSpeak: MeSpeak; load: (voice: string) => string }> | undefined

/** meSpeak (eSpeak compiled to JavaScript) with its config, loaded once per worker from node_modules. */
function getEngine() {
  engine ??= (async () => {
    const { createRequire } = await import('node:module')
    const require = createRequire(import.meta.url)
    const meSpeak = require('mespeak') as MeSpeak
    meSpeak.loadConfig(require('mespeak/src/mespeak_config.json'))
    const load = (voice: string) => {
      const data = require(`mespeak/voices/${VOICES[voice]}.json`) as { voice_id: string }
      if (!meSpeak.isVoiceLoaded(data.voice_id)) meSpeak.loadVoice(data)
      return data.voice_id
    }
    return { meSpeak, load }
  })()
  return engine
}

export default defineHandler<Input>({
  slug: 'text-to-speech',
  description: 'Synthesize speech offline with eSpeak (meSpeak build) to a WAV file (16-bit mono PCM, 22 050 Hz); 30 voices in 25 languages, adjustable speed, pitch and volume. Robotic formant voice, not neural.',
  timeoutMs: 60_000,
  inputSchema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: { type: 'string', minLength: 1, maxLength: MAX_TEXT, description: `text to speak, at most ${MAX_TEXT} characters` },
      voice: { type: 'string', enum: Object.keys(VOICES), default: 'en-us', description: 'eSpeak voice / language' },
      speed: { type: 'integer', minimum: 80, maximum: 450, default: 175, description: 'words per minute (80–450)' },
      pitch: { type: 'integer', minimum: 0, maximum: 99, default: 50, description: 'base pitch (0–99)' },
      amplitude: { type: 'integer', minimum: 0, maximum: 200, default: 100, description: 'loudness (0–200)' },
      wordGap: { type: 'integer', minimum: 0, maximum: 50, default: 0, description: 'extra pause between words in units of 10 ms' },
    },
  },
  output: {
    contentType: 'audio/wav',
    description: 'a RIFF/WAVE file, PCM 16-bit mono 22 050 Hz; with Accept: application/json only, { contentType, base64, bytes, sampleRate, durationSec }',
  },
  example: { text: 'Hello from Tollgate.', voice: 'en-us', speed: 175, pitch: 50, amplitude: 100, wordGap: 0 },
  async run(input, ctx) {
    if (!/[\p{L}\p{N}]/u.test(input.text)) throw new HandlerInputError('text', 'text has nothing to speak')
    const { meSpeak, load } = await getEngine()
    const voiceId = load(input.voice)
    const wav = meSpeak.speak(input.text, {
      voice: voiceId,
      speed: input.speed,
      pitch: input.pitch,
      amplitude: input.amplitude,
      wordgap: input.wordGap,
      rawdata: 'array',
    })
    if (!wav || wav.length <= 44) throw new Error('speech synthesis produced no audio')
    const bytes = Uint8Array.from(wav)
    const view = new DataView(bytes.buffer)
    const sampleRate = view.getUint32(24, true)
    const byteRate = view.getUint32(28, true)
    return binaryResult(ctx, 'audio/wav', bytes, { sampleRate, durationSec: Math.round(((bytes.length - 44) / byteRate) * 1000) / 1000 })
  },
})
