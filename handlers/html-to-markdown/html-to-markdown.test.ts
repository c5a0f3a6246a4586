import t from 'tap'
import { runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

t.test('converts headings, emphasis, links and lists', async (t) => {
  const out = await runInline(handler, {
    html: '<h1>Title</h1><p>Hello <strong>world</strong>, see <a href="https://example.com/a">docs</a>.</p><ul><li>one</li><li>two</li></ul><script>alert(1)</script>',
  })
  t.ok(out.ok)
  if (!out.ok) return
  const md = (out.result.body as { markdown: string }).markdown
  t.match(md, /^# Title\n/)
  t.match(md, 'Hello **world**, see [docs](https://example.com/a).')
  t.match(md, /-\s+one\n-\s+two/)
  t.notMatch(md, 'alert')
})

t.test('setext headings and indented code from query-string input', async (t) => {
  const out = await runInline(
    handler,
    { html: '<h2>Sub</h2><pre><code>x = 1</code></pre>', headingStyle: 'setext', codeBlockStyle: 'indented' },
    { from: 'query' },
  )
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

// Issue #22: tables came out as loose paragraphs ("NameAge\n\nAda36") and <del> was dropped
t.test('converts tables to GitHub-flavoured tables and <del>/<s> to strikethrough', async (t) => {
  const html =
    '<table><thead><tr><th>Name</th><th align="right">Age</th></tr></thead>' +
    '<tbody><tr><td>Ada</td><td align="right">36</td></tr><tr><td>Alan | T.</td><td align="right">41</td></tr></tbody></table>' +
    '<p>Price: <del>$20</del> <s>$18</s> $15</p>'
  const out = await runInline(handler, { html })
  t.ok(out.ok)
  if (!out.ok) return
  const md = (out.result.body as { markdown: string }).markdown
  const rows = md.split('\n').filter((l) => l.startsWith('|'))
  t.same(
    rows.map((r) =>
      r
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim()),
    ),
    [
      ['Name', 'Age'],
      ['---', '---:'],
      ['Ada', '36'],
      ['Alan \\| T.', '41'],
    ],
  )
  t.match(md, 'Price: ~~$20~~ ~~$18~~ $15')
})

t.test('a table without a header row still gets one, so the Markdown is a table', async (t) => {
  const out = await runInline(handler, {
    html: '<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>',
  })
  t.ok(out.ok)
  if (!out.ok) return
  const md = (out.result.body as { markdown: string }).markdown
  const rows = md.split('\n').filter((l) => l.startsWith('|'))
  t.equal(rows.length, 4, md)
  t.match(rows[1], /^\|\s*-+\s*\|\s*-+\s*\|$/)
  t.match(md, /\|\s*a\s*\|\s*b\s*\|/)
})
