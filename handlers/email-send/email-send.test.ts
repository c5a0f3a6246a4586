import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'
import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

interface Received {
  user: string | undefined
  mailFrom: string | undefined
  rcptTo: string[]
  mail: ParsedMail
}

/** A local SMTP relay (smtp-server) that needs a login, refuses @blocked.test recipients and records every message, parsed. */
async function smtpStandIn(t: { teardown(fn: () => unknown): void }) {
  const received: Received[] = []
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === 'relay-user' && auth.password === 's3cret:pass') return cb(null, { user: auth.username })
      cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }))
    },
    onRcptTo(address, _session, cb) {
      if (address.address.endsWith('@blocked.test'))
        return cb(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }))
      cb()
    },
    onData(stream, session, cb) {
      simpleParser(stream).then(
        (mail) => {
          received.push({
            user: session.user as string | undefined,
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            mail,
          })
          cb()
        },
        (err: Error) => cb(err),
      )
    },
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.server.address() as { port: number }).port
  return { port, received, url: `smtp://relay-user:${encodeURIComponent('s3cret:pass')}@127.0.0.1:${port}` }
}

const addresses = (a: AddressObject | AddressObject[] | undefined) =>
  a === undefined ? [] : (Array.isArray(a) ? a : [a]).flatMap((x) => x.value.map((v) => v.address))

