import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_PATTERN = 1_000
const MAX_TEXT = 100_000
const MAX_MATCHES = 1_000

/** Building blocks for the generator; each is valid in both RE2 and JavaScript syntax. */
const PRESETS = {
  email: {
    pattern: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}',
    description: 'Pragmatic e-mail address (not full RFC 5322)',
    sample: 'ada@example.com',
  },
  url: {
    pattern: 'https?://[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*(?::\\d{1,5})?(?:[/?#][^\\s]*)?',
    description: 'http or https URL',
    sample: 'https://example.com/a?b=c',
  },
  ipv4: {
    pattern: '(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)',
    description: 'Dotted-quad IPv4 address, each octet 0-255 without leading zeros',
    sample: '192.168.0.1',
  },
  'date-iso': {
    pattern: '\\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\\d|3[01])',
    description: 'ISO 8601 date YYYY-MM-DD (day not checked against month)',
    sample: '2024-02-29',
  },
  'date-us': {
    pattern: '(?:0[1-9]|1[0-2])/(?:0[1-9]|[12]\\d|3[01])/\\d{4}',
    description: 'US date MM/DD/YYYY',
    sample: '12/31/1999',
  },
  'date-eu': {
    pattern: '(?:0[1-9]|[12]\\d|3[01])[./](?:0[1-9]|1[0-2])[./]\\d{4}',
    description: 'European date DD/MM/YYYY or DD.MM.YYYY',
    sample: '31.12.1999',
  },
  'time-24h': {
    pattern: '(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d)?',
    description: '24-hour time HH:MM or HH:MM:SS',
    sample: '23:59:01',
  },
  'hex-color': {
    pattern: '#(?:[0-9A-Fa-f]{6}|[0-9A-Fa-f]{3})\\b',
    description: 'CSS hex colour #RGB or #RRGGBB',
    sample: '#1e90ff',
  },
  uuid: {
    pattern: '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}',
    description: 'UUID in 8-4-4-4-12 hex form',
    sample: '123e4567-e89b-12d3-a456-426614174000',
  },
  'phone-e164': { pattern: '\\+[1-9]\\d{1,14}', description: 'E.164 phone number', sample: '+14155552671' },
  slug: {
    pattern: '[a-z0-9]+(?:-[a-z0-9]+)*',
    description: 'URL slug: lower-case words joined by hyphens',
    sample: 'hello-world-2',
  },
  integer: { pattern: '[-+]?\\d+', description: 'Signed integer', sample: '-42' },
  decimal: { pattern: '[-+]?\\d+(?:\\.\\d+)?', description: 'Signed decimal number', sample: '3.14' },
  semver: {
    pattern: '(?:0|[1-9]\\d*)\\.(?:0|[1-9]\\d*)\\.(?:0|[1-9]\\d*)(?:-[0-9A-Za-z.-]+)?(?:\\+[0-9A-Za-z.-]+)?',
    description: 'Semantic version MAJOR.MINOR.PATCH with optional pre-release and build',
    sample: '1.2.3-beta.1+build.5',
  },
  hostname: {
    pattern: '(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}',
    description: 'DNS host name with a TLD',
    sample: 'api.example.co.uk',
  },
  'mac-address': {
    pattern: '[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}',
    description: 'MAC address with : or - separators',
    sample: '00:1A:2b:3c:4D:5e',
  },
  'us-zip': { pattern: '\\d{5}(?:-\\d{4})?', description: 'US ZIP or ZIP+4 code', sample: '94105-1234' },
  'eth-address': {
    pattern: '0x[0-9A-Fa-f]{40}',
    description: 'Ethereum address (checksum not verified)',
    sample: '0x52908400098527886E0F7030069857D2E4169EE7',
  },
} as const
type Preset = keyof typeof PRESETS

interface Input {
  action: 'test' | 'generate'
  pattern?: string
  flags: string
  text?: string
  maxMatches: number
  preset?: Preset
  anchored: boolean
}

interface Match {
  match: string
  index: number
  end: number
  groups: (string | null)[]
  namedGroups?: Record<string, string | null>
}

