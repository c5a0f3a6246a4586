import { defineHandler } from '../../src/pool/handler-contract.js'
import type { ZxcvbnFactory } from '@zxcvbn-ts/core'

const MAX_PASSWORD = 256

interface Input {
  password: string
  userInputs?: string[]
}

let factory: Promise<ZxcvbnFactory> | undefined

/** Built once per worker: the dictionaries take a moment to index. */
function zxcvbn(): Promise<ZxcvbnFactory> {
  factory ??= (async () => {
    const [{ ZxcvbnFactory }, common, en] = await Promise.all([
      import('@zxcvbn-ts/core'),
      import('@zxcvbn-ts/language-common'),
      import('@zxcvbn-ts/language-en'),
    ])
    return new ZxcvbnFactory({
      translations: en.translations,
      graphs: common.adjacencyGraphs,
      dictionary: { ...common.dictionary, ...en.dictionary },
      useLevenshteinDistance: true,
    })
  })()
  return factory
}

const LABELS = ['too guessable', 'very guessable', 'somewhat guessable', 'safely unguessable', 'very unguessable']

export default defineHandler<Input>({
  slug: 'password-strength-checker',
  description:
    'Estimate password strength with zxcvbn-ts (English and common dictionaries): score 0–4, estimated guesses, crack times for four attack scenarios and feedback. The password is never logged or echoed back.',
  inputSchema: {
    type: 'object',
    required: ['password'],
    additionalProperties: false,
    properties: {
      password: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_PASSWORD,
        description: `the password to rate, 1 to ${MAX_PASSWORD} characters; not stored, logged or returned`,
      },
      userInputs: {
        type: 'array',
        maxItems: 20,
        items: { type: 'string', minLength: 1, maxLength: 100 },
        description: 'words the password should not be built from (user name, email, site name); at most 20',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'score 0–4 with label, guesses and log10, crack time (seconds and words) per attack scenario, feedback warning and suggestions, the kinds of patterns found',
    schema: {
      type: 'object',
      properties: {
        score: { type: 'integer', minimum: 0, maximum: 4 },
        label: { type: 'string' },
        guesses: { type: 'number' },
        guessesLog10: { type: 'number' },
        crackTimes: { type: 'object' },
        feedback: { type: 'object' },
        patterns: { type: 'array' },
        length: { type: 'integer' },
      },
    },
    example: {
      score: 4,
      label: 'very unguessable',
      guesses: 52732933120000000000,
      guessesLog10: 19.72,
      crackTimes: {
        onlineThrottlingXPerHour: { seconds: 1.89838559232e21, display: 'centuries' },
        onlineNoThrottlingXPerSecond: { seconds: 5273293312000000000, display: 'centuries' },
        offlineSlowHashingXPerSecond: { seconds: 5273293312000000, display: 'centuries' },
        offlineFastHashingXPerSecond: { seconds: 5273293312, display: 'centuries' },
      },
      feedback: { warning: null, suggestions: [] },
      patterns: [
        { pattern: 'dictionary', dictionary: 'diceware-common' },
        { pattern: 'bruteforce' },
        { pattern: 'dictionary', dictionary: 'diceware-common' },
      ],
      length: 28,
    },
  },
  example: { password: 'correct horse battery staple', userInputs: ['alice'] },
  async run(input) {
    const z = await zxcvbn()
    const r = await z.checkAsync(input.password, input.userInputs)
    const crackTimes = Object.fromEntries(
      Object.entries(r.crackTimes).map(([scenario, v]) => [scenario, { seconds: v.seconds, display: v.display }]),
    )
    return {
      body: {
        score: r.score,
        label: LABELS[r.score],
        guesses: r.guesses,
        guessesLog10: Math.round(r.guessesLog10 * 100) / 100,
        crackTimes,
        feedback: { warning: r.feedback.warning || null, suggestions: r.feedback.suggestions },
        // pattern kinds only: the matched tokens are pieces of the password
        patterns: r.sequence.map((m) => ({
          pattern: m.pattern,
          ...('dictionaryName' in m ? { dictionary: m.dictionaryName } : {}),
        })),
        length: [...input.password].length,
      },
    }
  },
})
