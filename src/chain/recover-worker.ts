/**
 * Worker thread of `createSignerRecovery`: recovers the signers of a batch of payments. Loaded in worker
 * threads only. Never throws for a bad signature (that is a `null` result, as on the main thread).
 */
import { recoverAuthorizer, type RecoveredSigner } from './recover-signer.js'

export interface RecoverBatch {
  /** 32 bytes per payment, in order */
  digests: Uint8Array
  /** one 65-byte hex signature per payment */
  signatures: string[]
}

export default function recoverBatch(batch: RecoverBatch): RecoveredSigner[] {
  const out: RecoveredSigner[] = new Array(batch.signatures.length)
  for (let i = 0; i < out.length; i++)
    out[i] = recoverAuthorizer(batch.digests.subarray(i * 32, i * 32 + 32), batch.signatures[i]!)
  return out
}
