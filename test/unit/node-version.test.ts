import { execFile } from 'node:child_process'
import t from 'tap'
import { nodeVersionProblem } from '../../src/start/node-version.js'

t.test('the Node releases Tollgate runs on: 20.19+ and 22+', async (t) => {
  for (const v of ['20.19.0', '20.20.2', '22.0.0', '22.12.1', '24.3.0']) t.equal(nodeVersionProblem(v), undefined, v)
  for (const v of ['18.20.4', '20.10.0', '20.18.3', '21.7.3'])
    t.match(nodeVersionProblem(v), /needs Node 20\.19 or later/, v)
})

t.test('an entry point on an older Node says so before any dependency fails to load', async (t) => {
  // an old Node 20 cannot require() ES modules; pretend to be one, and import the web role's entry
  const script = "Object.defineProperty(process.versions, 'node', { value: '20.18.0' }); import('./src/start/web.ts')"
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      ['--no-experimental-require-module', '--import', 'tsx', '-e', script],
      { env: { ...process.env, DATABASE_URL: '' } },
      (err, _out, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    ),
  )
  t.equal(r.code, 1)
  t.match(r.stderr, 'tollgate: Node 20.18.0 cannot run Tollgate')
  t.notMatch(r.stderr, 'ERR_REQUIRE_ESM', 'not the loader error of a dependency')
})
