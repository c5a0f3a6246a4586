/**
 * Compiles the dev chain's contracts with the solc npm package (no network, no Foundry) and
 * writes artifacts.json beside this file. The artifact is committed so that starting a devnet
 * never needs the compiler. Run: `npm run contracts:build`.
 *
 * Permit2 is compiled from its published source: `@uniswap/v4-periphery` (a devDependency) ships
 * it under lib/permit2 (MIT, Uniswap Labs) with solmate (AGPL-3.0-only, for ERC20 and
 * SafeTransferLib); both licence texts are kept in PERMIT2-LICENSES.txt beside this file. Its
 * exact `pragma solidity 0.8.17` is read as `^0.8.17` (the only change), so the project's solc
 * compiles it.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'

const here = dirname(fileURLToPath(import.meta.url))

/** Contract name → source file; each file holds exactly that contract. */
const CONTRACTS = {
  TestUSDC: 'TestUSDC.sol',
  Multicall3: 'Multicall3.sol',
  DeferredPaymentEscrow: 'DeferredPaymentEscrow.sol',
  X402UptoPermit2Proxy: 'X402UptoPermit2Proxy.sol',
  X402BatchSettlement: 'X402BatchSettlement.sol',
  ERC3009DepositCollector: 'ERC3009DepositCollector.sol',
  Permit2DepositCollector: 'Permit2DepositCollector.sol',
  Permit2: 'permit2/src/Permit2.sol',
} as const

/** Where Permit2's published source and its solmate are (import paths `permit2/…`, `solmate/…`). */
function permit2Root(): string {
  const pkg = createRequire(import.meta.url).resolve('@uniswap/v4-periphery/package.json')
  return join(dirname(pkg), 'lib', 'permit2')
}

/** Reads an imported file of Permit2 (or solmate) from the npm package. */
function readImport(path: string): { contents: string } | { error: string } {
  const root = permit2Root()
  let file: string | undefined
  if (path.startsWith('permit2/')) file = join(root, path.slice('permit2/'.length))
  else if (path.startsWith('solmate/')) file = join(root, 'lib', 'solmate', path.slice('solmate/'.length))
  if (!file) return { error: `unknown import ${path}` }
  try {
    return { contents: readFileSync(file, 'utf8').replace(/pragma solidity 0\.8\.17;/, 'pragma solidity ^0.8.17;') }
  } catch (err) {
    return { error: (err as Error).message }
  }
}

/** Pinned so the artifact does not change with the compiler's default, and anvil runs it. */
const EVM_VERSION = 'cancun'

interface SolcError {
  severity: 'error' | 'warning' | 'info'
  formattedMessage: string
}
interface SolcContract {
  abi: unknown[]
  evm: { bytecode: { object: string }; deployedBytecode: { object: string } }
}
interface SolcOutput {
  errors?: SolcError[]
  contracts?: Record<string, Record<string, SolcContract>>
}

export interface ContractArtifact {
  abi: unknown[]
  bytecode: `0x${string}`
  deployedBytecode: `0x${string}`
}

export interface ArtifactsFile {
  compiler: string
  evmVersion: string
  contracts: Record<keyof typeof CONTRACTS, ContractArtifact>
}

/** One solc standard-JSON run; throws with all compiler errors. */
function compile(sources: Record<string, { content: string }>, settings: Record<string, unknown>): SolcOutput {
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      ...settings,
      evmVersion: EVM_VERSION,
      // No metadata hash: the bytecode then depends only on the source, so rebuilding an
      // unchanged contract leaves the committed artifact byte-identical.
      metadata: { bytecodeHash: 'none', appendCBOR: false },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: readImport })) as SolcOutput
  const problems = (output.errors ?? []).filter((e) => e.severity === 'error')
  if (problems.length > 0) {
    throw new Error(`solc failed:\n${problems.map((e) => e.formattedMessage).join('\n')}`)
  }
  for (const w of (output.errors ?? []).filter((e) => e.severity === 'warning')) {
    process.stderr.write(w.formattedMessage + '\n')
  }
  return output
}

/** Compiles every contract and returns the artifact object; throws with all compiler errors. */
export function compileContracts(): ArtifactsFile {
  // Permit2 as it is published: via IR, 1,000,000 optimizer runs (its foundry.toml); the others as before
  const ours = Object.values(CONTRACTS).filter((f) => !f.startsWith('permit2/'))
  const output = compile(
    Object.fromEntries(ours.map((file) => [file, { content: readFileSync(join(here, file), 'utf8') }])),
    { optimizer: { enabled: true, runs: 200 } },
  )
  const permit2 = readImport(CONTRACTS.Permit2)
  if ('error' in permit2) throw new Error(permit2.error)
  const p2 = compile(
    { [CONTRACTS.Permit2]: { content: permit2.contents } },
    { optimizer: { enabled: true, runs: 1_000_000 }, viaIR: true },
  )
  output.contracts = { ...output.contracts, ...p2.contracts }

  const contracts = {} as ArtifactsFile['contracts']
  for (const [name, file] of Object.entries(CONTRACTS) as [keyof typeof CONTRACTS, string][]) {
    const c = output.contracts?.[file]?.[name]
    if (!c) throw new Error(`solc produced no output for ${name} in ${file}`)
    contracts[name] = {
      abi: c.abi,
      bytecode: `0x${c.evm.bytecode.object}`,
      deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
    }
  }
  return { compiler: solc.version(), evmVersion: EVM_VERSION, contracts }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const artifacts = compileContracts()
  const out = join(here, 'artifacts.json')
  writeFileSync(out, JSON.stringify(artifacts, null, 2) + '\n')
  for (const [name, a] of Object.entries(artifacts.contracts)) {
    process.stdout.write(`${name}: ${(a.deployedBytecode.length - 2) / 2} bytes runtime\n`)
  }
  process.stdout.write(`wrote ${out} (solc ${artifacts.compiler})\n`)
}
