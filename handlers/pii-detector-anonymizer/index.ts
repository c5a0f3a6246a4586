import { isIP } from 'node:net'
import { defineHandler } from '../../src/pool/handler-contract.js'

const MAX_TEXT = 100_000

const PII_TYPES = ['email', 'iban', 'credit_card', 'ip_address', 'phone', 'person_name'] as const
type PiiType = (typeof PII_TYPES)[number]

interface Input {
  text: string
  mode: 'detect' | 'mask' | 'redact'
  types: PiiType[]
  defaultCountry?: string
  maskChar: string
}

export interface PiiSpan {
  type: PiiType
  start: number
  end: number
  text: string
  /** type-specific facts: card brand, IBAN/phone country, IP version, E.164 number */
  details?: Record<string, string | number>
}

const EMAIL =
  /[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,63}/g
const CARD = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g
const IBAN = /\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b/g
const IPV4 = /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.])/g
const IPV6_CANDIDATE =
  /(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|(?:\d{1,3}\.){3}\d{1,3})(?![0-9A-Fa-f:])/g

/** IBAN lengths by country (SWIFT IBAN registry). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MR: 27,
  MT: 31,
  MU: 30,
  NL: 18,
  NO: 15,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  SA: 24,
  SC: 31,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
}

/** Luhn (mod 10) checksum over a digit string. */
export function luhnValid(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** ISO 13616 check: move the first four characters to the end, letters to numbers, mod 97 must be 1. */
export function ibanValid(iban: string): boolean {
  const expected = IBAN_LENGTHS[iban.slice(0, 2)]
  if (!expected || iban.length !== expected) return false
  let rem = 0
  for (const ch of iban.slice(4) + iban.slice(0, 4)) {
    const code = ch.charCodeAt(0)
    const value = code >= 65 ? String(code - 55) : ch
    for (const digit of value) rem = (rem * 10 + Number(digit)) % 97
  }
  return rem === 1
}

function cardBrand(d: string): string {
  if (/^4/.test(d)) return 'visa'
  if (/^(5[1-5]|2(2[2-9]|[3-6]\d|7[01]|720))/.test(d)) return 'mastercard'
  if (/^3[47]/.test(d)) return 'amex'
  if (/^(6011|65|64[4-9])/.test(d)) return 'discover'
  if (/^35(2[89]|[3-8])/.test(d)) return 'jcb'
  if (/^3(0[0-5]|[68])/.test(d)) return 'diners'
  if (/^(50|5[6-9]|6)/.test(d)) return 'maestro'
  return 'unknown'
}

function* matches(re: RegExp, text: string) {
  re.lastIndex = 0
  for (let m = re.exec(text); m; m = re.exec(text)) yield m
}

async function detect(text: string, types: Set<PiiType>, defaultCountry: string | undefined): Promise<PiiSpan[]> {
  const found: PiiSpan[] = []
  const add = (type: PiiType, start: number, end: number, details?: PiiSpan['details']) =>
    found.push({ type, start, end, text: text.slice(start, end), ...(details ? { details } : {}) })

  if (types.has('email')) for (const m of matches(EMAIL, text)) add('email', m.index, m.index + m[0].length)
  if (types.has('iban')) {
    for (const m of matches(IBAN, text)) {
      const compact = m[0].replace(/ /g, '')
      if (ibanValid(compact)) add('iban', m.index, m.index + m[0].length, { country: compact.slice(0, 2) })
    }
  }
  if (types.has('credit_card')) {
    for (const m of matches(CARD, text)) {
      const digits = m[0].replace(/[ -]/g, '')
      if (luhnValid(digits))
        add('credit_card', m.index, m.index + m[0].length, { brand: cardBrand(digits), last4: digits.slice(-4) })
    }
  }
  if (types.has('ip_address')) {
    for (const m of matches(IPV4, text)) add('ip_address', m.index, m.index + m[0].length, { version: 4 })
    for (const m of matches(IPV6_CANDIDATE, text))
      if (isIP(m[0]) === 6) add('ip_address', m.index, m.index + m[0].length, { version: 6 })
  }
  if (types.has('phone')) {
    const { findPhoneNumbersInText } = await import('libphonenumber-js/max')
    const opts = defaultCountry ? { defaultCountry: defaultCountry as never } : undefined
    for (const p of findPhoneNumbersInText(text, opts)) {
      if (!p.number.isValid()) continue
      add('phone', p.startsAt, p.endsAt, {
        e164: p.number.number,
        ...(p.number.country ? { country: p.number.country } : {}),
      })
    }
  }
  if (types.has('person_name')) {
    const { default: nlp } = await import('compromise')
    const people = nlp(text).people().json({ offset: true }) as {
      text: string
      offset: { start: number; length: number }
    }[]
    for (const p of people) {
      // compromise includes trailing punctuation in some spans; keep the name itself
      const raw = text.slice(p.offset.start, p.offset.start + p.offset.length)
      const trimmed = raw
        .replace(/[^\p{L}\p{M}.'-]+$/u, '')
        .replace(/[.'-]+$/, (s) => (s === '.' && /\b[A-Z]\.$/.test(raw) ? s : ''))
      if (/\p{L}/u.test(trimmed)) add('person_name', p.offset.start, p.offset.start + trimmed.length)
    }
  }

  // One span per region: earlier entries in PII_TYPES win (an IBAN's digits are not also a phone), then the longer span.
  const rank = (s: PiiSpan) => PII_TYPES.indexOf(s.type)
  found.sort((a, b) => rank(a) - rank(b) || b.end - b.start - (a.end - a.start))
  const kept: PiiSpan[] = []
  for (const s of found) if (!kept.some((k) => s.start < k.end && k.start < s.end)) kept.push(s)
  return kept.sort((a, b) => a.start - b.start)
}

function mask(span: PiiSpan, ch: string): string {
  const hide = (s: string) => s.replace(/[\p{L}\p{N}]/gu, ch)
  switch (span.type) {
    case 'email': {
      const at = span.text.lastIndexOf('@')
      return span.text[0] + hide(span.text.slice(1, at)) + span.text.slice(at)
    }
    case 'credit_card':
    case 'iban':
    case 'phone': {
      // keep the last four digits/characters, as receipts do
      let keep = 4
      const out = [...span.text]
        .reverse()
        .map((c) => (/[\p{L}\p{N}]/u.test(c) && keep-- > 0 ? c : /[\p{L}\p{N}]/u.test(c) ? ch : c))
      return out.reverse().join('')
    }
    default:
      return hide(span.text)
  }
}

export default defineHandler<Input>({
  slug: 'pii-detector-anonymizer',
  description:
    'Find personal data in text — emails, phone numbers, payment cards (Luhn-checked), IBANs (mod-97 checked), IPv4/IPv6 addresses and person names — and return the spans, or the text with them masked or redacted.',
  inputSchema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: { type: 'string', maxLength: MAX_TEXT, description: `text to scan, at most ${MAX_TEXT} characters` },
      mode: {
        type: 'string',
        enum: ['detect', 'mask', 'redact'],
        default: 'detect',
        description:
          'detect: spans only; mask: hide characters (keeping email domains and the last 4 of cards, IBANs and phones); redact: replace with [TYPE]',
      },
      types: {
        type: 'array',
        items: { type: 'string', enum: [...PII_TYPES] },
        minItems: 1,
        maxItems: PII_TYPES.length,
        uniqueItems: true,
        default: [...PII_TYPES],
        description: 'which kinds of personal data to look for (default all)',
      },
      defaultCountry: {
        type: 'string',
        pattern: '^[A-Z]{2}$',
        description: 'ISO 3166-1 alpha-2 country for phone numbers written without an international prefix (e.g. "US")',
      },
      maskChar: {
        type: 'string',
        minLength: 1,
        maxLength: 1,
        default: '*',
        description: 'character used by mask mode',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'spans (type, start, end offsets in UTF-16 code units, text, details), counts per type, and in mask/redact mode the anonymized text',
    schema: {
      type: 'object',
      properties: { spans: { type: 'array' }, counts: { type: 'object' }, text: { type: 'string' } },
    },
    example: {
      text: 'Contact **** *** at j***.***@example.com or +* *** *** 0123. Card **** **** **** 1111.',
      spans: [
        { type: 'person_name', start: 8, end: 16, text: 'Jane Doe' },
        { type: 'email', start: 20, end: 40, text: 'jane.doe@example.com' },
        {
          type: 'phone',
          start: 44,
          end: 59,
          text: '+1 212 555 0123',
          details: { e164: '+12125550123', country: 'US' },
        },
      ],
      counts: { person_name: 1, email: 1, phone: 1, credit_card: 1 },
    },
  },
  example: {
    text: 'Contact Jane Doe at jane.doe@example.com or +1 212 555 0123. Card 4111 1111 1111 1111.',
    mode: 'mask',
    types: [...PII_TYPES],
    maskChar: '*',
  },
  async run(input) {
    const spans = await detect(input.text, new Set(input.types), input.defaultCountry)
    const counts: Partial<Record<PiiType, number>> = {}
    for (const s of spans) counts[s.type] = (counts[s.type] ?? 0) + 1
    if (input.mode === 'detect') return { body: { spans, counts } }
    let out = ''
    let at = 0
    for (const s of spans) {
      out +=
        input.text.slice(at, s.start) +
        (input.mode === 'redact' ? `[${s.type.toUpperCase()}]` : mask(s, input.maskChar))
      at = s.end
    }
    out += input.text.slice(at)
    return { body: { text: out, spans, counts } }
  },
})
