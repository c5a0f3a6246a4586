import t from 'tap'
import { runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

t.test('converts headings, emphasis, links and lists', async (t) => {
  const out = await runInline(handler, { html: '<h1>Title</h1><p>Hello <strong>world</strong>, see <a href="https://example.com/a">docs</a>.</p><ul><li>one</li><li>two</li></ul><script>alert(1)</script>' })
  t.ok(out.ok)
  if (!out.ok) return
  const md = (out.result.body as { markdown: string }).markdown
  t.match(md, /^# Title\n/)
  t.match(md, 'Hello **world**, see [docs](https://example.com/a).')
  t.match(md, /-\s+one\n-\s+two/)
  t.notMatch(md, 'alert')
})

t.test('setext headings and indented code from query-string input', async (t) => {
  const out = await runInline(handler, { html: '<h2>Sub</h2><pre><code>x = 1</code></pre>', headingStyle: 'setext', codeBlockStyle: 'indented' }, { from: 'query' })
  t.ok(out.ok)
  if (!out.ok) return
  const md = (out.result.body as { markdown: string }).markdown
  t.match(md, 'Sub\n---')
  t.match(md, '    x = 1')
})

t.test('rejects empty, oversized and malformed input naming the field', async (t) => {
  const empty = await runInline(handler, { html: '' })
  t.match(empty, { ok: false, status: 400, field: 'html' })
  const big = await runInline(handler, { html: 'a'.repeat(1_000_001) })
  t.match(big, { ok: false, status: 400, field: 'html' })
  const style = await runInline(handler, { html: '<p>x</p>', headingStyle: 'fancy' })
  t.match(style, { ok: false, status: 400, field: 'headingStyle' })
  const missing = await runInline(handler, {})
  t.match(missing, { ok: false, status: 400, field: 'html' })
})
