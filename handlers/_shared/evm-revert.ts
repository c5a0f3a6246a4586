/**
 * Turns a failed eth_estimateGas / eth_call into an answer ("this transaction would revert,
 * because ...") when the node said so, leaving transport failures to be 502s.
 */
import type { ChainClient } from './evm-client.js'
import { upstreamError } from './evm-client.js'

type Viem = ChainClient['viem']

export interface RevertInfo {
  /** Error(string) reason, Panic description, custom error selector, or the node's message */
  reason: string
  kind: 'error-string' | 'panic' | 'custom-error' | 'node-message'
  /** the revert data the node returned, when it returned any */
  data: string | null
}

const standardErrors = [
  { type: 'error', name: 'Error', inputs: [{ name: 'message', type: 'string' }] },
  { type: 'error', name: 'Panic', inputs: [{ name: 'code', type: 'uint256' }] },
] as const

/** Solidity's panic codes (docs.soliditylang.org, "Panic via assert and Error via require"). */
const PANIC_REASONS: Record<number, string> = {
  0x01: 'assertion failed',
  0x11: 'arithmetic overflow or underflow',
  0x12: 'division or modulo by zero',
  0x21: 'invalid enum value',
  0x22: 'invalid storage byte array',
  0x31: 'pop on an empty array',
  0x32: 'array index out of bounds',
  0x41: 'out of memory',
  0x51: 'call to a zero-initialized function',
}

/** Node messages that mean "the transaction itself would fail", not "the node failed". */
const EXECUTION_FAILURE =
  /revert|insufficient funds|out of gas|gas required exceeds|invalid opcode|stack (under|over)flow|invalid jump|intrinsic gas|exceeds (block )?gas limit|nonce too|fee cap|max fee per gas/i

/**
 * The revert behind `err` when the node answered with an execution failure; otherwise the error
 * to throw (502, or the transport's own HandlerUpstreamError).
 */
export function revertFrom(viem: Viem, err: unknown, what: string): RevertInfo | Error {
  const rpc =
    err instanceof viem.BaseError
      ? (err.walk((e) => e instanceof viem.RpcRequestError) as InstanceType<Viem['RpcRequestError']> | null)
      : null
  if (!rpc) return upstreamError(viem, err, what)
  const raw = rpc.cause as unknown as { code?: number; message?: string; data?: unknown } | undefined
  const nodeMessage = String(raw?.message ?? rpc.details ?? '')
  if (raw?.code !== 3 && !EXECUTION_FAILURE.test(nodeMessage)) return upstreamError(viem, err, what)
  const data =
    typeof raw?.data === 'string' && /^0x[0-9a-fA-F]*$/.test(raw.data)
      ? raw.data
      : typeof (raw?.data as { data?: unknown })?.data === 'string'
        ? String((raw!.data as { data: string }).data)
        : null
  if (data && data.length >= 10) {
    try {
      const decoded = viem.decodeErrorResult({ abi: standardErrors, data: data as `0x${string}` })
      if (decoded.errorName === 'Error') return { reason: String(decoded.args[0]), kind: 'error-string', data }
      const code = decoded.args[0] as bigint
      return {
        reason: `Panic(0x${code.toString(16)}): ${PANIC_REASONS[Number(code)] ?? 'unknown panic code'}`,
        kind: 'panic',
        data,
      }
    } catch {
      return {
        reason: `custom error with selector ${data.slice(0, 10)} (not decoded: the contract's ABI is not known)`,
        kind: 'custom-error',
        data,
      }
    }
  }
  return { reason: nodeMessage.slice(0, 500) || 'execution reverted (no reason given)', kind: 'node-message', data }
}
