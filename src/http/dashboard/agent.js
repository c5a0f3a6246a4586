// One agent: balance, spend caps, agent keys, allowlist and top-up settings.
import { api, seg } from './api.js'
import { topUpText } from './agents.js'
import { lineChart } from './charts.js'
import { emptyState, errorSlot, field, h, revealSecret, secretPanel, table } from './dom.js'
import { atomicFromUsdc, short, time, units, usdc, usdcInput } from './format.js'
import { KEY_COLUMNS, keyRow } from './keys.js'
import { TRANSACTION_HEADERS, transactionRow, walletNames } from './transactions.js'
import { act, fail, notify, onSubmit, pager } from './ui.js'
import { withdrawForm } from './withdraw.js'

export async function agentView(show, address) {
  const base = `/v1/agents/${address}`
  const agent = await api('GET', base)
  const budget = budgetSection(base)
  const escrow = escrowSection(base)
  const channels = channelsSection(base)
  const payments = await paymentsSection(agent)
  const [caps, keys, allowlist, topUps, chart] = await Promise.all([
    capsSection(base, agent),
    agentKeysSection(base, agent),
    allowlistSection(base),
    topUpSection(base, agent),
    spendChart(agent),
  ])
  const title = h('h1', {}, agent.name)
  let balanceLine = balance(base)
  const withdraw = withdrawForm({
    id: 'agent-withdraw',
    path: `${base}/withdrawals`,
    available:
      'Send USDC from this agent wallet to an address. Payments the agent signed and that have not settled yet stay in the wallet until they do; what may leave now is “Withdrawable now” above.',
    done: async (w) => {
      await budget.load()
      if (w.status !== 'pending') balanceLine.replaceWith((balanceLine = balance(base)))
      // a settled withdrawal stays counted a few seconds, until every process has read the new balance
      if (w.status === 'confirmed') setTimeout(() => void budget.load(), 6_000)
      await payments.load()
    },
  })
  const facts = h(
    'dl',
    {},
    h('dt', {}, 'Wallet address'),
    h('dd', {}, h('code', {}, agent.address)),
    h('dt', {}, 'Created'),
    h('dd', {}, time(agent.created_at)),
  )
  const groups = [
    [
      'agent-overview',
      'Overview',
      [
        h(
          'div',
          { class: 'agent-summary' },
          h('div', {}, facts, h('h3', {}, 'Balance'), balanceLine, budget.node),
          chart,
        ),
        renameSection(base, agent, title),
      ],
    ],
    ['agent-limits', 'Caps & allowlist', [caps, allowlist, topUps]],
    ['agent-keys-group', 'Keys', [keys]],
    ['agent-money', 'Payments', [payments.node, withdraw, escrow, channels]],
  ]
  show(
    h('p', {}, h('a', { href: '#/agents' }, '← Agents')),
    title,
    sectionNav(groups),
    groups.map(([id, label, nodes]) =>
      h(
        'section',
        { class: 'agent-group', id, 'aria-labelledby': `${id}-title` },
        h('h2', { id: `${id}-title` }, label),
        nodes,
      ),
    ),
  )
}

/** The page's sections as a row of buttons that bring each into view (the hash is the router's). */
function sectionNav(groups) {
  return h(
    'nav',
    { class: 'section-nav', 'aria-label': 'Sections of this page' },
    groups.map(([id, label]) =>
      h(
        'button',
        {
          type: 'button',
          class: 'plain',
          'aria-controls': id,
          onclick: () => document.getElementById(id)?.scrollIntoView({ block: 'start' }),
        },
        label,
      ),
    ),
  )
}

/** The agent's spend per day over the last 30 days (its series of GET /v1/insights). */
async function spendChart(agent) {
  const i = await api('GET', '/v1/insights')
  const mine = i.spend.find((s) => s.agent.toLowerCase() === agent.address.toLowerCase())
  return lineChart({
    id: 'agent-spend-chart',
    title: 'Spend per day, last 30 days',
    days: i.days,
    series: [{ label: 'Spent', values: i.days.map((_, d) => (mine ? Number(mine.daily[d]) / 1e6 : 0)) }],
    format: (v) => `${Number(v.toFixed(6))} USDC`,
  })
}

