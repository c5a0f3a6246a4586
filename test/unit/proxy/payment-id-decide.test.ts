import t from 'tap'
import { decide } from '../../../src/proxy/paid-call/payment-id.js'
import type { UsedPaymentId } from '../../../src/db/payment-identifier-store.js'

const used = (o: Partial<UsedPaymentId>): UsedPaymentId => ({
  fingerprint: 'f',
  paymentId: 'p',
  leased: false,
  expired: false,
  status: null,
  transaction: null,
  answer: null,
  ...o,
})

// the payment-identifier rules for a used id: every row of the table in docs/buyer.md ("Safe retries")
t.test('what a used id decides for a new call', async (t) => {
  const cases: Array<[string, Partial<UsedPaymentId>, string, ReturnType<typeof decide>]> = [
    ['a different request', { status: 'served' }, 'g', 'conflict'],
    ['a different request while running', { leased: true }, 'g', 'conflict'],
    ['a different request after a failure', { status: 'voided' }, 'g', 'conflict'],
    ['expired, whatever the request', { status: 'served' }, 'g', 'free'],
    ['running, not recorded yet (hosted)', { leased: true }, 'f', 'in-progress'],
    ['recorded verified (record-first, running)', { status: 'verified' }, 'f', 'in-progress'],
    ['served, its answer being kept', { status: 'served', leased: true }, 'f', 'in-progress'],
    ['served', { status: 'served' }, 'f', 'served'],
    ['settling', { status: 'settling' }, 'f', 'served'],
    ['settled', { status: 'settled' }, 'f', 'served'],
    ['voided', { status: 'voided' }, 'f', 'free'],
    ['settlement failed', { status: 'failed' }, 'f', 'free'],
    ['no payment, lease run out (its proxy died)', {}, 'f', 'free'],
  ]
  for (const [what, o, fingerprint, want] of cases) {
    const row = what.startsWith('expired') ? used({ ...o, expired: true }) : used(o)
    t.equal(decide(row, fingerprint), want, what)
  }
})
