// Webhooks: the user's endpoints (create with the secret shown once, send a test event, disable,
// delete), each endpoint's delivery log, and the alerts list the overview shows.
import { api, seg } from './api.js'
import { errorSlot, h, revealSecret, secretPanel, table } from './dom.js'
import { time } from './format.js'
import { act, onSubmit } from './ui.js'

const EVENT_TYPES = [
  'payment.served',
  'payment.settled',
  'payment.failed',
  'payment.voided',
  'agent.cap_reached',
  'agent.cap_near',
  'agent.balance_low',
  'topup.completed',
  'topup.failed',
  'withdrawal.confirmed',
  'withdrawal.failed',
  'approval.requested',
  'revenue.settled',
  'voucher.collected',
]

/** The latest alerts (cap, balance and failure events): a small list for the overview pages. */
export async function alertsList() {
  const { data } = await api('GET', '/v1/alerts?limit=10')
  return h(
    'section',
    { id: 'alerts', 'aria-label': 'Alerts' },
    h('h2', {}, 'Alerts'),
    data.length === 0
      ? h('p', { class: 'empty' }, 'No alerts: caps, low balances and failures show here (and by email).')
      : h(
          'ul',
          { class: 'alerts' },
          ...data.map((a) =>
            h('li', { 'data-type': a.type }, h('code', {}, a.type), ' ', time(a.created_at), ' ', describe(a)),
          ),
        ),
  )
}

function describe(a) {
  const d = a.data ?? {}
  if (a.type.startsWith('agent.cap'))
    return `${d.agent ?? ''} ${d.window ?? ''} cap${d.percent ? ` ${d.percent}%` : ' reached'}`
  if (a.type === 'webhook.disabled') return `endpoint ${d.url ?? ''} disabled`
  if (a.type === 'approval.requested') return `a payment to ${d.url ?? d.pay_to ?? ''} waits for your decision`
  return d.reason ?? d.error ?? d.payment_id ?? d.withdrawal_id ?? d.topup_id ?? ''
}

function deliveryLog(id) {
  const box = h('div', { class: 'deliveries', 'data-endpoint': id })
  const load = async () => {
    const { data } = await api('GET', `/v1/webhooks/${seg(id)}/deliveries?limit=20`)
    box.replaceChildren(
      table(
        ['Time', 'Event', 'Status', 'Tries', 'Code', 'Latency', 'Error'],
        data.map((d) =>
          h(
            'tr',
            { 'data-delivery': d.id },
            h('td', {}, time(d.created_at)),
            h('td', {}, h('code', {}, d.type), ' ', d.event_id),
            h('td', { class: d.status }, d.status),
            h('td', {}, String(d.attempts)),
            h('td', {}, d.response_code === null ? '–' : String(d.response_code)),
            h('td', {}, d.latency_ms === null ? '–' : `${d.latency_ms} ms`),
            h('td', {}, d.last_error ?? ''),
          ),
        ),
        'No deliveries yet.',
      ),
    )
  }
  return { box, load }
}

function endpointCard(e, reload) {
  const log = deliveryLog(e.id)
  const test = h('button', { type: 'button' }, 'Send test event')
  test.addEventListener('click', () =>
    act(test, async () => {
      await api('POST', `/v1/webhooks/${seg(e.id)}/test`)
      // the worker sends it within a second or so: show the log then
      await new Promise((r) => setTimeout(r, 1500))
      await log.load()
    }),
  )
  const toggle = h('button', { type: 'button', class: 'plain' }, e.enabled ? 'Disable' : 'Enable')
  toggle.addEventListener('click', () =>
    act(toggle, async () => {
      await api('PATCH', `/v1/webhooks/${seg(e.id)}`, { enabled: !e.enabled })
      await reload()
    }),
  )
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete')
  del.addEventListener('click', () => {
    if (!confirm(`Delete the webhook endpoint ${e.url} and its delivery log?`)) return
    act(del, async () => {
      await api('DELETE', `/v1/webhooks/${seg(e.id)}`)
      await reload()
    })
  })
  const refresh = h('button', { type: 'button', class: 'plain' }, 'Refresh log')
  refresh.addEventListener('click', () => act(refresh, log.load))
  return {
    node: h(
      'section',
      { class: 'webhook', 'data-webhook': e.id },
      h('h2', {}, e.url),
      h(
        'p',
        { class: 'hint' },
        e.enabled ? 'enabled' : `disabled${e.disabled_reason ? `: ${e.disabled_reason}` : ''}`,
        ' · ',
        e.events.join(', '),
        e.events.includes('agent.cap_near') ? ` · cap_near at ${e.cap_near_percent}%` : '',
      ),
      h('div', { class: 'toolbar' }, e.enabled && test, refresh, toggle, del),
      log.box,
    ),
    load: log.load,
  }
}

function createForm(reveal, reload) {
  const url = h('input', {
    id: 'webhook-url',
    type: 'url',
    required: true,
    placeholder: 'https://…',
    'data-param': 'url',
  })
  const boxes = EVENT_TYPES.map((t) => h('input', { type: 'checkbox', value: t, id: `ev-${t}` }))
  const create = h('button', { type: 'submit' }, 'Add endpoint')
  const error = errorSlot()
  return h(
    'form',
    {
      id: 'webhook-form',
      onsubmit: onSubmit(create, error, async () => {
        const events = boxes.filter((b) => b.checked).map((b) => b.value)
        const e = await api('POST', '/v1/webhooks', { url: url.value, events })
        url.value = ''
        revealSecret(
          reveal,
          secretPanel(
            `Signing secret for ${e.url}`,
            e.secret,
            'It is stored encrypted and is never shown again; it signs every delivery (Tollgate-Signature).',
          ),
        )
        await reload()
      }),
    },
    h('label', { for: 'webhook-url' }, 'Endpoint URL'),
    url,
    h(
      'fieldset',
      { 'data-param': 'events' },
      h('legend', {}, 'Events'),
      ...EVENT_TYPES.map((t, i) => h('label', { for: `ev-${t}` }, boxes[i], ` ${t}`)),
    ),
    create,
    error,
  )
}

export async function webhooksView(show) {
  const list = h('div', { id: 'webhooks' })
  const reveal = h('div')
  const load = async () => {
    const { data } = await api('GET', '/v1/webhooks')
    const cards = data.map((e) => endpointCard(e, load))
    list.replaceChildren(
      ...(cards.length ? cards.map((c) => c.node) : [h('p', { class: 'empty' }, 'No endpoints yet.')]),
    )
    await Promise.all(cards.map((c) => c.load()))
  }
  await load()
  show(
    h('h1', {}, 'Webhooks'),
    h(
      'p',
      { class: 'hint' },
      'Each event is a JSON POST signed with the endpoint’s secret (header ',
      h('code', {}, 'Tollgate-Signature: t=…,v1=…'),
      '; check it with ',
      h('code', {}, 'verifyWebhook()'),
      ' or ',
      h('code', {}, 'tollgate webhooks verify'),
      '). Failed deliveries are retried for 3 days.',
    ),
    createForm(reveal, load),
    reveal,
    list,
    await alertsList(),
  )
}
