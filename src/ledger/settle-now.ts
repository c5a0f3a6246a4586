/**
 * Settling one served payment before its call is answered: for endpoints in `sync` mode and for
 * blocked payers. The proxy calls it; the settlement service (src/services/settlement/sync.ts)
 * implements it. It lives here so that neither depends on the other.
 */
export interface SettleNow {
  /**
   * settles one served payment now; resolves with its transaction hash or a failure reason,
   * `final` when the payment failed (or was voided) and will never settle
   */
  settleNow(paymentId: string): Promise<{ ok: true; txHash: string } | { ok: false; reason: string; final?: boolean }>
}
