/**
 * `tollgate search`, `tollgate marketplace list --search`, list prices, `show` by name, and the
 * example listings kept out of the way, against a running web app over the hosted endpoints.
 */
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { runCli, type Io } from '../../../src/cli/main.js'
import { buildWebApp } from '../../../src/http/web-app.js'
import { syncCatalog } from '../../../src/services/marketplace/sync-catalog.js'
import { freePort, startTestPlatform } from '../../helpers/platform.js'

const platform = await startTestPlatform(t)
await syncCatalog(platform.deps)
const web = await buildWebApp(platform.deps, { logger: false })
const port = await freePort()
await web.listen({ host: '127.0.0.1', port })
t.teardown(() => web.close())
const env = { TOLLGATE_API_URL: `http://127.0.0.1:${port}` }
const hashUrl = `${platform.proxyUrl}/tollgate/toolbox/hash-generator`

async function cli(...args: string[]) {
  const out: Buffer[] = []
  const err: string[] = []
  const io: Io = {
    stdout: (c) => out.push(Buffer.from(c)),
    stderr: (l) => err.push(l),
    env,
    home: mkdtempSync(path.join(os.tmpdir(), 'tg-search-')),
  }
  const code = await runCli(args, io)
  return { code, out: Buffer.concat(out).toString(), err: err.join('') }
}

t.test('tollgate search <words>: endpoints with price, methods and the command that pays', async (t) => {
  const r = await cli('search', 'hash')
  t.equal(r.code, 0, r.err)
  const lines = r.out.split('\n')
  t.match(lines[0], /^tollgate\/toolbox\/hash-generator {2}0\.001 USDC {2}GET\|POST$/, 'first, priced')
  t.match(r.out, new RegExp(`^ {4}tollgate fetch ${hashUrl.replace(/[.]/g, '\\.')}$`, 'm'), 'the command that pays')
  t.match(r.err, /\d+ endpoints?/)
  const json = await cli('search', 'hash', '--json')
  t.equal(JSON.parse(json.out).items[0].url, hashUrl)
  const same = await cli('marketplace', 'list', '--search', 'hash')
  t.equal(same.code, 0, same.err)
  t.equal(same.out, r.out, 'marketplace list --search shows the same')
  const paged = await cli('search', 'wallet', '--limit', '1')
  t.match(paged.err, /next page: tollgate search wallet --cursor [A-Za-z0-9_-]+/)
  const cheap = await cli('search', 'wallet', '--max-price', '0.001', '--namespace', 'tollgate', '--json')
  t.notOk(
    JSON.parse(cheap.out).items.some((i: { service: string }) => i.service === 'wallet-score'),
    '--max-price',
  )
  t.equal((await cli('search')).code, 1, 'no words: usage error')
  const bad = await cli('search', 'x', '--max-price', 'lots')
  t.equal(bad.code, 1)
  t.match(bad.err, /--max-price is a USDC amount/)
})

t.test('example listings: hidden unless asked, marked, never offered as runnable', async (t) => {
  const hidden = await cli('search', 'weather')
  t.notMatch(hidden.out, /weatherwise/i, 'not in search by default')
  const shown = await cli('search', 'weather', '--include-examples', '--network', 'base')
  t.match(shown.out, /\(example\)/)
  t.notMatch(shown.out, /tollgate fetch https:\/\/[^\s]*\.example/, 'no runnable command for it')
  t.match(shown.out, /not callable/)
  const list = await cli('marketplace', 'list', '--network', 'base')
  t.notMatch(list.out, /\(example\)/)
  t.match(list.err, /\d+ example entr(y|ies) hidden \(--include-examples\)/)
  const all = await cli('marketplace', 'list', '--network', 'base', '--include-examples')
  t.match(all.out, /WeatherWise \(example\)/)
  const show = await cli('marketplace', 'show', 'example-weatherwise', '--network', 'base')
  t.equal(show.code, 0, show.err)
  t.match(show.out, /nothing here is callable/)
  t.notMatch(show.out, /tollgate fetch/)
})

t.test('marketplace list shows prices; show takes a name as well as an id', async (t) => {
  const list = await cli('marketplace', 'list')
  t.equal(list.code, 0, list.err)
  t.match(list.out, /Tollgate Toolbox {2}\[Utilities\] {2}\d+ endpoints {2}0\.001 USDC/)
  t.match(list.out, /Wallet Behavior Score {2}\[Crypto\] {2}\d+ endpoints? {2}0\.01 USDC/)
  for (const ref of ['Tollgate Toolbox', 'tollgate toolbox', 'toolbox', 'tollgate/toolbox']) {
    const r = await cli('marketplace', 'show', ref)
    t.equal(r.code, 0, `${ref}: ${r.err}`)
    t.match(r.out, /^Tollgate Toolbox {2}\(/, `show ${ref}`)
    t.match(r.out, new RegExp(`tollgate fetch ${hashUrl.replace(/[.]/g, '\\.')}`))
  }
  const missing = await cli('marketplace', 'show', 'nuweather')
  t.equal(missing.code, 3)
  t.match(missing.err + missing.out, /nuweather not found/)
})
