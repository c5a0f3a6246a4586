/**
 * One Solana JSON-RPC 2.0 call to the configured SOLANA_RPC_URL (https://solana.com/docs/rpc/http).
 * A JSON-RPC error object becomes 502 upstream_failed with its code and message (the URL, which
 * may carry an API key, never appears in a message); `onError` may turn a specific error (such as
 * invalid params the buyer sent) into something else.
 *
 * @example
 *   const fees = await solanaRpc<Array<{ slot: number; prioritizationFee: number }>>(ctx, 'getRecentPrioritizationFees', [[]])
 */
import { HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'
import { providerJson, providerSetting } from './outbound.js'

export const SOLANA_RPC_SETTING = 'SOLANA_RPC_URL'

/** Solana account addresses: base58 of 32 bytes */
export const SOLANA_ADDRESS_PATTERN = '^[1-9A-HJ-NP-Za-km-z]{32,44}$'

export interface RpcError {
  code: number
  message: string
}

export async function solanaRpc<T>(
  ctx: HandlerContext,
  method: string,
  params: unknown[],
  onError?: (e: RpcError) => never,
): Promise<T> {
  const url = providerSetting(ctx, SOLANA_RPC_SETTING, 'the Solana RPC')
  const res = await providerJson<{ result?: T; error?: RpcError }>('Solana RPC', url, {
    method: 'POST',
    body: { jsonrpc: '2.0', id: 1, method, params },
    timeoutMs: 8_000,
  })
  if (res && typeof res === 'object' && res.error) {
    const e = { code: Number(res.error.code), message: String(res.error.message ?? '').slice(0, 200) }
    onError?.(e)
    throw new HandlerUpstreamError('upstream_failed', `Solana RPC ${method} failed (${e.code}: ${e.message})`)
  }
  if (!res || typeof res !== 'object' || !('result' in res))
    throw new HandlerUpstreamError('upstream_failed', `Solana RPC ${method} answered without a result`)
  return res.result as T
}