/** What `tollgate budget` shows for the agent, and what may be withdrawn (GET …/budget). */
function budgetSection(base) {
  const list = h('dl', { id: 'agent-budget' }, h('dt', {}, 'Budget'), h('dd', { role: 'status' }, 'Loading…'))
  const cap = (v) => (v === null ? 'no cap' : `${units(v, 6)} USDC left`)
  const load = async () => {
    try {
      const b = await api('GET', `${base}/budget`)
      const rows = [
        ['Spent today (UTC)', `${units(b.spent.daily, 6)} USDC`],
        ['Spent this month (UTC)', `${units(b.spent.monthly, 6)} USDC`],
        ['Headroom today', cap(b.headroom.daily)],
        ['Headroom this month', cap(b.headroom.monthly)],
        [
          'Per transaction',
          b.headroom.per_transaction === null ? 'no cap' : `at most ${units(b.headroom.per_transaction, 6)} USDC`,
        ],
        ['Signed, not settled yet', `${units(b.unsettled, 6)} USDC`],
        [
          'Withdrawable now',
          b.withdrawable === null
            ? `unavailable: ${b.balance_error ?? 'the chain did not answer'}`
            : `${units(b.withdrawable, 6)} USDC`,
        ],
      ]
      list.replaceChildren(...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]))
    } catch (err) {
      if (err.status === 401) return fail(err)
      list.replaceChildren(h('dt', {}, 'Budget'), h('dd', { class: 'error' }, err.message))
    }
  }
  void load()
  return {
    node: h(
      'section',
      { 'aria-labelledby': 'agent-budget-title' },
      h('h3', { id: 'agent-budget-title' }, 'Budget'),
      list,
    ),
    load,
  }
}

/**
 * The agent wallet's escrow accounts for vouchers (deferred), read-only: per seller the balance,
 * what is thawing and until when, and the vouchers not collected yet (GET …/escrow). Thaw and
 * withdraw are `tollgate escrow thaw|withdraw` with the agent key.
 */
function escrowSection(base) {
  const body = h('div', { id: 'agent-escrow', role: 'status' }, 'Loading…')
  const usd = (v) => `${units(v, 6)} USDC`
  void api('GET', `${base}/escrow`).then(
    (e) => {
      const rows = e.accounts.map((a) =>
        h(
          'tr',
          {},
          h('td', {}, short(a.seller)),
          h('td', {}, usd(a.balance)),
          h('td', {}, a.thaw_ends_at ? `${usd(a.thawing_amount)} until ${time(a.thaw_ends_at)}` : '—'),
          h('td', {}, usd(a.outstanding)),
          h(
            'td',
            {},
            a.vouchers.length
              ? a.vouchers.map((v) =>
                  h(
                    'div',
                    {},
                    short(v.id),
                    ` #${v.nonce}: ${usd(v.value_aggregate)} signed, ${usd(v.collected)} collected`,
                  ),
                )
              : '—',
          ),
        ),
      )
      body.replaceChildren(
        table(
          ['Seller', 'Balance', 'Thawing', 'Outstanding', 'Vouchers'],
          rows,
          'No escrow accounts: this agent has paid no seller with vouchers.',
        ),
      )
    },
    (err) => {
      if (err.status === 401) return fail(err)
      // a deployment without an escrow: nothing to show
      body.replaceChildren(
        h(
          'p',
          { class: err.status === 503 ? 'empty' : 'error' },
          err.status === 503 ? 'Vouchers (deferred) are not enabled on this deployment.' : err.message,
        ),
      )
    },
  )
  return h(
    'section',
    { 'aria-labelledby': 'agent-escrow-title' },
    h('h3', { id: 'agent-escrow-title' }, 'Escrow (vouchers)'),
    h(
      'p',
      { class: 'hint' },
      'Funds this agent deposited for sellers it pays with vouchers (deferred). Sellers collect the outstanding vouchers from it; take the rest back with ',
      h('code', {}, 'tollgate escrow thaw|withdraw'),
      '.',
    ),
    body,
  )
}

/**
 * The agent wallet's batch-settlement channels, read-only: per channel the seller, what the channel
 * holds, what the seller charged and claimed, what is refundable and whether a timed withdrawal
 * started (GET …/channels). `tollgate channels` shows the same.
 */
