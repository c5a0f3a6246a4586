// One payment (#/payments/<id>, the ledger's id or the agent payment's): every state it went
// through, its transaction, the endpoint and seller by name, and how the call was answered
// (GET /v1/payments/{id}).
import { api, seg } from './api.js'
import { h } from './dom.js'
import { short, time, units } from './format.js'

/** In words, how the seller's side answered the call (the API's `answer`). */
function answerText(a) {
  if (a.outcome === 'served') return 'Served: the endpoint answered with success, and the payment was charged.'
  if (a.outcome === 'not_served')
    return a.http_status
      ? `Not served: the endpoint answered HTTP ${a.http_status}; nothing was charged.`
      : `Not served (${a.reason ?? 'the call failed'}); nothing was charged.`
  if (a.outcome === 'pending') return 'The call is running: the answer is not known yet.'
  return 'Paid to a seller outside this platform: its answer is what the agent reported below.'
}

/** What a ledger event or an agent report means, in a line. */
function eventText(e) {
  if (e.source === 'agent') return `the agent reported: ${e.type}`
  const move = e.from_status ? `${e.from_status} → ${e.to_status}` : (e.to_status ?? e.type)
  return e.reason ? `${move} (${e.reason})` : move
}

export async function paymentView(show, id) {
  const p = await api('GET', `/v1/payments/${seg(id)}`)
  const t = p.transaction
  const ap = p.agent_payment
  const amount = t ? t.amount : ap.amount
  const status = t ? t.status : ap.status
  const ep = p.endpoint
  const rows = [
    [
      'Status',
      h('span', { class: ['failed', 'voided', 'rejected', 'expired'].includes(status) ? 'error' : 'ok' }, status),
    ],
    ['Amount', `${units(amount, 6)} USDC`],
    ['Endpoint', ep ? h('code', {}, ep.path) : h('code', {}, ap?.url ?? t.resource)],
    ['Method', t?.method ?? ap?.method],
    ep && ['Service', ep.service_name],
    ep && ['Seller', `${ep.seller_name} (${ep.namespace})`],
    [
      'Paid by',
      p.agent ? h('a', { href: `#/agents/${p.agent.address}`, title: p.agent.address }, p.agent.name) : short(t?.payer),
    ],
    ['Paid to', short(t?.pay_to ?? ap?.pay_to)],
    ['Scheme', t?.scheme ?? ap?.scheme],
    t && ['Settlement', t.settlement_mode],
    [
      'Transaction',
      t?.tx_hash || ap?.tx_hash ? h('code', { id: 'payment-tx' }, t?.tx_hash ?? ap.tx_hash) : 'not on chain yet',
    ],
    t?.failure_reason && ['Failure', h('span', { class: 'error' }, t.failure_reason)],
    ['Created', time(t?.created_at ?? ap.created_at)],
    t?.settled_at && ['Settled', time(t.settled_at)],
    p.id && ['Payment id', h('code', {}, p.id)],
    p.agent_payment_id && ['Agent payment id', h('code', {}, p.agent_payment_id)],
  ].filter(Boolean)
  const events = [
    ...p.events.map((e) => ({ ...e, source: 'ledger' })),
    ...(ap?.events ?? []).map((e) => ({ ...e, source: 'agent' })),
  ].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
  show(
    h('p', {}, h('a', { href: '#/transactions' }, '← Transactions')),
    h('h1', {}, `Payment of ${units(amount, 6)} USDC`),
    h(
      'p',
      { class: 'hint' },
      p.role === 'buyer' ? 'Paid by one of your agents.' : 'Received by one of your endpoints.',
    ),
    h(
      'section',
      { class: 'panel', id: 'payment-answer', 'aria-labelledby': 'payment-answer-title' },
      h('h2', { id: 'payment-answer-title' }, 'The answer'),
      h('p', {}, answerText(p.answer)),
    ),
    h(
      'dl',
      { id: 'payment-facts' },
      rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '—')]),
    ),
    h(
      'section',
      { 'aria-labelledby': 'payment-events-title' },
      h('h2', { id: 'payment-events-title' }, 'Every state it went through'),
      events.length
        ? h(
            'ol',
            { class: 'timeline', id: 'payment-events' },
            events.map((e) =>
              h(
                'li',
                { 'data-status': e.to_status ?? e.type },
                h('span', { class: 'when' }, time(e.created_at)),
                ' ',
                eventText(e),
              ),
            ),
          )
        : h('p', { class: 'empty' }, 'No events recorded for it.'),
    ),
  )
}