t.test('against a local SMTP relay', async (t) => {
  const relay = await smtpStandIn(t)
  const providers = { SMTP_URL: relay.url, EMAIL_FROM: 'Tollgate <noreply@tollgate.test>' }
  const run = (input: unknown, from: 'query' | 'body' = 'body') => runInline(handler, input, { providers, from })

  t.test('the example is sent from the operator address, as received by the relay', async (t) => {
    const out = okBody(await run(handler.example))
    t.same(out.accepted, ['jane@example.com'])
    t.same(out.rejected, [])
    t.match(out.messageId, /^<.+@.+>$/)
    t.equal(out.from, 'Tollgate <noreply@tollgate.test>')
    t.equal(out.htmlSanitized, false)
    const got = relay.received.at(-1)!
    t.equal(got.user, 'relay-user', 'logged in with the configured credentials')
    t.equal(got.mailFrom, 'noreply@tollgate.test')
    t.same(got.rcptTo, ['jane@example.com'])
    t.same(addresses(got.mail.from), ['noreply@tollgate.test'])
    t.equal(got.mail.from?.value[0]?.name, 'Tollgate')
    t.same(addresses(got.mail.to), ['jane@example.com'])
    t.equal(got.mail.subject, 'Hello from Tollgate')
    t.equal(got.mail.text?.trim(), 'This message was sent through a pay-per-call endpoint.')
    t.equal(got.mail.html, false, 'text only')
    t.equal(got.mail.messageId, out.messageId, 'the Message-ID reported is the one delivered')
    t.equal(got.mail.attachments.length, 0)
  })

  t.test('Reply-To, cc, bcc and a sanitized HTML body', async (t) => {
    const html =
      '<p>Hi <b>there</b> <a href="https://example.com/x">link</a> <a href="javascript:alert(1)">bad</a></p><script>alert(1)</script><img src="https://tracker.test/p.gif"><style>p{}</style>'
    const out = okBody(
      await run({
        to: ['a@example.com', 'b@example.com'],
        cc: 'c@example.com',
        bcc: ['d@example.com'],
        replyTo: 'buyer@example.org',
        subject: 'Ünïcode subject ✓',
        text: 'plain part',
        html,
      }),
    )
    t.same(out.accepted.sort(), ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com'])
    t.equal(out.htmlSanitized, true)
    const got = relay.received.at(-1)!
    t.same(got.rcptTo.sort(), ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com'])
    t.same(addresses(got.mail.to), ['a@example.com', 'b@example.com'])
    t.same(addresses(got.mail.cc), ['c@example.com'])
    t.same(addresses(got.mail.bcc), [], 'bcc is not in the headers')
    t.same(addresses(got.mail.replyTo), ['buyer@example.org'])
    t.same(addresses(got.mail.from), ['noreply@tollgate.test'], 'the buyer cannot change From')
    t.equal(got.mail.subject, 'Ünïcode subject ✓')
    t.equal(got.mail.text?.trim(), 'plain part')
    const sent = String(got.mail.html)
    t.match(sent, /<p>Hi <b>there<\/b> <a href="https:\/\/example.com\/x">link<\/a>/)
    t.notMatch(sent, /script|javascript|<img|tracker|<style/)
  })

  t.test('some recipients refused: the rest is sent and the refused are listed', async (t) => {
    const out = okBody(await run({ to: ['ok@example.com', 'nobody@blocked.test'], subject: 'partial', text: 'x' }))
    t.same(out.accepted, ['ok@example.com'])
    t.same(out.rejected, ['nobody@blocked.test'])
    t.same(relay.received.at(-1)!.rcptTo, ['ok@example.com'])
  })

  t.test('every recipient refused is 422 on to', async (t) => {
    const before = relay.received.length
    t.match(await run({ to: 'nobody@blocked.test', subject: 's', text: 'x' }), { ok: false, status: 422, field: 'to' })
    t.equal(relay.received.length, before, 'nothing delivered')
  })

  t.test('limits and bad input: 400 (413 for a large body) naming the field', async (t) => {
    const six = Array.from({ length: 6 }, (_, i) => `u${i}@example.com`)
    t.match(await run({ to: six, subject: 's', text: 'x' }), { ok: false, status: 400, field: 'to' })
    t.match(await run({ to: six.slice(0, 3), cc: six.slice(3, 5), bcc: 'z@example.com', subject: 's', text: 'x' }), {
      ok: false,
      status: 400,
      field: 'to',
      message: /at most 5/,
    })
    t.match(await run({ to: 'Jane <jane@example.com>', subject: 's', text: 'x' }), {
      ok: false,
      status: 400,
      field: 'to',
    })
    t.match(await run({ to: 'jane@example.com\r\nBcc: x@evil.test', subject: 's', text: 'x' }), {
      ok: false,
      status: 400,
      field: 'to',
    })
    t.match(await run({ to: [], subject: 's', text: 'x' }), { ok: false, status: 400, field: 'to' })
    t.match(await run({ to: 'jane@example.com', cc: ['not-an-address'], subject: 's', text: 'x' }), {
      ok: false,
      status: 400,
      field: 'cc',
    })
    t.match(await run({ to: 'jane@example.com', replyTo: 'nope', subject: 's', text: 'x' }), {
      ok: false,
      status: 400,
      field: 'replyTo',
    })
    t.match(await run({ to: 'jane@example.com', subject: 'x'.repeat(201), text: 'x' }), {
      ok: false,
      status: 400,
      field: 'subject',
    })
    t.match(await run({ to: 'jane@example.com', subject: 'line\nBcc: x@evil.test', text: 'x' }), {
      ok: false,
      status: 400,
      field: 'subject',
    })
    t.match(await run({ to: 'jane@example.com', subject: '   ', text: 'x' }), {
      ok: false,
      status: 400,
      field: 'subject',
    })
    t.match(await run({ to: 'jane@example.com', subject: 's' }), { ok: false, status: 400, field: 'text' })
    t.match(await run({ to: 'jane@example.com', subject: 's', text: '  ' }), { ok: false, status: 400, field: 'text' })
    t.match(await run({ to: 'jane@example.com', subject: 's', html: '<script>x</script>' }), {
      ok: false,
      status: 400,
      field: 'html',
    })
    t.match(await run({ to: 'jane@example.com', subject: 's', text: 'é'.repeat(60 * 1024) }), {
      ok: false,
      status: 413,
      field: 'text',
    })
    t.match(await run({ to: 'jane@example.com', subject: 's', text: 'x'.repeat(100 * 1024 + 1) }), {
      ok: false,
      status: 400,
      field: 'text',
    })
    t.match(await run({ to: 'jane@example.com', subject: 's', text: 'x', attachments: [{ path: '/etc/passwd' }] }), {
      ok: false,
      status: 400,
      field: 'attachments',
    })
  })

  t.test('a body of exactly 100 KB is accepted', async (t) => {
    const out = okBody(await run({ to: 'big@example.com', subject: 'big', text: 'y'.repeat(100 * 1024) }))
    t.same(out.accepted, ['big@example.com'])
    t.equal(relay.received.at(-1)!.mail.text?.trim().length, 100 * 1024)
  })
})

t.test('relay problems: 503 unconfigured, 502 failed, credentials never echoed', async (t) => {
  await t.rejects(runInline(handler, handler.example, { providers: {} }), {
    code: 'upstream_not_configured',
    message: /SMTP_URL/,
  })
  const relay = await smtpStandIn(t)
  await t.rejects(runInline(handler, handler.example, { providers: { SMTP_URL: relay.url } }), {
    code: 'upstream_not_configured',
    message: /EMAIL_FROM/,
  })
  await t.rejects(
    runInline(handler, handler.example, {
      providers: { SMTP_URL: 'https://relay-user:topsecret@mail.test', EMAIL_FROM: 'a@b.test' },
    }),
    { code: 'upstream_not_configured', message: /smtp:\/\// },
  )

  const badLogin = `smtp://relay-user:wrong-password-xyz@127.0.0.1:${relay.port}`
  const err = await runInline(handler, handler.example, {
    providers: { SMTP_URL: badLogin, EMAIL_FROM: 'noreply@tollgate.test' },
  }).catch((e) => e)
  t.match(err, { code: 'upstream_failed', message: /refused the configured login/ })
  t.notMatch(err.message, /wrong-password-xyz|relay-user|127\.0\.0\.1/)

  const down = await runInline(handler, handler.example, {
    providers: { SMTP_URL: 'smtp://relay-user:another-secret@127.0.0.1:1', EMAIL_FROM: 'noreply@tollgate.test' },
  }).catch((e) => e)
  t.match(down, { code: 'upstream_failed', message: /could not be reached/ })
  t.notMatch(down.message, /another-secret|relay-user/)
})