function channelsSection(base) {
  const body = h('div', { id: 'agent-channels', role: 'status' }, 'Loading…')
  const usd = (v) => `${units(v, 6)} USDC`
  void api('GET', `${base}/channels`).then(
    (list) => {
      const rows = list.data.map((c) =>
        h(
          'tr',
          {},
          h('td', {}, short(c.channel_id)),
          h('td', {}, short(c.receiver)),
          h('td', {}, usd(c.balance)),
          h('td', {}, usd(c.charged)),
          h('td', {}, usd(c.claimed)),
          h('td', {}, usd(c.refundable)),
          h('td', {}, c.withdraw_requested_at ? `since ${time(c.withdraw_requested_at)}` : 'no'),
        ),
      )
      body.replaceChildren(
        table(
          ['Channel', 'Seller', 'Balance', 'Charged', 'Claimed', 'Refundable', 'Withdrawing'],
          rows,
          emptyState(
            'No channels: this agent has paid no endpoint through batch-settlement.',
            'Channels open with the first such payment: ',
            h('code', {}, 'tollgate fetch <url>'),
            ' on an endpoint of this platform that offers it (the default; --no-batch opts out).',
          ),
        ),
      )
    },
    (err) => {
      if (err.status === 401) return fail(err)
      body.replaceChildren(h('p', { class: 'error' }, err.message))
    },
  )
  return h(
    'section',
    { 'aria-labelledby': 'agent-channels-title' },
    h('h3', { id: 'agent-channels-title' }, 'Channels (batch-settlement)'),
    h(
      'p',
      { class: 'hint' },
      'Funds this agent deposited into channels with sellers it pays through batch-settlement: each call adds a signed voucher, and the seller claims what it charged in batches. What is not charged stays the agent’s.',
    ),
    body,
  )
}

/** The agent's own payments and withdrawals, 10 a page, newest first (GET /v1/transactions?agent=…). */
async function paymentsSection(agent) {
  const names = await walletNames()
  const list = h('div', { id: 'agent-payments' })
  const attempts = h('input', { id: 'agent-payments-attempts', type: 'checkbox' })
  async function load(cursor) {
    const q = new URLSearchParams({
      agent: agent.address,
      order: 'desc',
      limit: '10',
      ...(!attempts.checked && { status: 'verified,served,settling,settled,pending,confirmed' }),
      ...(cursor && { cursor }),
    })
    const page = await api('GET', `/v1/transactions?${q}`)
    list.replaceChildren(
      table(
        TRANSACTION_HEADERS,
        page.data.map((t) => transactionRow(t, names)),
        cursor
          ? 'No older payments.'
          : emptyState(
              'No payments yet.',
              'Give this agent a key (Keys), then pay a call with ',
              h('code', {}, "npx tollgate fetch '<url>'"),
              '; the ',
              h('a', { href: '#/marketplace' }, 'marketplace'),
              ' lists what it can pay for.',
            ),
      ),
      pager(cursor, page, load),
    )
  }
  attempts.addEventListener('change', () => void load().catch(fail))
  await load()
  return {
    node: h(
      'section',
      { 'aria-labelledby': 'agent-payments-title' },
      h('h3', { id: 'agent-payments-title' }, 'Payments and withdrawals'),
      h(
        'p',
        { class: 'check' },
        attempts,
        h('label', { for: 'agent-payments-attempts' }, 'Show failed and expired attempts'),
      ),
      list,
    ),
    load: () => load(),
  }
}

/** The agent's name (PATCH /v1/agents/{address}); the heading follows. */
function renameSection(base, agent, title) {
  const input = h('input', {
    id: 'agent-name',
    value: agent.name,
    maxlength: '100',
    'data-param': 'name',
    autocomplete: 'off',
  })
  const save = h('button', { type: 'submit' }, 'Rename')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'card',
      id: 'agent-rename',
      onsubmit: onSubmit(save, error, async () => {
        const updated = await api('PATCH', base, { name: input.value })
        title.textContent = updated.name
        input.value = updated.name
        notify(`Agent renamed to "${updated.name}".`, 'ok')
      }),
    },
    field('Agent name', input),
    error,
    save,
  )
}

/** USDC and ETH of the wallet, read after the page shows (503 when the chain does not answer). */
function balance(base) {
  const p = h('p', { id: 'balance', role: 'status' }, 'Loading balance…')
  api('GET', `${base}/balance`).then(
    (b) => p.replaceChildren(`${units(b.usdc, 6)} USDC · ${units(b.eth, 18)} ETH (block ${b.block_number})`),
    (err) => {
      if (!p.isConnected) return
      if (err.status === 401) return fail(err)
      p.className = 'error'
      p.textContent = err.status === 503 ? `Balance unavailable right now: ${err.message}` : err.message
    },
  )
  return p
}

