import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

type Capability = 'likely' | 'possible' | 'unlikely' | 'no' | 'unknown'

/**
 * What a line type (libphonenumber's number-range metadata) says about receiving SMS. It reflects
 * the range the number was allocated from, not the carrier it may have been ported to.
 */
const BY_TYPE: Record<string, { capability: Capability; reason: string }> = {
  MOBILE: { capability: 'likely', reason: 'a mobile number range: mobile lines receive SMS' },
  FIXED_LINE_OR_MOBILE: {
    capability: 'possible',
    reason:
      'this country numbers mobile and fixed lines from the same ranges (e.g. US, CA), so the line type cannot be told offline',
  },
  VOIP: { capability: 'possible', reason: 'a VoIP range: whether it receives SMS depends on the VoIP provider' },
  PERSONAL_NUMBER: {
    capability: 'possible',
    reason: 'a personal (follow-me) number: SMS depends on where it is forwarded',
  },
  FIXED_LINE: {
    capability: 'unlikely',
    reason: 'a fixed-line range: most landlines cannot receive SMS (some carriers read texts aloud)',
  },
  TOLL_FREE: { capability: 'unlikely', reason: 'a toll-free range: only text-enabled toll-free numbers receive SMS' },
  PAGER: { capability: 'unlikely', reason: 'a pager range: pagers do not take standard SMS' },
  PREMIUM_RATE: { capability: 'no', reason: 'a premium-rate range: not a subscriber line for SMS' },
  SHARED_COST: { capability: 'no', reason: 'a shared-cost service range: not a subscriber line for SMS' },
  UAN: { capability: 'no', reason: 'a universal access number (company switchboard): not a subscriber line for SMS' },
  VOICEMAIL: { capability: 'no', reason: 'a voicemail access range' },
}

interface Input {
  number: string
  country?: string
}

export default defineHandler<Input>({
  slug: 'sms-number-validator',
  description:
    'Check offline whether a phone number can receive SMS: validity, line type (mobile, fixed-line-or-mobile, VoIP, landline, toll-free, ...) from libphonenumber metadata, E.164 form and country. Carrier-agnostic: no network look-up, so ported numbers are judged by their original range.',
  inputSchema: {
    type: 'object',
    required: ['number'],
    additionalProperties: false,
    properties: {
      number: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        description: 'The phone number as written, e.g. "+44 7400 123456" or "(415) 555-0132"; at most 64 characters.',
      },
      country: {
        type: 'string',
        pattern: '^[A-Za-z]{2}$',
        description: 'ISO 3166-1 alpha-2 country assumed for numbers without an international prefix, e.g. "GB".',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'input, parsed (false when the text is not a phone number), valid, e164, country, callingCode, lineType (libphonenumber type: MOBILE, FIXED_LINE_OR_MOBILE, VOIP, FIXED_LINE, TOLL_FREE, PERSONAL_NUMBER, PAGER, PREMIUM_RATE, SHARED_COST, UAN, VOICEMAIL, or null), sms { capability ("likely" | "possible" | "unlikely" | "no" | "unknown"), canReceive (true for likely, false for unlikely/no and invalid numbers, null when it cannot be told), reason }, reason (why the number is invalid, else null), source. No carrier or HLR look-up is made.',
    schema: {
      type: 'object',
      properties: {
        input: { type: 'string' },
        parsed: { type: 'boolean' },
        valid: { type: 'boolean' },
        e164: { type: ['string', 'null'] },
        country: { type: ['string', 'null'] },
        callingCode: { type: ['string', 'null'] },
        lineType: { type: ['string', 'null'] },
        sms: {
          type: 'object',
          properties: {
            capability: { type: 'string' },
            canReceive: { type: ['boolean', 'null'] },
            reason: { type: 'string' },
          },
        },
        reason: { type: ['string', 'null'] },
        source: { type: 'string' },
      },
    },
    example: {
      input: '+44 7400 123456',
      parsed: true,
      valid: true,
      e164: '+447400123456',
      country: 'GB',
      callingCode: '44',
      lineType: 'MOBILE',
      sms: { capability: 'likely', canReceive: true, reason: 'a mobile number range: mobile lines receive SMS' },
      reason: null,
      source: 'libphonenumber-js (max metadata), offline',
    },
  },
  example: { number: '+44 7400 123456' },
  async run(input) {
    // the same library and metadata set (max) as phone-number-validator
    const lib = await import('libphonenumber-js/max')
    const country = input.country?.toUpperCase()
    if (country && !lib.isSupportedCountry(country))
      throw new HandlerInputError('country', `country ${country} is not a supported region`)
    const source = 'libphonenumber-js (max metadata), offline'
    const none = (
      reason: string,
      parsed: boolean,
      partial: { e164?: string; country?: string; callingCode?: string } = {},
    ) => ({
      body: {
        input: input.number,
        parsed,
        valid: false,
        e164: partial.e164 ?? null,
        country: partial.country ?? null,
        callingCode: partial.callingCode ?? null,
        lineType: null,
        sms: { capability: 'no', canReceive: false, reason: 'not a valid phone number' },
        reason,
        source,
      },
    })
    let p
    try {
      p = lib.parsePhoneNumberWithError(input.number, country ? { defaultCountry: country as never } : undefined)
    } catch (err) {
      // INVALID_COUNTRY, NOT_A_NUMBER, TOO_SHORT, TOO_LONG: a "cannot receive" answer, not a 400
      return none(err instanceof lib.ParseError ? err.message : 'NOT_A_NUMBER', false)
    }
    if (!p.isValid()) {
      return none(lib.validatePhoneNumberLength(input.number, country as never) ?? 'NOT_VALID_FOR_REGION', true, {
        e164: p.number,
        country: p.country,
        callingCode: p.countryCallingCode,
      })
    }
    const type = p.getType() ?? null
    const verdict = type ? BY_TYPE[type] : undefined
    const sms = verdict
      ? {
          capability: verdict.capability,
          canReceive:
            verdict.capability === 'likely'
              ? true
              : verdict.capability === 'unlikely' || verdict.capability === 'no'
                ? false
                : null,
          reason: verdict.reason,
        }
      : { capability: 'unknown' as const, canReceive: null, reason: 'the metadata gives no line type for this number' }
    return {
      body: {
        input: input.number,
        parsed: true,
        valid: true,
        e164: p.number,
        country: p.country ?? null,
        callingCode: p.countryCallingCode,
        lineType: type,
        sms,
        reason: null,
        source,
      },
    }
  },
})
