import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { listHandlerSlugs } from '../../../src/pool/handler-registry.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

// The Procfile runs dist/ (npm run build): a declaration or type error there breaks a deploy
// while every test, run from source, still passes.
t.test('the production build compiles, every hosted handler included', async (t) => {
  const outDir = t.testdir({})
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
  const r = await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], {
    cwd: root,
    timeout: 280_000,
  }).then(
    () => ({ ok: true, out: '' }),
    (err: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
  )
  t.ok(r.ok, r.out.slice(0, 4000))
  for (const slug of listHandlerSlugs())
    t.ok(existsSync(path.join(outDir, 'handlers', slug, 'index.js')), `${slug} compiled`)
  t.ok(
    existsSync(path.join(outDir, 'src/start/proxy.js')) && existsSync(path.join(outDir, 'src/pool/worker.js')),
    'the process entries and the pool worker compiled',
  )
})
