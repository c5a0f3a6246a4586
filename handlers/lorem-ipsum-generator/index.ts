import { randomInt } from 'node:crypto'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const LIMITS = { words: 1_000, sentences: 500, paragraphs: 50 } as const
const OPENING = ['lorem', 'ipsum', 'dolor', 'sit', 'amet']
// Words of the classic passage (Cicero, De finibus, as mangled by typesetters).
const WORDS = (
  'consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud ' +
  'exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse cillum fugiat ' +
  'nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum perspiciatis ' +
  'unde omnis iste natus error voluptatem accusantium doloremque laudantium totam rem aperiam eaque ipsa quae ab illo inventore veritatis ' +
  'quasi architecto beatae vitae dicta explicabo nemo ipsam quia voluptas aspernatur aut odit fugit consequuntur magni dolores eos ratione ' +
  'sequi nesciunt neque porro quisquam dolorem adipisci numquam eius modi tempora incidunt magnam quaerat'
).split(' ')

interface Input {
  unit: 'words' | 'sentences' | 'paragraphs'
  count: number
  seed?: number
  startWithLorem: boolean
}

export default defineHandler<Input>({
  slug: 'lorem-ipsum-generator',
  description:
    'Generate lorem ipsum placeholder text by words, sentences or paragraphs; pass a seed to get the same text every time.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      unit: {
        type: 'string',
        enum: ['words', 'sentences', 'paragraphs'],
        default: 'paragraphs',
        description: 'What count counts.',
      },
      count: {
        type: 'integer',
        minimum: 1,
        maximum: LIMITS.words,
        default: 3,
        description: `How many: at most ${LIMITS.words} words, ${LIMITS.sentences} sentences or ${LIMITS.paragraphs} paragraphs (413 beyond).`,
      },
      seed: {
        type: 'integer',
        minimum: 0,
        maximum: 4_294_967_295,
        description: 'Seed (0 to 2^32−1) for repeatable output; omitted, a random one is chosen and returned.',
      },
      startWithLorem: {
        type: 'boolean',
        default: true,
        description: 'Begin with the customary "Lorem ipsum dolor sit amet".',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: '{ text, paragraphs?: string[], words, seed } — paragraphs are joined with a blank line in text',
    schema: {
      type: 'object',
      properties: {
        text: { type: 'string' },
        words: { type: 'number' },
        seed: { type: 'number' },
        paragraphs: { type: 'array', items: { type: 'string' } },
      },
      required: ['text', 'words', 'seed'],
    },
    example: {
      text: 'Lorem ipsum dolor sit amet qui dolores ab nostrud perspiciatis aute. Deserunt commodo nesciunt explicabo reprehenderit ullamco est inventore totam consectetur deserunt magni eiusmod.',
      words: 24,
      seed: 42,
    },
  },
  example: { unit: 'sentences', count: 2, seed: 42, startWithLorem: true },
  run(input) {
    const limit = LIMITS[input.unit]
    if (input.count > limit)
      throw new HandlerInputError('count', `count for ${input.unit} must be at most ${limit}`, 413)
    const seed = input.seed ?? randomInt(0, 2 ** 32)
    const gen = new LoremWriter(mulberry32(seed), input.startWithLorem)

    let text: string
    let paragraphs: string[] | undefined
    if (input.unit === 'words') text = gen.words(input.count).join(' ')
    else if (input.unit === 'sentences') text = Array.from({ length: input.count }, () => gen.sentence()).join(' ')
    else {
      paragraphs = Array.from({ length: input.count }, () => gen.paragraph())
      text = paragraphs.join('\n\n')
    }
    const words = text.split(/\s+/).filter(Boolean).length
    return { body: { text, ...(paragraphs ? { paragraphs } : {}), words, seed } }
  },
})

class LoremWriter {
  private opening: string[]
  constructor(
    private readonly random: () => number,
    startWithLorem: boolean,
  ) {
    this.opening = startWithLorem ? [...OPENING] : []
  }

  private int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1))
  }

  words(n: number): string[] {
    const out: string[] = []
    while (out.length < n) out.push(this.opening.shift() ?? WORDS[this.int(0, WORDS.length - 1)])
    return out
  }

  /** 6-14 words, capitalised, an occasional comma, ending in a full stop. */
  sentence(): string {
    const w = this.words(this.int(6, 14))
    if (w.length > 7 && this.random() < 0.4) w[this.int(2, w.length - 4)] += ','
    w[0] = w[0][0].toUpperCase() + w[0].slice(1)
    return `${w.join(' ')}.`
  }

  paragraph(): string {
    return Array.from({ length: this.int(3, 6) }, () => this.sentence()).join(' ')
  }
}

/** mulberry32: a tiny, well-distributed 32-bit PRNG; the same seed gives the same text on every machine. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296
  }
}