export default defineHandler<Input>({
  slug: 'regex-generator-tester',
  description:
    'Test a regular expression against text and get every match with its position and capture groups, on a linear-time RE2 engine that untrusted patterns cannot hang; or generate a ready-made pattern (email, url, ipv4, dates, uuid, semver, ...).',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      action: {
        type: 'string',
        enum: ['test', 'generate'],
        default: 'test',
        description:
          'test: run pattern on text. generate: return the pattern for preset (and test it on text when given).',
      },
      pattern: {
        type: 'string',
        maxLength: MAX_PATTERN,
        description: `test: the pattern without slashes, at most ${MAX_PATTERN} characters. RE2 syntax, which is JavaScript syntax minus lookahead, backreferences and possessive forms; lookbehind is allowed, \\uXXXX escapes are accepted; repeat counts are capped at 1000.`,
      },
      flags: {
        type: 'string',
        pattern: '^[gimsu]*$',
        maxLength: 5,
        default: 'g',
        description:
          'JavaScript-style flags: g all matches (else the first only), i ignore case, m ^/$ at line breaks, s dot matches newline, u accepted (always Unicode).',
      },
      text: {
        type: 'string',
        maxLength: MAX_TEXT,
        description: `Text to search, at most ${MAX_TEXT} characters. Required for test.`,
      },
      maxMatches: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_MATCHES,
        default: 100,
        description: `Stop after this many matches (at most ${MAX_MATCHES}); "truncated" tells when more existed.`,
      },
      preset: { type: 'string', enum: Object.keys(PRESETS), description: 'generate: which pattern to build.' },
      anchored: {
        type: 'boolean',
        default: true,
        description:
          'generate: wrap as ^(?:...)$ to validate a whole string; false gives a pattern for searching inside text.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'test: { engine, pattern, flags, matched, matchCount, truncated, matches: [{ match, index, end, groups, namedGroups? }] }; generate: { preset, pattern, flags, literal, description, sample, test? }',
    schema: {
      type: 'object',
      properties: {
        engine: { type: 'string' },
        pattern: { type: 'string' },
        flags: { type: 'string' },
        matched: { type: 'boolean' },
        matchCount: { type: 'number' },
        truncated: { type: 'boolean' },
        matches: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              match: { type: 'string' },
              index: { type: 'number' },
              end: { type: 'number' },
              groups: { type: 'array', items: { type: ['null', 'string'] } },
              namedGroups: {
                type: 'object',
                description: 'named capture groups by name',
                additionalProperties: { type: ['string', 'null'] },
              },
            },
            required: ['match', 'index', 'end', 'groups'],
          },
        },
        preset: { type: 'string' },
        literal: { type: 'string' },
        description: { type: 'string' },
        sample: { type: 'string' },
        test: {
          type: 'object',
          properties: {
            engine: { type: 'string' },
            pattern: { type: 'string' },
            flags: { type: 'string' },
            matched: { type: 'boolean' },
            matchCount: { type: 'number' },
            truncated: { type: 'boolean' },
            matches: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  match: { type: 'string' },
                  index: { type: 'number' },
                  end: { type: 'number' },
                  groups: { type: 'array' },
                },
                required: ['match', 'index', 'end', 'groups'],
              },
            },
          },
          required: ['engine', 'pattern', 'flags', 'matched', 'matchCount', 'truncated', 'matches'],
        },
      },
      required: ['pattern', 'flags'],
    },
    example: {
      engine: 're2',
      pattern: '(?<year>\\d{4})-(\\d{2})',
      flags: 'g',
      matched: true,
      matchCount: 2,
      truncated: false,
      matches: [
        { match: '2024-05', index: 5, end: 12, groups: ['2024', '05'], namedGroups: { year: '2024' } },
        { match: '2025-11', index: 16, end: 23, groups: ['2025', '11'], namedGroups: { year: '2025' } },
      ],
    },
  },
  example: {
    action: 'test',
    pattern: '(?<year>\\d{4})-(\\d{2})',
    flags: 'g',
    text: 'from 2024-05 to 2025-11',
    maxMatches: 100,
    anchored: true,
  },
  timeoutMs: 5_000,
  async run(input) {
    if (input.action === 'generate') {
      if (!input.preset) throw new HandlerInputError('preset', 'preset is required for action "generate"')
      const preset = PRESETS[input.preset]
      const pattern = input.anchored ? `^(?:${preset.pattern})$` : preset.pattern
      const body: Record<string, unknown> = {
        preset: input.preset,
        pattern,
        flags: input.flags,
        literal: `/${pattern.replace(/\//g, '\\/')}/${input.flags}`,
        description: preset.description,
        sample: preset.sample,
      }
      if (input.text !== undefined) body.test = await search(pattern, input.flags, input.text, input.maxMatches)
      return { body }
    }
    if (input.pattern === undefined) throw new HandlerInputError('pattern', 'pattern is required for action "test"')
    if (input.text === undefined) throw new HandlerInputError('text', 'text is required for action "test"')
    return { body: await search(input.pattern, input.flags, input.text, input.maxMatches) }
  },
})

/** Runs on re2js (pure-JS RE2): matching time is linear in the text, whatever the pattern. */
async function search(pattern: string, flags: string, text: string, maxMatches: number) {
  const { RE2JS } = await import('re2js')
  let bits = RE2JS.LOOKBEHINDS
  if (flags.includes('i')) bits |= RE2JS.CASE_INSENSITIVE
  if (flags.includes('m')) bits |= RE2JS.MULTILINE
  if (flags.includes('s')) bits |= RE2JS.DOTALL
  let re
  try {
    re = RE2JS.compile(toRe2Syntax(pattern), bits)
  } catch (err) {
    throw new HandlerInputError('pattern', `pattern is not supported: ${(err as Error).message}`)
  }

  const limit = flags.includes('g') ? maxMatches : 1
  const matches: Match[] = []
  let truncated = false
  for (const m of re.matchAll(text)) {
    if (matches.length === limit) {
      truncated = flags.includes('g')
      break
    }
    const index = m.index ?? 0
    const match: Match = { match: m[0], index, end: index + m[0].length, groups: m.slice(1).map((g) => g ?? null) }
    if (m.groups) match.namedGroups = Object.fromEntries(Object.entries(m.groups).map(([k, v]) => [k, v ?? null]))
    matches.push(match)
  }
  return { engine: 're2', pattern, flags, matched: matches.length > 0, matchCount: matches.length, truncated, matches }
}

/** RE2 spells JavaScript's \uXXXX and \u{X...} escapes as \x{...}; rewrite them (unless the backslash is itself escaped). */
function toRe2Syntax(pattern: string): string {
  return pattern.replace(
    /(?<!\\)((?:\\\\)*)\\u(?:\{([0-9A-Fa-f]{1,6})\}|([0-9A-Fa-f]{4}))/g,
    (_, slashes: string, braced?: string, plain?: string) => `${slashes}\\x{${braced ?? plain}}`,
  )
}
