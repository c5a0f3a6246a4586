import { providerSetting } from '../_shared/outbound.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  to: string | string[]
  cc?: string | string[]
  bcc?: string | string[]
  replyTo?: string
  subject: string
  text?: string
  html?: string
}

const MAX_RECIPIENTS = 5
const MAX_SUBJECT = 200
const MAX_BODY_BYTES = 100 * 1024
/** A bare address (no display name, no comments): what a buyer means, and nothing that could smuggle headers. */
const ADDRESS =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

/**
 * HTML bodies go through sanitize-html with this allowlist: formatting, links (http, https, mailto)
 * and tables survive; scripts, styles, forms, iframes and images (remote images are tracking
 * pixels) are dropped.
 */
const HTML_TAGS = [
  'a',
  'b',
  'blockquote',
  'br',
  'code',
  'div',
  'em',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'i',
  'li',
  'ol',
  'p',
  'pre',
  's',
  'small',
  'span',
  'strong',
  'sub',
  'sup',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'u',
  'ul',
]

const addressList = {
  anyOf: [
    { type: 'string', maxLength: 254 },
    { type: 'array', items: { type: 'string', maxLength: 254 }, minItems: 1, maxItems: MAX_RECIPIENTS },
  ],
}

/** Sends one e-mail through the operator's SMTP relay, always from the operator's address. */
export default defineHandler<Input>({
  slug: 'email-send',
  // mail leaves through the operator's relay in its name: a ceiling for the whole platform
  rateLimit: { requests: 60, perSeconds: 60 },
  description: `Send one e-mail (plain text and/or sanitized HTML, up to ${MAX_RECIPIENTS} recipients, no attachments) through the operator's SMTP relay, from the operator's sender address; you may set Reply-To.`,
  providers: ['SMTP_URL', 'EMAIL_FROM'],
  timeoutMs: 30_000,
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['to', 'subject'],
    properties: {
      to: {
        ...addressList,
        description: `Recipient address, or a list; to + cc + bcc together at most ${MAX_RECIPIENTS}. Bare addresses only (jane@example.com).`,
      },
      cc: { ...addressList, description: 'Copy recipients (counted in the limit).' },
      bcc: { ...addressList, description: 'Blind-copy recipients (counted in the limit; not shown to the others).' },
      replyTo: {
        type: 'string',
        maxLength: 254,
        description: 'Where replies should go (the From is always the operator’s sender address).',
      },
      subject: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_SUBJECT,
        description: `Subject line, 1–${MAX_SUBJECT} characters, one line.`,
      },
      text: {
        type: 'string',
        maxLength: MAX_BODY_BYTES,
        description: 'Plain-text body, at most 100 KB (UTF-8). Give text, html or both.',
      },
      html: {
        type: 'string',
        maxLength: MAX_BODY_BYTES,
        description:
          'HTML body, at most 100 KB; sanitized before sending (formatting, links and tables kept; scripts, styles, forms, iframes and images removed).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      "messageId (the Message-ID the relay was given), from (the operator sender), accepted[] and rejected[] (recipient addresses as the relay answered them), response (the relay's final SMTP reply), htmlSanitized (true when the HTML body was changed by sanitizing). " +
      'Every recipient refused is a 422 on "to"; a relay that cannot be reached or refuses the sender is a 502 (the buyer is not charged).',
    schema: {
      type: 'object',
      properties: {
        messageId: { type: 'string' },
        from: { type: 'string' },
        accepted: { type: 'array', items: { type: 'string' } },
        rejected: { type: 'array', items: { type: 'string' } },
        response: { type: ['string', 'null'] },
        htmlSanitized: { type: 'boolean' },
      },
    },
    example: {
      messageId: '<7b8f46c7-6a85-8af9-239b-aeaebc1d29f4@tollgate.com>',
      from: 'Tollgate <noreply@tollgate.com>',
      accepted: ['jane@example.com'],
      rejected: [],
      response: '250 OK: message queued',
      htmlSanitized: false,
    },
  },
  example: {
    to: 'jane@example.com',
    subject: 'Hello from Tollgate',
    text: 'This message was sent through a pay-per-call endpoint.',
  },
  // it acts outside (mail sent, a link created, a request sent): recorded before it runs
  effects: true,
  async run(input, ctx) {
    const smtpUrl = providerSetting(ctx, 'SMTP_URL', 'sending e-mail')
    const from = providerSetting(ctx, 'EMAIL_FROM', 'sending e-mail')
    if (!/^smtps?:\/\//i.test(smtpUrl))
      throw new HandlerUpstreamError('upstream_not_configured', 'SMTP_URL must be an smtp:// or smtps:// URL')

    const list = (field: 'to' | 'cc' | 'bcc') => {
      const raw = input[field]
      const items = raw === undefined ? [] : Array.isArray(raw) ? raw : raw.split(',')
      return items.map((a, i) => {
        const addr = a.trim()
        if (!ADDRESS.test(addr))
          throw new HandlerInputError(
            field,
            `${field}${Array.isArray(raw) ? `[${i}]` : ''}: "${addr.slice(0, 80)}" is not a bare e-mail address`,
          )
        return addr
      })
    }
    const to = list('to')
    const cc = list('cc')
    const bcc = list('bcc')
    if (to.length === 0) throw new HandlerInputError('to', 'to needs at least one address')
    if (to.length + cc.length + bcc.length > MAX_RECIPIENTS)
      throw new HandlerInputError('to', `at most ${MAX_RECIPIENTS} recipients in to, cc and bcc together`)
    const replyTo = input.replyTo?.trim()
    if (replyTo !== undefined && !ADDRESS.test(replyTo))
      throw new HandlerInputError('replyTo', 'replyTo must be a bare e-mail address')
    const subject = input.subject.trim()
    if (!subject) throw new HandlerInputError('subject', 'subject must not be blank')
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(subject))
      throw new HandlerInputError('subject', 'subject must be one line without control characters')
    if (input.text === undefined && input.html === undefined)
      throw new HandlerInputError('text', 'give text, html or both')
    if (input.text !== undefined && !input.text.trim() && (input.html === undefined || !input.html.trim()))
      throw new HandlerInputError('text', 'the message body must not be empty')
    for (const f of ['text', 'html'] as const) {
      const v = input[f]
      if (v !== undefined && Buffer.byteLength(v, 'utf8') > MAX_BODY_BYTES)
        throw new HandlerInputError(f, `${f} must be at most 100 KB (UTF-8)`, 413)
    }

    let html: string | undefined
    let htmlSanitized = false
    if (input.html !== undefined) {
      const { default: sanitizeHtml } = await import('sanitize-html')
      html = sanitizeHtml(input.html, {
        allowedTags: HTML_TAGS,
        allowedAttributes: { a: ['href', 'title'], td: ['colspan', 'rowspan'], th: ['colspan', 'rowspan'] },
        allowedSchemes: ['http', 'https', 'mailto'],
        disallowedTagsMode: 'discard',
      })
      htmlSanitized = html !== input.html
      if (!html.trim() && (input.text === undefined || !input.text.trim()))
        throw new HandlerInputError('html', 'html is empty once sanitized, and there is no text')
    }

    const { default: nodemailer } = await import('nodemailer')
    const transport = nodemailer.createTransport({
      url: smtpUrl,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 15_000,
      disableFileAccess: true,
      disableUrlAccess: true,
    })
    try {
      const info = await transport.sendMail({
        from,
        to,
        cc: cc.length ? cc : undefined,
        bcc: bcc.length ? bcc : undefined,
        replyTo,
        subject,
        text: input.text,
        html,
        // no attachments, and nothing the message could pull in from files or URLs
        attachments: [],
        disableFileAccess: true,
        disableUrlAccess: true,
      })
      const plain = (xs: Array<string | { address: string }> | undefined) =>
        (xs ?? []).map((x) => (typeof x === 'string' ? x : x.address))
      return {
        body: {
          messageId: info.messageId,
          from,
          accepted: plain(info.accepted),
          rejected: plain(info.rejected),
          response: typeof info.response === 'string' ? info.response : null,
          htmlSanitized,
        },
      }
    } catch (err) {
      // nodemailer's messages may quote the relay URL or the login: only codes go to the buyer
      const e = err as { code?: string; responseCode?: number; rejected?: Array<string | { address: string }> }
      if (e.code === 'EENVELOPE' && Array.isArray(e.rejected) && e.rejected.length > 0) {
        throw new HandlerInputError(
          'to',
          `the relay refused every recipient${e.responseCode ? ` (SMTP ${e.responseCode})` : ''}`,
          422,
        )
      }
      const what =
        e.code === 'EAUTH'
          ? 'refused the configured login'
          : e.code === 'ECONNECTION' || e.code === 'ESOCKET' || e.code === 'ETIMEDOUT' || e.code === 'EDNS'
            ? 'could not be reached'
            : 'refused the message'
      throw new HandlerUpstreamError(
        'upstream_failed',
        `the SMTP relay ${what}${e.responseCode ? ` (SMTP ${e.responseCode})` : e.code ? ` (${e.code})` : ''}`,
      )
    } finally {
      transport.close()
    }
  },
})
