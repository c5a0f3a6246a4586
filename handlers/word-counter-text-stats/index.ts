import { defineHandler } from '../../src/pool/handler-contract.js'
import { countSentences } from './sentences.js'

const MAX_TEXT = 500_000

interface Input {
  text: string
  readingWpm: number
  speakingWpm: number
  topWords: number
}

export default defineHandler<Input>({
  slug: 'word-counter-text-stats',
  description:
    'Count words, characters, sentences, paragraphs and syllables, estimate reading and speaking time, and score readability (Flesch reading ease, Flesch–Kincaid grade) for a text.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['text'],
    properties: {
      text: {
        type: 'string',
        maxLength: MAX_TEXT,
        description: `Text to analyse, at most ${MAX_TEXT} characters. Word and sentence boundaries follow Unicode (Intl.Segmenter), except that common English abbreviations (Dr. Smith, e.g., No. 5, Jan. 5) do not end a sentence; syllables and readability assume English.`,
      },
      readingWpm: {
        type: 'integer',
        minimum: 50,
        maximum: 1000,
        default: 238,
        description:
          'Silent reading speed, words per minute (238 is the adult average for non-fiction, Brysbaert 2019).',
      },
      speakingWpm: {
        type: 'integer',
        minimum: 50,
        maximum: 400,
        default: 150,
        description: 'Speaking speed, words per minute.',
      },
      topWords: {
        type: 'integer',
        minimum: 0,
        maximum: 50,
        default: 10,
        description: 'How many most frequent words (case-folded) to list.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ characters, charactersNoSpaces, words, uniqueWords, sentences, paragraphs, lines, syllables, averageWordLength, averageWordsPerSentence, readingTimeSeconds, speakingTimeSeconds, fleschReadingEase, fleschKincaidGrade, topWords: [{ word, count }] }',
    schema: {
      type: 'object',
      properties: {
        characters: { type: 'number' },
        charactersNoSpaces: { type: 'number' },
        words: { type: 'number' },
        uniqueWords: { type: 'number' },
        sentences: { type: 'number' },
        paragraphs: { type: 'number' },
        lines: { type: 'number' },
        syllables: { type: 'number' },
        averageWordLength: { type: 'number' },
        averageWordsPerSentence: { type: 'number' },
        readingTimeSeconds: { type: 'number' },
        speakingTimeSeconds: { type: 'number' },
        fleschReadingEase: { type: ['null', 'number'] },
        fleschKincaidGrade: { type: ['null', 'number'] },
        topWords: {
          type: 'array',
          items: {
            type: 'object',
            properties: { word: { type: 'string' }, count: { type: 'number' } },
            required: ['word', 'count'],
          },
        },
      },
      required: [
        'characters',
        'charactersNoSpaces',
        'words',
        'uniqueWords',
        'sentences',
        'paragraphs',
        'lines',
        'syllables',
        'averageWordLength',
        'averageWordsPerSentence',
        'readingTimeSeconds',
        'speakingTimeSeconds',
        'fleschReadingEase',
        'fleschKincaidGrade',
        'topWords',
      ],
    },
    example: {
      characters: 53,
      charactersNoSpaces: 41,
      words: 12,
      uniqueWords: 10,
      sentences: 3,
      paragraphs: 2,
      lines: 3,
      syllables: 13,
      averageWordLength: 3.17,
      averageWordsPerSentence: 4,
      readingTimeSeconds: 3,
      speakingTimeSeconds: 5,
      fleschReadingEase: 111.13,
      fleschKincaidGrade: -1.25,
      topWords: [
        { word: 'it', count: 2 },
        { word: 'the', count: 2 },
        { word: 'cat', count: 1 },
      ],
    },
  },
  example: {
    text: 'The cat sat on the mat. It was happy!\n\nThen it slept.',
    readingWpm: 238,
    speakingWpm: 150,
    topWords: 3,
  },
  async run(input) {
    const { syllable } = await import('syllable')
    const text = input.text

    const words: string[] = []
    for (const s of segments(text, 'word', 500)) if (s.isWordLike) words.push(s.segment)

    const sentences = countSentences(segments(text, 'sentence', 1_000))

    const paragraphs = text.split(/\n\s*\n/).filter((p) => p.trim() !== '').length
    const lines = text === '' ? 0 : text.split(/\r\n|\r|\n/).length

    const frequency = new Map<string, number>()
    for (const w of words) {
      const key = w.toLocaleLowerCase('en')
      frequency.set(key, (frequency.get(key) ?? 0) + 1)
    }
    // Count syllables once per distinct word: long texts repeat most of their words.
    let syllables = 0
    for (const [word, count] of frequency) syllables += countSyllables(word, syllable) * count

    const chars = [...text]
    const letters = words.reduce((n, w) => n + [...w].length, 0)
    const wordsPerSentence = sentences ? words.length / sentences : 0
    const syllablesPerWord = words.length ? syllables / words.length : 0
    const topWords = [...frequency]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, input.topWords)
      .map(([word, count]) => ({ word, count }))

    return {
      body: {
        characters: chars.length,
        charactersNoSpaces: chars.filter((c) => !/\s/u.test(c)).length,
        words: words.length,
        uniqueWords: frequency.size,
        sentences,
        paragraphs,
        lines,
        syllables,
        averageWordLength: round(words.length ? letters / words.length : 0),
        averageWordsPerSentence: round(wordsPerSentence),
        readingTimeSeconds: Math.round((words.length / input.readingWpm) * 60),
        speakingTimeSeconds: Math.round((words.length / input.speakingWpm) * 60),
        // Flesch (1948) and Kincaid et al. (1975); undefined without words or sentences.
        fleschReadingEase:
          words.length && sentences ? round(206.835 - 1.015 * wordsPerSentence - 84.6 * syllablesPerWord) : null,
        fleschKincaidGrade:
          words.length && sentences ? round(0.39 * wordsPerSentence + 11.8 * syllablesPerWord - 15.59) : null,
        topWords,
      },
    }
  },
})

/** Longest word handed to `syllable`, whose rules slow down quadratically on long strings; no English word comes near. */
const MAX_SYLLABLE_WORD = 40

/** Longer tokens (ids, hashes, run-together text) get a linear vowel-group count instead. */
function countSyllables(word: string, syllable: (w: string) => number): number {
  if (word.length <= MAX_SYLLABLE_WORD) return syllable(word)
  return Math.max(1, word.match(/[aeiouy]+/giu)?.length ?? 0)
}

/**
 * Intl.Segmenter over one long string slows down with every segment (V8 spends time proportional to
 * the whole input per step: 500,000 characters took minutes), so segment in windows. The last
 * segment of a window may be cut short, so it is dropped and the next window starts where it began;
 * that leaves every kept boundary the same lookahead the rules need. A window holding a single
 * segment (one very long sentence) is doubled until it holds two or reaches the end.
 */
function* segments(text: string, granularity: 'word' | 'sentence', window: number): Generator<Intl.SegmentData> {
  const segmenter = new Intl.Segmenter('en', { granularity })
  let pos = 0
  while (pos < text.length) {
    for (let size = window; ; size *= 2) {
      const end = Math.min(text.length, pos + size)
      const parts = [...segmenter.segment(text.slice(pos, end))]
      if (end === text.length) {
        yield* parts
        return
      }
      if (parts.length >= 2) {
        const last = parts.pop()!
        yield* parts
        pos += last.index
        break
      }
    }
  }
}

const round = (x: number) => Math.round(x * 100) / 100
