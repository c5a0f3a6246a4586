import t from 'tap'
import { okBody, runInline } from '../../test/helpers/handler-harness.js'
import handler from './index.js'

type Cand = { iso639_1: string; iso639_3: string; name: string; confidence: number }
type Body = { language: Cand | null; candidates: Cand[]; reliable: boolean }
const detect = async (input: Record<string, unknown>, from: 'query' | 'body' = 'body') =>
  okBody<Body>(await runInline(handler, input, { from }))

t.test('known languages', async (t) => {
  const cases: [string, string, string][] = [
    ['The quick brown fox jumps over the lazy dog while the farmer watches from the porch.', 'en', 'eng'],
    ['Le renard brun rapide saute par-dessus le chien paresseux pendant que le fermier regarde.', 'fr', 'fra'],
    ['Der schnelle braune Fuchs springt über den faulen Hund, während der Bauer zuschaut.', 'de', 'deu'],
    ['El rápido zorro marrón salta sobre el perro perezoso mientras el granjero mira.', 'es', 'spa'],
    ['Быстрая коричневая лиса прыгает через ленивую собаку, пока фермер смотрит.', 'ru', 'rus'],
  ]
  for (const [text, iso1, iso3] of cases) {
    const r = await detect({ text })
    t.equal(r.language?.iso639_1, iso1, text)
    t.equal(r.language?.iso639_3, iso3)
    t.ok(r.language!.confidence > 0 && r.language!.confidence <= 1)
    t.ok(r.reliable)
  }
})

t.test('top-N and restriction; query-string input', async (t) => {
  const r = await detect(
    { text: 'Ceci est une phrase en français, assez longue pour être reconnue.', top: '2' },
    'query',
  )
  t.ok(r.candidates.length <= 2 && r.candidates.length >= 1)
  t.equal(r.language?.name, 'French')
  const only = await detect({
    text: 'Ceci est une phrase en français, assez longue pour être reconnue.',
    only: ['en', 'de'],
  })
  t.not(only.language?.iso639_1, 'fr')
  const one = await detect({ text: 'hello world and everyone in it', top: 1 })
  t.equal(one.candidates.length, 1)
})

t.test('undetermined text gives no language', async (t) => {
  const r = await detect({ text: '12345 !!! ???' })
  t.equal(r.language, null)
  t.equal(r.reliable, false)
})

t.test('rejects invalid input naming the field', async (t) => {
  t.match(await runInline(handler, { text: '' }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'x'.repeat(100_001) }), { ok: false, status: 400, field: 'text' })
  t.match(await runInline(handler, { text: 'hello', top: 11 }), { ok: false, status: 400, field: 'top' })
  t.match(await runInline(handler, { text: 'hello', only: ['english'] }), { ok: false, status: 400, field: 'only.0' })
})
