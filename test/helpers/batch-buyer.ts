/**
 * A buyer paying `batch-settlement` with the official `@x402/evm` client scheme through
 * `@x402/fetch`, unmodified: its signer reads the chain (the client recovers a channel from
 * `channels(channelId)`), and the requests it sends are kept so a test can replay one.
 */
import { toClientEvmSigner, type ClientEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme, type BatchSettlementEvmSchemeOptions } from '@x402/evm/batch-settlement/client'
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { createPublicClient, http, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { TestPlatform } from './platform.js'

export interface BatchBuyer {
  scheme: BatchSettlementEvmScheme
  pay: (url: string, init?: RequestInit) => Promise<Response>
  /** PAYMENT-SIGNATURE headers sent, in order */
  sent: string[]
}

export function batchBuyer(platform: TestPlatform, key: Hex, depositMultiplier = 30): BatchBuyer {
  const pub = createPublicClient({ transport: http(platform.devnet.rpcUrl) })
  const signer = toClientEvmSigner(privateKeyToAccount(key), pub)
  return batchBuyerFor(platform, signer, { depositPolicy: { depositMultiplier } })
}

/** The same buyer with any signer and client options (a smart wallet's, `payerAuthorizer: 0x0`). */
export function batchBuyerFor(
  platform: TestPlatform,
  signer: ClientEvmSigner,
  options: BatchSettlementEvmSchemeOptions,
): BatchBuyer {
  const scheme = new BatchSettlementEvmScheme(signer, options)
  const sent: string[] = []
  const recording: typeof fetch = async (input, init) => {
    const req = new Request(input, init)
    const h = req.headers.get('payment-signature')
    if (h) sent.push(h)
    return fetch(req)
  }
  const pay = wrapFetchWithPaymentFromConfig(recording, {
    schemes: [{ network: `eip155:${platform.devnet.chainId}`, client: scheme }],
  })
  return { scheme, pay, sent }
}

export interface BatchReceipt {
  success: boolean
  transaction: string
  amount?: string
  extra?: { chargedAmount?: string; channelState?: Record<string, string | number> }
}

export const receiptOf = (res: Response): BatchReceipt =>
  decodePaymentResponseHeader(res.headers.get('payment-response')!) as unknown as BatchReceipt
