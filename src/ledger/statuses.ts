/**
 * The states a payment can be in, and who may move it from which to which. Every SQL path that
 * writes `payments.status` (the proxy's record and outcome, settlement, the recovery sweep) goes
 * through `src/ledger/`, and the test suite installs a trigger built from `TRANSITIONS` in every
 * test schema, so a path that made any other move fails whichever test exercises it.
 *
 *   (new) ──record──▶ verified ──outcome──▶ served ──claim──▶ settling ──receipt──▶ settled
 *     │                   │                   ▲                  │
 *     │                   └──outcome/sweep──▶ voided             ├──▶ failed
 *     └──record after a hosted call (one write): served or voided └──requeue──▶ served
 *
 * Every scheme walks the same table; `payments.scheme` says whose job moves a row out of `served`
 * (exact: settlement batches; deferred: voucher collection, src/services/deferred-collect/).
 */
import type { PaymentStatus } from '../db/database.js'

export type { PaymentStatus }

export const PAYMENT_STATUSES: readonly PaymentStatus[] = [
  'verified',
  'served',
  'settling',
  'settled',
  'voided',
  'failed',
]

/** Statuses a payment row may be inserted with. */
export const INITIAL_STATUSES: ReadonlySet<PaymentStatus> = new Set<PaymentStatus>([
  // record-first (a seller upstream gets the payment id before the call): outcome follows
  'verified',
  // a hosted call is recorded once, after its handler answered: served, or voided (never charged)
  'served',
  'voided',
])

/**
 * Allowed moves, each with who makes it. Nothing leaves `settled`, `voided` or `failed`.
 * `served → voided` is absent on purpose: a served payment is owed to the seller.
 */
export const TRANSITIONS: Readonly<Record<PaymentStatus, Readonly<Partial<Record<PaymentStatus, string>>>>> = {
  verified: {
    served: 'proxy: the call answered < 400',
    voided: 'proxy: the call failed, was refused after recording, or the sweep found no outcome',
  },
  served: { settling: 'settlement: claimed into a batch (or sync settlement); deferred: claimed for a collectMany' },
  settling: {
    settled:
      "settlement: a receipt shows the transfer; deferred: the escrow paid its voucher's aggregate (getVoucherCollected)",
    failed:
      "settlement: the chain refused it (expired, insufficient funds, cancelled, used elsewhere); deferred: `uncollectable`, the buyer's escrow account is empty (withdrawn) with the voucher unpaid",
    served:
      'settlement: not included; requeued for the next batch; deferred: not (fully) collected yet, tried again later',
  },
  settled: {},
  voided: {},
  failed: {},
}

/** Final statuses: the payment will never move again. */
export const FINAL_STATUSES: ReadonlySet<PaymentStatus> = new Set<PaymentStatus>(['settled', 'voided', 'failed'])

/** Statuses whose value still counts against the payer's credit (accepted, not yet decided). */
export const OPEN_STATUSES: readonly PaymentStatus[] = ['verified', 'served', 'settling']

/**
 * Statuses of a payment the payer is charged for: its call was served (settled, or on its way to
 * be). A paid answer under such a payment is never run again (payment-identifier, agent payments).
 */
export const CHARGED_STATUSES: readonly PaymentStatus[] = ['served', 'settling', 'settled']

/** Final statuses in which the payer was never charged (src/proxy/payment-verdict.ts: `charged: false`). */
export const UNCHARGED_STATUSES: readonly PaymentStatus[] = ['voided', 'failed']

export function isAllowedTransition(from: PaymentStatus, to: PaymentStatus): boolean {
  return TRANSITIONS[from]?.[to] !== undefined
}

/** Throws unless every `from → to` is in the table (a programming error, caught by tests). */
export function assertTransitions(from: readonly PaymentStatus[], to: PaymentStatus): void {
  for (const f of from) {
    if (!isAllowedTransition(f, to)) throw new Error(`payment ledger: ${f} → ${to} is not an allowed transition`)
  }
}

/**
 * The table as a Postgres trigger on status updates (tests install it in every schema they
 * migrate; see test/helpers/test-env.ts): an update to a status the table does not allow from
 * the old one raises. Inserts are checked by the ledger writer (INITIAL_STATUSES); tests insert
 * fixture rows in any status.
 */
export function transitionGuardSql(): string[] {
  const pairs = Object.entries(TRANSITIONS).flatMap(([from, tos]) =>
    Object.keys(tos).map((to) => `('${from}','${to}')`),
  )
  return [
    `create or replace function payments_transition_guard() returns trigger language plpgsql as $$
     begin
       if new.status is distinct from old.status and (old.status, new.status) not in (${pairs.join(',')}) then
         raise exception 'payment ledger: % -> % is not an allowed transition', old.status, new.status;
       end if;
       return new;
     end $$`,
    `drop trigger if exists payments_transition_guard on payments`,
    `create trigger payments_transition_guard before update of status on payments
     for each row execute function payments_transition_guard()`,
  ]
}