function capsSection(base, agent) {
  const fields = [
    ['per_transaction', 'Per transaction'],
    ['daily', 'Daily'],
    ['monthly', 'Monthly'],
  ]
  const inputs = Object.fromEntries(
    fields.map(([k]) => [
      k,
      h('input', {
        id: `cap-${k}`,
        inputmode: 'decimal',
        placeholder: 'no cap',
        value: usdcInput(agent.spend_caps[k]),
        'data-param': `spend_caps.${k}`,
      }),
    ]),
  )
  const save = h('button', { type: 'submit' }, 'Save spend caps')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'card',
      id: 'spend-caps',
      onsubmit: onSubmit(save, error, async () => {
        const body = Object.fromEntries(
          fields.map(([k, label]) => [k, atomicFromUsdc(label, inputs[k].value, { param: `spend_caps.${k}` })]),
        )
        const caps = await api('PUT', `${base}/spend-caps`, body)
        for (const [k] of fields) inputs[k].value = usdcInput(caps[k])
        notify('Spend caps saved.', 'ok')
      }),
    },
    h('h3', {}, 'Spend caps'),
    h(
      'p',
      { class: 'hint' },
      'In USDC; leave a field empty for no cap. Every payment from this agent is checked against them.',
    ),
    fields.map(([k, label]) => [h('label', { for: `cap-${k}` }, label), inputs[k]]),
    error,
    save,
  )
}

async function agentKeysSection(base, agent) {
  const list = h('div')
  const reveal = h('div')
  const row = (k) =>
    keyRow(k, {
      what: 'agent key',
      consequence: "The agent's calls with it will get 401 at once.",
      path: `${base}/keys/${seg(k.id)}`,
    })
  const load = async () =>
    list.replaceChildren(
      table(
        KEY_COLUMNS,
        (await api('GET', `${base}/keys`)).data.map(row),
        emptyState(
          'No agent keys yet.',
          'The agent needs one to pay: create it above, or run ',
          h('code', {}, `npx tollgate keys create --agent ${agent.name} --save`),
          '.',
        ),
      ),
    )
  const name = h('input', { id: 'agent-key-name', maxlength: 100, placeholder: 'default', 'data-param': 'name' })
  const create = h('button', { type: 'submit' }, 'Create agent key')
  const error = errorSlot()
  const form = h(
    'form',
    {
      class: 'inline',
      onsubmit: onSubmit(create, error, async () => {
        reveal.replaceChildren()
        const key = await api('POST', `${base}/keys`, name.value.trim() ? { name: name.value } : {})
        name.value = ''
        revealSecret(reveal, secretPanel(`New agent key "${key.name}" for ${agent.name}`, key.secret))
        await load()
      }),
    },
    h('label', { for: 'agent-key-name' }, 'Key name'),
    name,
    create,
    error,
  )
  await load()
  return h(
    'section',
    { id: 'agent-keys' },
    h('h3', {}, 'Agent keys'),
    h(
      'p',
      { class: 'hint' },
      'An agent key authenticates this agent on its own routes (',
      h('code', {}, 'Authorization: Bearer ak_…'),
      ' on /v1/agent, e.g. paying a 402 challenge from this wallet), not on the user API.',
    ),
    form,
    reveal,
    list,
  )
}

/** The kinds POST /v1/agents/{address}/allowlist takes, with what each matches. */
const ALLOW_KINDS = [
  ['pay_to', 'pay_to — the receiver address the seller is paid at', '0x… receiver address'],
  ['namespace', 'namespace — a seller namespace on this platform', 'e.g. acme-data'],
  ['host', 'host — the host name of an x402 API', 'e.g. api.example.com'],
]

async function allowlistSection(base) {
  const list = h('div')
  let entries = []
  const remove = (e, button) => {
    const last =
      entries.length === 1 ? ' It is the last entry: with an empty allowlist this agent may pay every seller.' : ''
    if (!confirm(`Remove ${e.kind} ${e.value} from the allowlist?${last}`)) return
    act(button, async () => {
      await api('DELETE', `${base}/allowlist/${seg(e.id)}`)
      await load()
    })
  }
  const row = (e) =>
    h(
      'tr',
      {},
      h('td', {}, e.kind),
      h('td', {}, h('code', {}, e.value)),
      h('td', {}, time(e.created_at)),
      h(
        'td',
        {},
        h('button', { type: 'button', class: 'danger', onclick: (ev) => remove(e, ev.currentTarget) }, 'Remove'),
      ),
    )
  async function load() {
    entries = (await api('GET', `${base}/allowlist`)).data
    list.replaceChildren(
      table(['Kind', 'Value', 'Added', ''], entries.map(row), 'No entries: this agent may pay every seller.'),
    )
  }
  const kind = h(
    'select',
    { id: 'allow-kind', 'data-param': 'kind' },
    ALLOW_KINDS.map(([k, label]) => h('option', { value: k }, label)),
  )
  const value = h('input', { id: 'allow-value', required: true, 'data-param': 'value', placeholder: ALLOW_KINDS[0][2] })
  kind.addEventListener('change', () => (value.placeholder = ALLOW_KINDS.find(([k]) => k === kind.value)[2]))
  const add = h('button', { type: 'submit' }, 'Add to allowlist')
  const error = errorSlot()
  const form = h(
    'form',
    {
      class: 'inline',
      onsubmit: onSubmit(add, error, async () => {
        const e = await api('POST', `${base}/allowlist`, { kind: kind.value, value: value.value })
        value.value = ''
        await load()
        notify(`Allowed ${e.kind} ${e.value}.`, 'ok')
      }),
    },
    h('label', { for: 'allow-kind' }, 'Kind'),
    kind,
    h('label', { for: 'allow-value' }, 'Value'),
    value,
    add,
    error,
  )
  await load()
  return h(
    'section',
    { id: 'allowlist' },
    h('h3', {}, 'Allowlist'),
    h(
      'p',
      { class: 'hint' },
      'The sellers this agent may pay. A payment is allowed when any entry matches; an empty list allows every seller.',
    ),
    list,
    form,
  )
}

