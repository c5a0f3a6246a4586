import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

const html = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<{ html: string }>(await runInline(handler, input, { from })).html

t.test('renders Markdown to HTML', async (t) => {
  const h = await html({
    markdown: '# Title\n\nSome **bold** and [a link](https://example.com).\n\n```js\nlet x = 1\n```',
  })
  t.match(h, '<h1>Title</h1>')
  t.match(h, '<strong>bold</strong>')
  t.match(h, '<a href="https://example.com">a link</a>')
  t.match(h, '<code class="language-js">')
})

t.test('GFM tables and strikethrough; query-string booleans', async (t) => {
  const h = await html(
    { markdown: '| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~\nnext', gfm: 'true', breaks: 'true' },
    'query',
  )
  t.match(h, '<table>')
  t.match(h, '<del>old</del><br')
  const plain = await html({ markdown: '~~old~~', gfm: 'false' }, 'query')
  t.notMatch(plain, '<del>')
})

t.test('sanitizes hostile HTML and URLs', async (t) => {
  const h = await html({
    markdown:
      '<script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n\n[click](javascript:alert(3))\n\n<a href="https://ok.example" onclick="x()">ok</a>',
  })
  t.notMatch(h, /<script/i)
  t.notMatch(h, /onerror|onclick/i)
  t.notMatch(h, /javascript:/i)
  t.match(h, 'https://ok.example')
})

t.test('rejects empty, oversized and wrongly typed input', async (t) => {
  t.match(await runInline(handler, { markdown: '' }), { ok: false, status: 400, field: 'markdown' })
  t.match(await runInline(handler, { markdown: 'x'.repeat(500_001) }), { ok: false, status: 400, field: 'markdown' })
  t.match(await runInline(handler, { markdown: 'x', gfm: 'yes' }), { ok: false, status: 400, field: 'gfm' })
})
