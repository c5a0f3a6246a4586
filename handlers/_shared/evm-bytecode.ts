/**
 * Reading deployed EVM bytecode: the 4-byte values pushed by PUSH4 (where Solidity's function
 * dispatcher keeps the selectors it answers), proxy storage slots and minimal-proxy clones.
 */
import type { ChainClient } from './evm-client.js'

/** Every PUSH4 operand in runtime bytecode, as 0x-prefixed lower-case hex; PUSH data is skipped, not read as opcodes. */
export function pushedSelectors(code: string): Set<string> {
  const hex = code.startsWith('0x') ? code.slice(2) : code
  const out = new Set<string>()
  for (let i = 0; i < hex.length; i += 2) {
    const op = parseInt(hex.slice(i, i + 2), 16)
    if (op >= 0x60 && op <= 0x7f) {
      const n = op - 0x5f
      if (n === 4 && i + 10 <= hex.length) out.add(`0x${hex.slice(i + 2, i + 10).toLowerCase()}`)
      i += n * 2
    }
  }
  return out
}

/** The target of an EIP-1167 minimal proxy, or null. */
export function minimalProxyTarget(code: string): `0x${string}` | null {
  const m = /^0x363d3d373d3d3d363d73([0-9a-f]{40})5af43d82803e903d91602b57fd5bf3$/i.exec(code)
  return m ? (`0x${m[1]}` as `0x${string}`) : null
}

/** Proxy slots, computed from their definitions: EIP-1967 (keccak(label) − 1) and EIP-1822 (keccak("PROXIABLE")). */
export function proxySlots(viem: ChainClient['viem']) {
  const minusOne = (label: string) =>
    viem.numberToHex(viem.hexToBigInt(viem.keccak256(viem.toHex(label))) - 1n, { size: 32 })
  return {
    eip1967Implementation: minusOne('eip1967.proxy.implementation'),
    eip1967Admin: minusOne('eip1967.proxy.admin'),
    eip1967Beacon: minusOne('eip1967.proxy.beacon'),
    eip1822Proxiable: viem.keccak256(viem.toHex('PROXIABLE')),
  }
}

/** The address held in the low 20 bytes of a storage word, or null when the word is zero. */
export function slotAddress(viem: ChainClient['viem'], word: string | undefined): `0x${string}` | null {
  if (!word || /^0x0*$/.test(word)) return null
  return viem.getAddress(`0x${word.slice(2).padStart(64, '0').slice(24)}`)
}
