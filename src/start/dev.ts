/**
 * `npm start`: the whole platform in one process on one machine (embedded dev mode).
 * Starts the embedded chain when RPC_URL is unset, migrates, seeds, runs web + proxy + worker,
 * writes .tollgate/dev.json and prints what to try next. Ctrl-C stops everything, anvil included.
 * Hosted handlers run in processes the proxy supervises: a handler that crashes ends its own
 * process, never this one (docs/architecture.md, "Hosted handlers").
 */
import './node-version.js' // first: refuses a Node release the dependencies cannot load on
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { startDevnet, type Devnet } from '../chain/devnet.js'
import { createDb } from '../db/create-db.js'
import { ensureDatabase } from '../db/ensure-database.js'
import { migrateToLatest } from '../db/migrate.js'
import { createDeps } from '../deps.js'
import { walletsUnderOtherKeys } from '../services/wallets/rotate-master-key.js'
import { loadConfigOrExit } from './load-config.js'
import { requirePath } from './require-path.js'
import { startDevExtras } from './dev-extras.js'
import { startHandlersRole } from './handlers-role.js'
import { startProxy, startWeb, type Role } from './roles.js'
import { onShutdown, stopWhenOrphaned } from './shutdown.js'
import { startWorkerRole } from './worker-role.js'

const stateDir = path.resolve(process.env.TOLLGATE_STATE_DIR ?? '.tollgate')
mkdirSync(stateDir, { recursive: true })
const devFile = path.join(stateDir, 'dev.json')
const previous = readJson(devFile)
const env: Record<string, string | undefined> = { ...process.env }
const log = (msg: string) => process.stderr.write(`[tollgate] ${msg}\n`)

// Check the environment before starting anything, so a bad variable costs nothing.
loadConfigOrExit(process.env.RPC_URL ? env : { ...env, RPC_URL: 'http://127.0.0.1:8545' })

let devnet: Devnet | undefined
const stops: Array<() => Promise<unknown>> = []
// Ctrl-C and SIGTERM reach this process; a SIGTERM sent only to npm does not (see stopWhenOrphaned)
stopWhenOrphaned(onShutdown(stops, log))

try {
  if (!env.RPC_URL) {
    log('starting the embedded local chain (anvil, chain id 84532)...')
    devnet = await startDevnet({
      port: Number(env.ANVIL_PORT ?? 8545),
      stateFile: path.join(stateDir, 'anvil-state.json'),
    })
    env.RPC_URL = devnet.rpcUrl
    env.RELAYER_PRIVATE_KEYS ??= devnet.accounts.relayer.privateKey
    env.TOLLGATE_RECEIVER_ADDRESS ??= devnet.accounts.receiver.address
    // a seller trying the platform publishes an upstream on this machine (http://127.0.0.1:…):
    // on the embedded chain nothing is public, so loopback and private upstreams are allowed
    env.TOLLGATE_ALLOW_PRIVATE_UPSTREAMS ??= 'true'
  }
  // The dev master key must survive restarts, or wallets created earlier could not be decrypted.
  env.TOLLGATE_MASTER_KEY ??= previous?.masterKey ?? randomBytes(32).toString('hex')
  const config = loadConfigOrExit(env)

  log(`database: preparing ${new URL(config.databaseUrl).pathname.slice(1)}...`)
  await ensureDatabase(config.databaseUrl)
  const migrationDb = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, max: 1 })
  const { results } = await migrateToLatest(migrationDb, config.databaseSchema).finally(() => migrationDb.destroy())
  log(`database: ${results?.length ? `applied ${results.length} migration(s)` : 'up to date'}`)

  const deps = createDeps(config)
  const roles: Role[] = []
  stops.push(async () => {
    for (const r of roles.reverse()) await r.stop()
  })
  stops.push(() => deps.close())
  if (devnet) stops.push(() => devnet!.stop())

  const stranded = await walletsUnderOtherKeys(deps.db, config.masterKey!)
  if (stranded.agents + stranded.funding_wallets > 0) {
    log(
      `warning: ${stranded.agents} agent and ${stranded.funding_wallets} funding wallet key(s) in this database are encrypted under another master key ` +
        `(was ${path.relative(process.cwd(), devFile)} replaced or lost?). Those wallets cannot pay (503) until you start with that key again ` +
        '(restore the old dev.json, or set TOLLGATE_MASTER_KEY), or use a fresh database (DATABASE_URL).',
    )
  }
  // the hint names the credentials file wherever TOLLGATE_STATE_DIR put it, as require() reads it
  const extras = await startDevExtras(deps, devnet, requirePath(devFile, process.cwd()))
  roles.push(await startWorkerRole(deps))
  roles.push(await startWeb(deps))
  // With HANDLERS_URL the proxy sends hosted calls to the handlers role, which runs here too
  // (it only supervises; handler code runs in its processes). Without it the proxy starts its own.
  if (config.handlers.url.length > 0 && config.handlers.listen) roles.push(await startHandlersRole(config))
  roles.push(await startProxy(deps))

  const info = {
    deployment: config.deployment,
    baseUrl: config.baseUrl,
    proxyUrl: config.proxyUrl,
    dashboardUrl: config.dashboardUrl,
    rpcUrl: config.rpcUrl,
    chainId: config.chain.chainId,
    network: config.chain.network,
    usdc: config.chain.usdc.address,
    masterKey: env.TOLLGATE_MASTER_KEY,
    ...(devnet
      ? {
          demoPayer: devnet.accounts.demoPayer,
          relayer: devnet.accounts.relayer.address,
          receiver: devnet.accounts.receiver.address,
        }
      : {}),
    ...extras.info,
  }
  writeFileSync(devFile, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 })
  process.stdout.write(
    [
      '',
      'Tollgate is up (embedded dev mode).',
      `  user API + marketplace  ${config.baseUrl}   (try ${config.baseUrl}/readyz)`,
      `  paid endpoints (proxy)  ${config.proxyUrl}`,
      `  dashboard               ${config.dashboardUrl}`,
      `  chain                   ${config.rpcUrl} (chain id ${config.chain.chainId}${devnet ? ', embedded anvil' : ''})`,
      ...extras.lines.map((l) => `  ${l}`),
      `Development credentials: ${path.relative(process.cwd(), devFile)}`,
      'Press Ctrl-C to stop everything.',
      '',
    ].join('\n'),
  )
} catch (err) {
  log(`start failed: ${(err as Error).message}`)
  for (const stop of stops.reverse()) await stop().catch(() => {})
  await devnet?.stop().catch(() => {})
  process.exit(1)
}

function readJson(file: string): { masterKey?: string } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}