async function topUpSection(base, agent) {
  const status = h('p', { id: 'top-up-status' })
  const enabled = h('input', { id: 'top-up-enabled', type: 'checkbox', 'data-param': 'top_up.enabled' })
  const threshold = h('input', {
    id: 'top-up-threshold',
    inputmode: 'decimal',
    required: true,
    'data-param': 'top_up.threshold',
  })
  const amount = h('input', {
    id: 'top-up-amount',
    inputmode: 'decimal',
    required: true,
    'data-param': 'top_up.amount',
  })
  const disable = h('button', { type: 'button', class: 'danger' }, 'Disable top-ups')
  const render = (t) => {
    enabled.checked = t.enabled
    threshold.value = usdcInput(t.threshold)
    amount.value = usdcInput(t.amount)
    disable.hidden = !t.enabled
    status.textContent = t.enabled
      ? `Top-ups are on: when the USDC balance falls below ${usdc(t.threshold)}, ${usdc(t.amount)} is sent from your funding wallet.`
      : 'Top-ups are off.'
  }
  const save = h('button', { type: 'submit' }, 'Save top-up settings')
  const error = errorSlot()
  const put = async (body) => {
    const t = await api('PUT', `${base}/top-up`, body)
    render(t)
    notify(`Top-up settings saved: ${topUpText(t)}.`, 'ok')
  }
  disable.addEventListener('click', () => act(disable, () => put({ enabled: false }), error))
  const form = h(
    'form',
    {
      class: 'card',
      id: 'top-up',
      onsubmit: onSubmit(save, error, () =>
        put({
          enabled: enabled.checked,
          threshold: atomicFromUsdc('Threshold', threshold.value, { optional: false, param: 'top_up.threshold' }),
          amount: atomicFromUsdc('Amount', amount.value, { optional: false, param: 'top_up.amount' }),
          funding_source: 'funding_wallet',
        }),
      ),
    },
    h('h3', {}, 'Top-ups'),
    status,
    h(
      'p',
      { class: 'hint' },
      'Refills this agent from your ',
      h('a', { href: '#/funding' }, 'funding wallet'),
      ' whenever its USDC balance falls below the threshold. Amounts in USDC.',
    ),
    h('div', { class: 'check' }, enabled, h('label', { for: 'top-up-enabled' }, 'Enabled')),
    field('Threshold (USDC)', threshold),
    field('Amount per top-up (USDC)', amount),
    error,
    h('div', { class: 'inline' }, save, disable),
  )
  render(agent.top_up)
  const row = (t) =>
    h(
      'tr',
      {},
      h('td', {}, time(t.created_at)),
      h('td', {}, t.status),
      h('td', {}, `${units(t.amount, 6)} USDC`),
      h('td', {}, String(t.attempts)),
      h('td', {}, short(t.tx_hash)),
      h('td', { class: t.error ? 'error' : undefined }, t.error ?? ''),
    )
  // 10 a page, newest first; Older follows next_cursor (the API pages this list, so a busy agent's first top-ups stay reachable)
  const history = h('div', { id: 'top-up-history' })
  async function loadTopUps(cursor) {
    const page = await api('GET', `${base}/top-ups?${new URLSearchParams({ limit: '10', ...(cursor && { cursor }) })}`)
    history.replaceChildren(
      h('h4', {}, 'Top-ups, newest first'),
      table(
        ['Created', 'Status', 'Amount', 'Attempts', 'Transaction', 'Error'],
        page.data.map(row),
        cursor
          ? 'No older top-ups.'
          : emptyState(
              'No top-ups yet.',
              'Turn them on above and your funding wallet refills this agent when it runs low.',
            ),
      ),
      pager(cursor, page, loadTopUps),
    )
  }
  await loadTopUps()
  return h('section', {}, form, history)
}
