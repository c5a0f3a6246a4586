// Approvals: agent payments that wait for a person (an agent's approval policy held them). Pending
// ones first, each with Approve and Deny; then the latest decided ones with who decided, how, when.
import { api, seg } from './api.js'
import { emptyState, h, table } from './dom.js'
import { short, time, usdc } from './format.js'
import { act } from './ui.js'

const WHY = { amount: 'above the approval amount', new_seller_rate: 'many calls a minute to a new seller' }

export async function approvalsView(show) {
  const [pending, recent] = await Promise.all([
    api('GET', '/v1/approvals?status=pending&limit=50'),
    api('GET', '/v1/approvals?limit=20'),
  ])
  const reload = () => approvalsView(show)
  const decided = recent.data.filter((a) => a.status !== 'pending')
  show(
    h('h1', {}, 'Approvals'),
    h(
      'p',
      { class: 'hint' },
      'Payments an agent asked for that its approval policy holds for you. Approve and the agent pays on its ',
      'next try (once); deny, or let it expire, and the agent is refused.',
    ),
    h(
      'section',
      { id: 'approvals-pending', 'aria-label': 'Waiting for you' },
      h('h2', {}, 'Waiting for you'),
      pending.data.length === 0
        ? emptyState(
            'Nothing waits for your decision.',
            'Set an approval policy on an agent (PUT /v1/agents/{address}/approval-policy) to hold payments above an amount.',
          )
        : table(
            ['Agent', 'Amount', 'URL', 'Pays to', 'Why', 'Decide before', ''],
            pending.data.map((a) => pendingRow(a, reload)),
          ),
    ),
    h(
      'section',
      { id: 'approvals-decided', 'aria-label': 'Decided' },
      h('h2', {}, 'Decided'),
      table(
        ['Agent', 'Amount', 'URL', 'Status', 'Decided', 'By'],
        decided.map((a) =>
          h(
            'tr',
            { 'data-approval': a.id },
            h('td', {}, agentName(a)),
            h('td', {}, usdc(a.amount), depositNote(a)),
            h('td', { class: 'url' }, a.url),
            h('td', { class: a.status }, a.status),
            h('td', {}, time(a.decision?.at)),
            h('td', {}, a.decision ? `${a.decision.via}${a.decision.ip ? ` from ${a.decision.ip}` : ''}` : '—'),
          ),
        ),
        'No decisions yet.',
      ),
    ),
  )
}

/** A batch-settlement payment also moves a deposit into the agent's channel: refundable, not spent. */
const depositNote = (a) =>
  a.deposit ? h('div', { class: 'hint deposit' }, `+ ${usdc(a.deposit)} deposit into the channel (refundable)`) : null

const agentName = (a) => (a.agent?.name ? a.agent.name : short(a.agent?.address))

function pendingRow(a, reload) {
  const decide = (decision, label, cls) => {
    const b = h('button', { type: 'button', class: cls }, label)
    b.addEventListener('click', () =>
      act(b, async () => {
        await api('POST', `/v1/approvals/${seg(a.id)}/${decision}`)
        await reload()
      }),
    )
    return b
  }
  return h(
    'tr',
    { 'data-approval': a.id },
    h('td', {}, agentName(a)),
    h('td', {}, usdc(a.amount), ' ', h('span', { class: 'hint' }, a.scheme), depositNote(a)),
    h('td', { class: 'url' }, `${a.method ?? ''} ${a.url}`),
    h('td', {}, short(a.pay_to)),
    h('td', {}, WHY[a.reason] ?? a.reason),
    h('td', {}, time(a.expires_at)),
    h('td', {}, decide('approve', 'Approve', ''), ' ', decide('deny', 'Deny', 'danger')),
  )
}
