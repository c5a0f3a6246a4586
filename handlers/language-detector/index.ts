import { defineHandler } from '../../src/pool/handler-contract.js'

const MAX_TEXT = 100_000

interface Input {
  text: string
  top: number
  only?: string[]
}

export default defineHandler<Input>({
  slug: 'language-detector',
  description:
    'Detect the language of a text offline (tinyld, 60+ languages): ISO 639-1 and 639-3 codes, the language name, a confidence and the top-N candidates.',
  inputSchema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_TEXT,
        description: `text to classify, at most ${MAX_TEXT} characters; a sentence or more gives reliable results`,
      },
      top: {
        type: 'integer',
        minimum: 1,
        maximum: 10,
        default: 3,
        description: 'how many candidate languages to return',
      },
      only: {
        type: 'array',
        maxItems: 60,
        items: { type: 'string', pattern: '^[a-z]{2}$' },
        description: 'restrict detection to these ISO 639-1 codes (e.g. ["en","fr","de"])',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'language (best guess, null when undetermined) and candidates, each with iso639_1, iso639_3, name and confidence 0..1',
    schema: {
      type: 'object',
      properties: {
        language: { type: ['object', 'null'] },
        candidates: { type: 'array' },
        reliable: { type: 'boolean' },
      },
    },
    example: {
      language: { iso639_1: 'fr', iso639_3: 'fra', name: 'French', confidence: 1 },
      candidates: [{ iso639_1: 'fr', iso639_3: 'fra', name: 'French', confidence: 1 }],
      reliable: true,
    },
  },
  example: { text: 'Le renard brun rapide saute par-dessus le chien paresseux.', top: 3 },
  async run(input) {
    const tinyld = await import('tinyld')
    const detected = tinyld.detectAll(input.text, input.only ? { only: input.only } : undefined)
    const candidates = detected.slice(0, input.top).map(({ lang, accuracy }) => {
      const iso3 = tinyld.toISO3(lang) || null
      return {
        iso639_1: lang,
        iso639_3: iso3,
        // tinyld names languages by their ISO 639-3 code
        name: (iso3 && tinyld.langName(iso3)) || null,
        confidence: Math.round(accuracy * 10_000) / 10_000,
      }
    })
    const best = candidates[0] ?? null
    const second = candidates[1]?.confidence ?? 0
    // tinyld's accuracies are relative scores; call the winner reliable when it clearly leads
    const reliable = best !== null && best.confidence >= 0.2 && best.confidence >= 2 * second
    return { body: { language: best, candidates, reliable } }
  },
})
