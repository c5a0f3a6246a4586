/**
 * Compiles the dev chain's contracts with the solc npm package (no network, no Foundry) and
 * writes artifacts.json beside this file. The artifact is committed so that starting a devnet
 * never needs the compiler. Run: `npm run contracts:build`.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'

const here = dirname(fileURLToPath(import.meta.url))

/** Contract name → source file; each file holds exactly that contract. */
const CONTRACTS = {
  TestUSDC: 'TestUSDC.sol',
  Multicall3: 'Multicall3.sol',
  DeferredPaymentEscrow: 'DeferredPaymentEscrow.sol',
} as const

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

/** Compiles every contract and returns the artifact object; throws with all compiler errors. */
export function compileContracts(): ArtifactsFile {
  const sources = Object.fromEntries(
    Object.values(CONTRACTS).map((file) => [file, { content: readFileSync(join(here, file), 'utf8') }]),
  )
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: EVM_VERSION,
      // No metadata hash: the bytecode then depends only on the source, so rebuilding an
      // unchanged contract leaves the committed artifact byte-identical.
      metadata: { bytecodeHash: 'none', appendCBOR: false },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput
  const problems = (output.errors ?? []).filter((e) => e.severity === 'error')
  if (problems.length > 0) {
    throw new Error(`solc failed:\n${problems.map((e) => e.formattedMessage).join('\n')}`)
  }
  for (const w of (output.errors ?? []).filter((e) => e.severity === 'warning')) {
    process.stderr.write(w.formattedMessage + '\n')
  }

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
