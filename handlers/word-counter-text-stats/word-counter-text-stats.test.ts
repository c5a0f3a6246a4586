import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'
import { countSentences } from './sentences.js'

type Out = Record<string, number | null> & { topWords: { word: string; count: number }[] }

t.test('example', async (t) => {
  const out = okBody<Out>(await runInline(handler, { ...handler.example }))
  t.match(out, {
    words: 12,
    uniqueWords: 10,
    sentences: 3,
    paragraphs: 2,
    lines: 3,
    syllables: 13,
    characters: 53,
    charactersNoSpaces: 41,
  })
  t.same(out.topWords, [
    { word: 'it', count: 2 },
    { word: 'the', count: 2 },
    { word: 'cat', count: 1 },
  ])
})

t.test('Flesch scores by hand: "The cat sat on the mat."', async (t) => {
  const out = okBody<Out>(await runInline(handler, { text: 'The cat sat on the mat.' }))
  t.match(out, { words: 6, sentences: 1, syllables: 6 })
  // 206.835 − 1.015·6 − 84.6·1 and 0.39·6 + 11.8·1 − 15.59
  t.equal(out.fleschReadingEase, 116.15)
  t.equal(out.fleschKincaidGrade, -1.45)
})

t.test('harder text scores lower and higher grade', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, {
      text: 'Notwithstanding considerable institutional opposition, the interdisciplinary committee unanimously recommended comprehensive organizational restructuring.',
    }),
  )
  t.ok(out.fleschReadingEase! < 0)
  t.ok(out.fleschKincaidGrade! > 20)
})

t.test('reading and speaking time follow the given speeds', async (t) => {
  const text = 'word '.repeat(476)
  const out = okBody<Out>(await runInline(handler, { text, readingWpm: 238, speakingWpm: 119 }))
  t.equal(out.readingTimeSeconds, 120)
  t.equal(out.speakingTimeSeconds, 240)
})

t.test('Unicode words, contractions, numbers', async (t) => {
  const out = okBody<Out>(await runInline(handler, { text: "Don't panic: naïve café costs 3.50 €." }))
  t.equal(out.words, 6, "don't, panic, naïve, café, costs, 3.50")
})

t.test('empty text', async (t) => {
  const out = okBody<Out>(await runInline(handler, { text: '' }))
  t.match(out, {
    words: 0,
    characters: 0,
    sentences: 0,
    paragraphs: 0,
    lines: 0,
    syllables: 0,
    fleschReadingEase: null,
    fleschKincaidGrade: null,
  })
  t.same(out.topWords, [])
})

t.test('windowed segmentation counts like one pass over the whole text', async (t) => {
  const pieces = [
    'Mr. Smith went to Washington.',
    'It cost $3.50, he said!',
    '"Really?" she asked.',
    'e.g. this; or that…',
    '日本語の文です。',
    'Tabs\tand\nnew lines\n\n',
  ]
  let text = ''
  for (let i = 0; text.length < 30_000; i++) text += pieces[(i * 7) % pieces.length] + (i % 5 ? ' ' : '\n\n')
  let words = 0
  for (const s of new Intl.Segmenter('en', { granularity: 'word' }).segment(text)) if (s.isWordLike) words++
  const sentences = countSentences(new Intl.Segmenter('en', { granularity: 'sentence' }).segment(text))
  const out = okBody<Out>(await runInline(handler, { text }))
  t.equal(out.words, words)
  t.equal(out.sentences, sentences)
})

t.test('GET query strings are coerced', async (t) => {
  const out = okBody<Out>(
    await runInline(handler, { text: 'a b a', topWords: '1', readingWpm: '60' }, { from: 'query' }),
  )
  t.same(out.topWords, [{ word: 'a', count: 2 }])
  t.equal(out.readingTimeSeconds, 3)
})

t.test('invalid input names the field', async (t) => {
  t.match(await runInline(handler, {}), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'x', readingWpm: 10 }), { ok: false, status: 400, field: 'readingWpm' })
  t.match(await runInline(handler, { text: 'x', topWords: 'many' }, { from: 'query' }), {
    ok: false,
    status: 400,
    field: 'topWords',
  })
})

t.test('documented limit: 500,000 characters, and the limit itself runs in time', async (t) => {
  t.match(await runInline(handler, { text: 'a'.repeat(500_001) }), { ok: false, status: 400, field: 'text' })
  const start = Date.now()
  const out = okBody<Out>(await runInline(handler, { text: 'Hi there. '.repeat(50_000) }))
  t.equal(out.sentences, 50_000)
  t.ok(Date.now() - start < 8_000, `took ${Date.now() - start} ms`)
  t.equal(
    okBody<Out>(await runInline(handler, { text: 'x'.repeat(500_000) })).syllables,
    1,
    'one huge token does not stall the syllable counter',
  )
})

// Issue #22: "Dr." was counted as the end of a sentence (Intl.Segmenter has no abbreviation list)
t.test('abbreviations before a name, a number or anything do not end a sentence', async (t) => {
  const count = async (text: string) => okBody<Out>(await runInline(handler, { text })).sentences
  t.equal(await count('Dr. Smith met Mr. Jones and Prof. Lee at St. Mary’s.'), 1)
  t.equal(await count('See Fig. 3 and No. 10 on Jan. 5. It was late.'), 2)
  t.equal(await count('Cats vs. Dogs is a film. Compare cf. Smith.'), 2)
  t.equal(await count('DR. WHO is on. MRS. Brown too.'), 2, 'capitals')
  // still a sentence end where the word after does not fit the abbreviation
  t.equal(await count('I said no. Then he left.'), 2, 'lower-case "no." is the word, not No.')
  t.equal(await count('The answer came in Jan. then more in Feb.'), 1)
  t.equal(await count('It is in Jan. The rest in Feb.'), 2, 'a month abbreviation before a capital ends the sentence')
  t.equal(await count('Ask the Dr.'), 1, 'at the end of the text')
  t.equal(await count('Mr.'), 1)
})
