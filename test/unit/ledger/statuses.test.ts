import t from 'tap'
import {
  FINAL_STATUSES,
  INITIAL_STATUSES,
  OPEN_STATUSES,
  PAYMENT_STATUSES,
  UNCHARGED_STATUSES,
  TRANSITIONS,
  assertTransitions,
  isAllowedTransition,
  transitionGuardSql,
  type PaymentStatus,
} from '../../../src/ledger/statuses.js'

// The moves the ledger allows, written out once more by hand: a change to the table must change
// this list too, in the same commit, with a reason.
const EXPECTED: ReadonlyArray<[PaymentStatus, PaymentStatus]> = [
  ['verified', 'served'],
  ['verified', 'voided'],
  ['served', 'settling'],
  ['settling', 'settled'],
  ['settling', 'failed'],
  ['settling', 'served'],
]

const move = ([from, to]: readonly [string, string]) => `${from} → ${to}`

t.test('the transition table allows exactly the documented moves, each with who makes it', async (t) => {
  const allowed: [PaymentStatus, PaymentStatus][] = []
  for (const from of PAYMENT_STATUSES)
    for (const to of PAYMENT_STATUSES) if (isAllowedTransition(from, to)) allowed.push([from, to])
  t.same(allowed.map(move).sort(), EXPECTED.map(move).sort())
  for (const [from, to] of EXPECTED) t.match(TRANSITIONS[from][to], /^[a-z]+: \S/, `${from} → ${to} names its mover`)
  t.same(Object.keys(TRANSITIONS).sort(), [...PAYMENT_STATUSES].sort(), 'every status has a row')
})

t.test('no status moves to itself, and a served payment is never voided (it is owed to the seller)', async (t) => {
  for (const s of PAYMENT_STATUSES) t.notOk(isAllowedTransition(s, s), `${s} → ${s}`)
  t.notOk(isAllowedTransition('served', 'voided'))
  t.notOk(isAllowedTransition('settling', 'voided'))
})

t.test('final statuses have no way out; open and final statuses split every status', async (t) => {
  for (const s of FINAL_STATUSES) t.same(TRANSITIONS[s], {}, `${s} is final`)
  for (const s of OPEN_STATUSES) t.ok(Object.keys(TRANSITIONS[s]).length > 0, `${s} can still move`)
  t.same([...OPEN_STATUSES, ...FINAL_STATUSES].sort(), [...PAYMENT_STATUSES].sort())
  t.notOk(
    OPEN_STATUSES.some((s) => FINAL_STATUSES.has(s)),
    'no status is both open and final',
  )
  for (const s of UNCHARGED_STATUSES) t.ok(FINAL_STATUSES.has(s), `${s} (never charged) is final`)
})

t.test(
  'every status is reached from a status a payment can be inserted with, and every open one can end',
  async (t) => {
    t.same([...INITIAL_STATUSES].sort(), ['served', 'verified', 'voided'])
    const reached = new Set<PaymentStatus>(INITIAL_STATUSES)
    for (let grew = true; grew;) {
      grew = false
      for (const from of [...reached])
        for (const to of Object.keys(TRANSITIONS[from]) as PaymentStatus[])
          if (!reached.has(to)) grew = Boolean(reached.add(to))
    }
    t.same([...reached].sort(), [...PAYMENT_STATUSES].sort())
    const ends = (s: PaymentStatus, seen = new Set<PaymentStatus>()): boolean =>
      FINAL_STATUSES.has(s) ||
      (!seen.has(s) && (Object.keys(TRANSITIONS[s]) as PaymentStatus[]).some((to) => ends(to, new Set([...seen, s]))))
    for (const s of OPEN_STATUSES) t.ok(ends(s), `${s} has a path to a final status`)
  },
)

t.test('assertTransitions throws on the first move the table does not allow, naming it', async (t) => {
  t.doesNotThrow(() => assertTransitions(['verified'], 'served'))
  t.doesNotThrow(() => assertTransitions([], 'settled'), 'no source: nothing to check')
  t.throws(() => assertTransitions(['verified', 'served'], 'voided'), {
    message: 'payment ledger: served → voided is not an allowed transition',
  })
  t.throws(() => assertTransitions(['settled'], 'served'), /settled → served/)
})

t.test("the Postgres guard lists exactly the table's moves", async (t) => {
  const [fn, drop, trigger] = transitionGuardSql()
  const pairs = [...fn!.matchAll(/\('([a-z]+)','([a-z]+)'\)/g)].map((m) => [m[1], m[2]])
  t.same(pairs.map((p) => move(p as [string, string])).sort(), EXPECTED.map(move).sort())
  t.match(fn, /new\.status is distinct from old\.status/, 'an update that keeps the status passes')
  t.match(drop, /drop trigger if exists payments_transition_guard on payments/, 'installable again')
  t.match(trigger, /before update of status on payments\s+for each row/)
})
