import { readFileSync } from 'node:fs'
import t from 'tap'
import { errorCatalogue } from '../../src/errors.js'
import { reasons } from '../../src/x402/reasons.js'

// The catalogue and its documentation must not drift apart (Fastify keeps the same check).
t.test('docs/errors.md lists exactly the catalogue', async (t) => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')
  const rows = new Map([...doc.matchAll(/^\| `([a-z0-9_]+)` \| (\d+) \|/gm)].map((m) => [m[1]!, Number(m[2])]))
  for (const [code, e] of [...Object.entries(errorCatalogue), ...Object.entries(reasons)]) {
    t.equal(rows.get(code), e.status, `${code} documented with status ${e.status}`)
  }
  t.equal(
    rows.size,
    Object.keys(errorCatalogue).length + Object.keys(reasons).length,
    'nothing documented that does not exist',
  )
})
