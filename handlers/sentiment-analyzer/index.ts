import { defineHandler } from '../../src/pool/handler-contract.js'

const MAX_TEXT = 100_000
/** |comparative| below this (score per token) is labelled neutral */
const NEUTRAL_BAND = 0.05

interface Input {
  text: string
  extras?: Record<string, number>
}

export default defineHandler<Input>({
  slug: 'sentiment-analyzer',
  description:
    'English sentiment of a text with the AFINN-165 word list (plus emoji and negation handling): total score, score per word, a positive/neutral/negative label and the words that drove it.',
  inputSchema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_TEXT,
        description: `English text, at most ${MAX_TEXT} characters`,
      },
      extras: {
        type: 'object',
        description: 'extra or overriding word scores, -5 (very negative) to 5 (very positive); at most 100 words',
        maxProperties: 100,
        propertyNames: { type: 'string', minLength: 1, maxLength: 50 },
        additionalProperties: { type: 'number', minimum: -5, maximum: 5 },
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'score (sum of word scores), comparative (score per token), label, positive and negative words, per-word contributions',
    schema: {
      type: 'object',
      properties: {
        score: { type: 'number' },
        comparative: { type: 'number' },
        label: { type: 'string', enum: ['positive', 'neutral', 'negative'] },
        positive: { type: 'array', items: { type: 'string' } },
        negative: { type: 'array', items: { type: 'string' } },
        contributions: { type: 'array' },
        tokens: { type: 'integer' },
      },
    },
    example: {
      score: 3,
      comparative: 0.2143,
      label: 'positive',
      positive: ['great', 'love'],
      negative: ['damaged'],
      contributions: [
        { word: 'damaged', score: -3 },
        { word: 'great', score: 3 },
        { word: 'love', score: 3 },
      ],
      tokens: 14,
    },
  },
  example: { text: 'I love this product, it works great. The box was a bit damaged though.' },
  async run(input) {
    const { default: Sentiment } = await import('sentiment')
    const r = new Sentiment().analyze(input.text, input.extras ? { extras: input.extras } : undefined)
    const label = r.comparative >= NEUTRAL_BAND ? 'positive' : r.comparative <= -NEUTRAL_BAND ? 'negative' : 'neutral'
    return {
      body: {
        score: r.score,
        comparative: Math.round(r.comparative * 10_000) / 10_000,
        label,
        positive: r.positive,
        negative: r.negative,
        contributions: r.calculation.map((c) => {
          const [word, score] = Object.entries(c)[0]
          return { word, score }
        }),
        tokens: r.tokens.length,
      },
    }
  },
})
