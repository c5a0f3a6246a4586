import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

interface Input {
  number: string
  country?: string
}

export default defineHandler<Input>({
  slug: 'phone-number-validator',
  description:
    'Parse and validate a phone number with libphonenumber-js (full metadata): validity, line type, country, and E.164, national, international and RFC 3966 formats.',
  inputSchema: {
    type: 'object',
    required: ['number'],
    additionalProperties: false,
    properties: {
      number: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        description: 'the phone number as written, e.g. "+44 20 7946 0958" or "(212) 555-0123"; at most 64 characters',
      },
      country: {
        type: 'string',
        pattern: '^[A-Za-z]{2}$',
        description: 'ISO 3166-1 alpha-2 country to assume for numbers without an international prefix, e.g. "US"',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'parsed (false when the text is not a phone number at all), valid, possible, type, country, callingCode, and formats',
    schema: {
      type: 'object',
      properties: {
        parsed: { type: 'boolean' },
        valid: { type: 'boolean' },
        possible: { type: 'boolean' },
        type: { type: ['string', 'null'] },
        country: { type: ['string', 'null'] },
        callingCode: { type: ['string', 'null'] },
        e164: { type: ['string', 'null'] },
        national: { type: ['string', 'null'] },
        international: { type: ['string', 'null'] },
        rfc3966: { type: ['string', 'null'] },
        reason: { type: ['string', 'null'] },
      },
    },
    example: {
      parsed: true,
      valid: true,
      possible: true,
      type: 'FIXED_LINE',
      country: 'GB',
      callingCode: '44',
      e164: '+442079460958',
      national: '020 7946 0958',
      international: '+44 20 7946 0958',
      rfc3966: 'tel:+442079460958',
      reason: null,
    },
  },
  example: { number: '+44 20 7946 0958' },
  async run(input) {
    const lib = await import('libphonenumber-js/max')
    const country = input.country?.toUpperCase()
    if (country && !lib.isSupportedCountry(country)) {
      throw new HandlerInputError('country', `country ${country} is not a supported region`)
    }
    try {
      const p = lib.parsePhoneNumberWithError(input.number, country ? { defaultCountry: country as never } : undefined)
      const valid = p.isValid()
      return {
        body: {
          parsed: true,
          valid,
          possible: p.isPossible(),
          type: p.getType() ?? null,
          country: p.country ?? null,
          callingCode: p.countryCallingCode,
          e164: p.number,
          national: p.formatNational(),
          international: p.formatInternational(),
          rfc3966: p.getURI(),
          reason: valid
            ? null
            : (lib.validatePhoneNumberLength(input.number, country as never) ?? 'NOT_VALID_FOR_REGION'),
        },
      }
    } catch (err) {
      // INVALID_COUNTRY, NOT_A_NUMBER, TOO_SHORT, TOO_LONG: a clean "not valid" answer, not a 400
      const reason = err instanceof lib.ParseError ? err.message : 'NOT_A_NUMBER'
      return {
        body: {
          parsed: false,
          valid: false,
          possible: false,
          type: null,
          country: null,
          callingCode: null,
          e164: null,
          national: null,
          international: null,
          rfc3966: null,
          reason,
        },
      }
    }
  },
})
