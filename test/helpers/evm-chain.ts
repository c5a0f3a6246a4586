import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  http,
  parseEther,
  type Abi,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Devnet } from '../../src/chain/devnet.js'

/** Clients on a devnet for the evm-* handler tests: public, anvil test actions, and a funded fresh account. */
export async function evmClients(devnet: Devnet) {
  const transport = http(devnet.rpcUrl)
  const pub = createPublicClient({ chain: devnet.chain, transport, pollingInterval: 50 })
  const test = createTestClient({ chain: devnet.chain, mode: 'anvil', transport })
  const account = privateKeyToAccount(generatePrivateKey())
  await test.setBalance({ address: account.address, value: parseEther('1000') })
  const wallet = createWalletClient({ account, chain: devnet.chain, transport })
  return { pub, test, wallet, account }
}

export type Compiled = Record<string, { abi: Abi; bytecode: Hex; deployedBytecode: Hex }>

/** Where compiled contracts are kept between test files and runs, keyed by the compiler input and solc's version. */
const SOLC_CACHE = fileURLToPath(new URL('../../node_modules/.cache/tollgate-solc/', import.meta.url))
// solc (a 9 MB emscripten build) is loaded only on a cache miss; its package version names the compiler
const require = createRequire(import.meta.url)
const SOLC_VERSION = (require('solc/package.json') as { version: string }).version

/**
 * Compiles Solidity sources (name → text) with the solc package; every contract of every source.
 * The output is cached on disk (2 s of solc a file, in about 20 files): the same input to the same
 * compiler gives the same bytecode, so nothing a test deploys changes.
 */
export function compileSolidity(sources: Record<string, string>): Compiled {
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries(Object.entries(sources).map(([k, v]) => [k, { content: v }])),
    settings: {
      evmVersion: 'cancun',
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const json = JSON.stringify(input)
  const file = join(SOLC_CACHE, `${createHash('sha256').update(`${SOLC_VERSION}\n${json}`).digest('hex')}.json`)
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Compiled
  const compiled = compileUncached(json)
  mkdirSync(SOLC_CACHE, { recursive: true })
  // written whole under another name, then renamed: a parallel test file never reads half of it
  const partial = `${file}.${process.pid}.tmp`
  writeFileSync(partial, JSON.stringify(compiled))
  renameSync(partial, file)
  return compiled
}

function compileUncached(json: string): Compiled {
  const solc = require('solc') as { compile(input: string): string }
  const out = JSON.parse(solc.compile(json))
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error')
  if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'))
  const all: Compiled = {}
  for (const file of Object.keys(out.contracts)) {
    for (const [name, c] of Object.entries(out.contracts[file] as Record<string, any>)) {
      all[name] = {
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      }
    }
  }
  return all
}

/** Deploys a compiled contract from `wallet` and waits for it. */
export async function deploy(
  clients: Awaited<ReturnType<typeof evmClients>>,
  c: { abi: Abi; bytecode: Hex },
  args: unknown[] = [],
): Promise<Address> {
  const hash = await clients.wallet.deployContract({ abi: c.abi, bytecode: c.bytecode, args })
  const r = await clients.pub.waitForTransactionReceipt({ hash })
  if (r.status !== 'success' || !r.contractAddress) throw new Error('deployment failed')
  return r.contractAddress
}

/** Sends a contract write from `wallet`, waits and checks it succeeded; returns the receipt. */
export async function write(
  clients: Awaited<ReturnType<typeof evmClients>>,
  address: Address,
  abi: Abi,
  functionName: string,
  args: unknown[] = [],
) {
  const hash = await clients.wallet.writeContract({
    address,
    abi,
    functionName,
    args,
    chain: clients.wallet.chain,
    account: clients.account,
  })
  const r = await clients.pub.waitForTransactionReceipt({ hash })
  if (r.status !== 'success') throw new Error(`${functionName} reverted`)
  return r
}

/**
 * A stand-in JSON-RPC node on 127.0.0.1 answering with `answer(method, params)`; `calls` records
 * what it received. Returning undefined answers with HTTP 500 and a text body.
 */
export async function rpcStandIn(
  answer: (method: string, params: unknown[]) => unknown | { raw: string; status?: number },
) {
  const calls: Array<{ method: string; params: unknown[] }> = []
  const server: Server = createServer((req, res) => {
    let data = ''
    req.on('data', (c) => (data += c))
    req.on('end', () => {
      const body = JSON.parse(data) as { id: number; method: string; params: unknown[] }
      calls.push({ method: body.method, params: body.params })
      const a = answer(body.method, body.params) as any
      if (a && typeof a === 'object' && 'raw' in a) {
        res.writeHead(a.status ?? 200, { 'content-type': 'text/plain' })
        res.end(a.raw)
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: a }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}/rpc-key-secret`,
    calls,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
