import { readFileSync } from 'node:fs'
import { createTestClient, http } from 'viem'
import { UPTO_PROXY_ADDRESS } from '../../src/chain/permit2.js'
import { compileSolidity } from './evm-chain.js'
import type { TestPlatform } from './platform.js'

/**
 * Puts the reference-rules upto proxy (test/fixtures/contracts/ReferenceRulesUptoProxy.sol: only
 * the facilitator itself may settle, no per-payment event) at the proxy's canonical address, so
 * the settler takes the `direct` path public chains need.
 */
export async function installReferenceRulesProxy(platform: TestPlatform) {
  const src = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
  const compiled = compileSolidity({
    'X402UptoPermit2Proxy.sol': src('src/chain/contracts/X402UptoPermit2Proxy.sol'),
    'ReferenceRulesUptoProxy.sol': src('test/fixtures/contracts/ReferenceRulesUptoProxy.sol'),
  })
  await createTestClient({ mode: 'anvil', transport: http(platform.devnet.rpcUrl) }).setCode({
    address: UPTO_PROXY_ADDRESS,
    bytecode: compiled.ReferenceRulesUptoProxy!.deployedBytecode,
  })
}
