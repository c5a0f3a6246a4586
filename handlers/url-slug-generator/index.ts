import { defineHandler } from '../../src/pool/handler-contract.js'

const MAX_TEXT = 10_000

interface Input {
  text: string
  separator: '-' | '_' | '.' | '~'
  lowercase: boolean
  maxLength: number
  locale?: string
  decamelize: boolean
  replacements?: { from: string; to: string }[]
}

export default defineHandler<Input>({
  slug: 'url-slug-generator',
  description:
    'Turn a title into a URL slug: transliterates accented, Cyrillic, Greek and other Latin-convertible letters (with German, Scandinavian, Turkish, Hungarian and Serbian rules), custom replacements, separator choice and a word-boundary-aware length limit.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['text'],
    properties: {
      text: {
        type: 'string',
        maxLength: MAX_TEXT,
        description: `Text to slugify, at most ${MAX_TEXT} characters. Characters with no Latin transliteration (e.g. CJK) are dropped.`,
      },
      separator: {
        type: 'string',
        enum: ['-', '_', '.', '~'],
        default: '-',
        description: 'Word separator (URL-unreserved characters only).',
      },
      lowercase: { type: 'boolean', default: true, description: 'Lower-case the slug.' },
      maxLength: {
        type: 'integer',
        minimum: 1,
        maximum: 500,
        default: 80,
        description: 'Longest slug; cut at the last separator that fits, or mid-word when a single word is longer.',
      },
      locale: {
        type: 'string',
        pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
        maxLength: 20,
        description:
          'BCP-47 language tag for language-specific transliteration (de: ä→ae; sv, da, nb, tr, hu, sr have rules too; others use the defaults).',
      },
      decamelize: { type: 'boolean', default: true, description: 'Split camelCase words: fooBar → foo-bar.' },
      replacements: {
        type: 'array',
        maxItems: 50,
        description: 'Replacements applied before transliteration, e.g. [{ "from": "&", "to": " and " }] (at most 50).',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['from', 'to'],
          properties: {
            from: { type: 'string', minLength: 1, maxLength: 50, description: 'Text to replace (literal).' },
            to: { type: 'string', maxLength: 50, description: 'Replacement text.' },
          },
        },
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: '{ slug, length, truncated }',
    schema: {
      type: 'object',
      properties: { slug: { type: 'string' }, length: { type: 'number' }, truncated: { type: 'boolean' } },
      required: ['slug', 'length', 'truncated'],
    },
    example: { slug: 'deja-vu-10-tips-fuer-strassen-and-cafes', length: 39, truncated: false },
  },
  example: {
    text: 'Déjà vu: 10 Tips für Straßen & Cafés!',
    separator: '-',
    lowercase: true,
    maxLength: 80,
    locale: 'de',
    decamelize: true,
  },
  async run(input) {
    const { default: slugify } = await import('@sindresorhus/slugify')
    const slugged = slugify(input.text, {
      separator: input.separator,
      // slugify lower-cases with the locale after transliterating, which turns I into Turkish dotless ı
      // and then drops it; the slug is ASCII by now, so plain lower-casing is right.
      lowercase: false,
      decamelize: input.decamelize,
      // slugify spreads its defaults first, so an explicit undefined would override them
      ...(input.locale ? { locale: input.locale } : {}),
      customReplacements: (input.replacements ?? []).map((r) => [r.from, r.to] as [string, string]),
    })
    const full = input.lowercase ? slugged.toLowerCase() : slugged
    const slug = truncate(full, input.maxLength, input.separator)
    return { body: { slug, length: slug.length, truncated: slug.length < full.length } }
  },
})

/** Cut at the last separator that fits so words stay whole; a single over-long word is cut mid-word. */
function truncate(slug: string, max: number, separator: string): string {
  if (slug.length <= max) return slug
  if (slug[max] === separator) return slug.slice(0, max)
  const head = slug.slice(0, max)
  const cut = head.lastIndexOf(separator)
  return cut > 0 ? head.slice(0, cut) : head
}
