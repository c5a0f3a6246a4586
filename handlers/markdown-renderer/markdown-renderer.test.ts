import t from 'tap'
import { runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

t.test('renders a standalone styled page titled after the first heading', async (t) => {
  const out = await runInline(handler, { markdown: '# My *Notes*\n\nHello **there**.' })
  t.ok(out.ok)
  if (!out.ok) return
  t.equal(out.result.contentType, 'text/html; charset=utf-8')
  const html = out.result.body as string
  t.match(html, /^<!doctype html>/)
  t.match(html, '<title>My Notes</title>')
  t.match(html, '<style>')
  t.match(html, 'prefers-color-scheme: dark')
  t.match(html, '<strong>there</strong>')
  t.match(html, 'Content-Security-Policy')
})

t.test('explicit title is escaped; dark theme; query-string input', async (t) => {
  const out = await runInline(handler, { markdown: 'text', title: '<b>A & B</b>', theme: 'dark' }, { from: 'query' })
  t.ok(out.ok)
  if (!out.ok) return
  const html = out.result.body as string
  t.match(html, '<title>&#60;b&#62;A &#38; B&#60;/b&#62;</title>')
  t.notMatch(html, 'prefers-color-scheme')
  t.match(html, '--bg:#0d1117')
})

t.test('JSON when the buyer accepts JSON only', async (t) => {
  const out = await runInline(handler, { markdown: 'plain' }, { accept: 'application/json' })
  t.ok(out.ok)
  if (!out.ok) return
  t.match(out.result.body, { title: 'Document', html: /<p>plain<\/p>/ })
})

t.test('strips scripts from the content', async (t) => {
  const out = await runInline(handler, {
    markdown: 'hi <script>alert(1)</script><img src="https://x.example/a.png" onerror="bad()">',
  })
  t.ok(out.ok)
  if (!out.ok) return
  const html = out.result.body as string
  t.notMatch(html, /<script|onerror/)
})

t.test('rejects empty and oversized input', async (t) => {
  t.match(await runInline(handler, { markdown: '' }), { ok: false, status: 400, field: 'markdown' })
  t.match(await runInline(handler, { markdown: 'x'.repeat(500_001) }), { ok: false, status: 400, field: 'markdown' })
  t.match(await runInline(handler, { markdown: 'x', theme: 'neon' }), { ok: false, status: 400, field: 'theme' })
})
