/**
 * Sentence counting on top of Intl.Segmenter. V8's segmenter uses ICU's sentence rules without
 * CLDR's abbreviation suppressions (the `-u-ss-standard` locale key is ignored), so it ends a
 * sentence after "Dr." in "Dr. Smith". A segment that ends on a known abbreviation is joined to
 * the next when that one starts as the abbreviation expects (a name, a number, anything).
 */

/** come before a name: joined when the next segment starts with a capital letter */
const BEFORE_NAME = [
  'Mr',
  'Mrs',
  'Ms',
  'Mx',
  'Dr',
  'Prof',
  'Rev',
  'Hon',
  'Gen',
  'Col',
  'Capt',
  'Lt',
  'Sgt',
  'Gov',
  'Sen',
  'Rep',
  'Pres',
  'Fr',
  'St',
  'Mt',
]
/** come before a number: joined when the next segment starts with a digit; written capitalised (lower-case "no." is the word) */
const BEFORE_NUMBER = [
  'No',
  'Nos',
  'Fig',
  'Figs',
  'Vol',
  'Vols',
  'Ch',
  'Sec',
  'Art',
  'Jan',
  'Feb',
  'Mar',
  'Apr',
  'Jun',
  'Jul',
  'Aug',
  'Sep',
  'Sept',
  'Oct',
  'Nov',
  'Dec',
]
/** Latin and comparison abbreviations, followed by anything */
const BEFORE_ANY = ['e.g', 'i.e', 'cf', 'viz', 'vs', 'approx', 'ca']

type Expects = 'name' | 'number' | 'any'

const escape = (s: string) => s.replace(/\./g, '\\.')
const ending = (words: string[], flags: string) =>
  new RegExp(`(?<![\\p{L}\\p{N}.])(?:${words.map(escape).join('|')})\\.\\s*$`, flags)
const ENDINGS: Array<[RegExp, Expects]> = [
  [ending(BEFORE_NAME, 'iu'), 'name'],
  [ending([...BEFORE_NUMBER, ...BEFORE_NUMBER.map((w) => w.toUpperCase())], 'u'), 'number'],
  [ending(BEFORE_ANY, 'iu'), 'any'],
]
const STARTS: Record<Expects, RegExp> = { name: /^\s*["'“‘(]?\p{Lu}/u, number: /^\s*\d/u, any: /^/ }
const WORDY = /[\p{L}\p{N}]/u

function abbreviationAtEnd(segment: string): Expects | undefined {
  for (const [re, expects] of ENDINGS) if (re.test(segment)) return expects
  return undefined
}

/**
 * Counts sentences in Intl.Segmenter sentence segments (in order); a sentence must hold a letter
 * or digit, so stray punctuation and blank lines do not count.
 * @example countSentences(new Intl.Segmenter('en', { granularity: 'sentence' }).segment('Dr. Smith left. Bye.')) // 2
 */
export function countSentences(segments: Iterable<{ segment: string }>): number {
  let sentences = 0
  let hasWords = false
  let expects: Expects | undefined
  for (const { segment } of segments) {
    if (expects && !STARTS[expects].test(segment)) {
      if (hasWords) sentences++
      hasWords = false
    }
    hasWords ||= WORDY.test(segment)
    expects = abbreviationAtEnd(segment)
    if (!expects) {
      if (hasWords) sentences++
      hasWords = false
    }
  }
  return hasWords ? sentences + 1 : sentences
}
