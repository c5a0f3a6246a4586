// Overview: the landing page after login. Spend and revenue today and this month with a chart
// (GET /v1/insights), agents near their caps (GET /v1/agents, …/budget), the funding balance
// (GET /v1/funding-wallet), recent payments (GET /v1/transactions) and, on an empty account, the
// three steps to a first paid call with their exact CLI commands.
import { api } from './api.js'
import { lineChart } from './charts.js'
import { copyButton, h, table } from './dom.js'
import { units } from './format.js'
import { fetchCommand, isExample } from './marketplace.js'
import { SUCCESSFUL_STATUSES, TRANSACTION_HEADERS, transactionRow, walletNames } from './transactions.js'
import { fail, who } from './ui.js'
import { alertsList } from './webhooks.js'

const DAY = 86_400_000
const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10)
const sumAt = (series, i) => series.reduce((a, s) => a + BigInt(s.daily[i] ?? '0'), 0n)
/** A share of a cap at or above which an agent is "near" it. */
const NEAR = 0.8

export async function overviewView(show) {
  const today = Date.now()
  const month = `${isoDay(today).slice(0, 8)}01`
  // the last 30 days, and the whole month when it started earlier
  const from = [isoDay(today - 29 * DAY), month].sort()[0]
  const [insights, agents, recent, funding] = await Promise.all([
    api('GET', `/v1/insights?${new URLSearchParams({ from, to: isoDay(today) })}`),
    api('GET', '/v1/agents'),
    api('GET', `/v1/transactions?${new URLSearchParams({ limit: '5', order: 'desc', status: SUCCESSFUL_STATUSES })}`),
    api('GET', '/v1/funding-wallet').catch((err) => {
      if (err.status === 401) throw err
      return { error: err.message }
    }),
  ])
  const names = await walletNames()
  const fresh = agents.data.length === 0 && recent.data.length === 0
  show(
    h('h1', {}, 'Overview'),
    // the latest alerts (caps, low balances, failures, approvals waiting), as on Insights
    h('div', { id: 'overview-alerts' }, await alertsList()),
    fresh && (await gettingStarted()),
    totals(insights, month),
    await trendChart(insights),
    h(
      'div',
      { class: 'overview-grid' },
      fundingCard(funding),
      h(
        'section',
        { class: 'panel', id: 'overview-caps', 'aria-labelledby': 'overview-caps-title' },
        h('h2', { id: 'overview-caps-title' }, 'Spend caps nearly reached'),
        await nearCaps(agents.data),
      ),
    ),
    h(
      'section',
      { id: 'overview-recent', 'aria-labelledby': 'overview-recent-title' },
      h('h2', { id: 'overview-recent-title' }, 'Recent payments'),
      table(
        TRANSACTION_HEADERS,
        recent.data.map((t) => transactionRow(t, names)),
        h(
          'div',
          { class: 'empty-state' },
          h('p', { class: 'empty' }, 'No payments yet.'),
          h('p', {}, 'Your agents’ payments and the payments to your endpoints appear here as they happen.'),
        ),
      ),
      recent.data.length > 0 && h('p', {}, h('a', { href: '#/transactions' }, 'All transactions →')),
    ),
  )
}

/** Spent and earned, today and this month (UTC), from the insights' daily series. */
function totals(i, month) {
  const last = i.days.length - 1
  const first = Math.max(0, i.days.indexOf(month))
  const range = (series) => {
    let total = 0n
    for (let d = first; d <= last; d++) total += sumAt(series, d)
    return total
  }
  const card = (id, label, atomic) =>
    h(
      'div',
      { class: 'stat', id },
      h('span', { class: 'stat-label' }, label),
      h('span', { class: 'stat-value' }, `${units(atomic.toString(), 6)} USDC`),
    )
  return h(
    'section',
    { class: 'stats', 'aria-label': 'Spend and revenue' },
    card('stat-spent-today', 'Spent today', sumAt(i.spend, last)),
    card('stat-spent-month', 'Spent this month', range(i.spend)),
    card('stat-earned-today', 'Earned today', sumAt(i.revenue, last)),
    card('stat-earned-month', 'Earned this month', range(i.revenue)),
  )
}

/** One chart: spend (all agents) and revenue (all endpoints) per day. */
function trendChart(i) {
  const perDay = (series) => i.days.map((_, d) => Number(sumAt(series, d)) / 1e6)
  return lineChart({
    id: 'overview-chart',
    title: 'Spend and revenue per day',
    description:
      'All your agents’ payments and all your endpoints’ revenue, per UTC day. Per agent and endpoint: Insights.',
    days: i.days,
    series: [
      { label: 'Spent', values: perDay(i.spend) },
      { label: 'Earned', values: perDay(i.revenue), dash: [6, 4] },
    ],
    format: (v) => `${Number(v.toFixed(6))} USDC`,
  })
}

function fundingCard(f) {
  const body = f.error
    ? h('p', { class: 'error' }, f.error)
    : f.balance
      ? h('p', { class: 'stat-value', id: 'overview-funding-balance' }, `${units(f.balance.usdc, 6)} USDC`)
      : h('p', { class: 'error' }, `Balance unavailable right now: ${f.balance_error ?? 'the chain did not answer'}`)
  return h(
    'section',
    { class: 'panel', id: 'overview-funding', 'aria-labelledby': 'overview-funding-title' },
    h('h2', { id: 'overview-funding-title' }, 'Funding balance'),
    body,
    f.address &&
      h('p', { class: 'hint' }, 'Tops up your agents. ', h('a', { href: '#/funding' }, 'Add funds or withdraw →')),
  )
}

/**
 * The agents with a cap whose use today or this month is at least 80 % of it (GET …/budget of each
 * capped agent: the same counters the caps are checked with).
 */
async function nearCaps(agents) {
  const capped = agents.filter((a) => a.spend_caps.daily !== null || a.spend_caps.monthly !== null)
  if (capped.length === 0)
    return h(
      'p',
      { class: 'empty' },
      agents.length ? 'None of your agents has a daily or monthly cap. Set caps on an agent’s page.' : 'No agents yet.',
    )
  const budgets = await Promise.all(
    capped.slice(0, 50).map((a) =>
      api('GET', `/v1/agents/${a.address}/budget`).then(
        (b) => ({ a, b }),
        (err) => {
          if (err.status === 401) throw err
          return { a, b: null }
        },
      ),
    ),
  )
  const share = (spent, cap) => (cap === null || BigInt(cap) === 0n ? 0 : Number(BigInt(spent)) / Number(BigInt(cap)))
  const rows = budgets
    .filter(({ b }) => b)
    .map(({ a, b }) => ({
      a,
      b,
      day: share(b.spent.daily, a.spend_caps.daily),
      month: share(b.spent.monthly, a.spend_caps.monthly),
    }))
    .filter((r) => r.day >= NEAR || r.month >= NEAR)
    .sort((x, y) => Math.max(y.day, y.month) - Math.max(x.day, x.month))
  const used = (spent, cap, s) =>
    cap === null
      ? 'no cap'
      : h(
          'span',
          { class: s >= 1 ? 'error' : undefined },
          `${units(spent, 6)} of ${units(cap, 6)} USDC (${Math.round(s * 100)} %)`,
        )
  return table(
    ['Agent', 'Today', 'This month'],
    rows.map(({ a, b, day, month }) =>
      h(
        'tr',
        { 'data-agent': a.address },
        h('td', {}, h('a', { href: `#/agents/${a.address}` }, a.name)),
        h('td', {}, used(b.spent.daily, a.spend_caps.daily, day)),
        h('td', {}, used(b.spent.monthly, a.spend_caps.monthly, month)),
      ),
    ),
    h('p', { class: 'empty' }, `No agent has used ${NEAR * 100} % of a cap today or this month.`),
  )
}

/** A command line with its Copy button. */
function command(text) {
  const code = h('code', { class: 'command' }, text)
  return h('div', { class: 'command-cell' }, code, copyButton(text, code))
}

/**
 * What to do on an empty account: create an agent, fund it, make the first call, each on the
 * dashboard and as the exact CLI commands (with this API's address and the user's email, and a
 * real endpoint of the marketplace to pay).
 */
async function gettingStarted() {
  const origin = location.origin
  const email = who.textContent || (await api('GET', '/v1/session')).user.email
  // this platform's entries (a URL of its own: the Marketplace page's unfiltered list is not cached from here)
  const market = await api('GET', '/api/v1/agents/marketplace?source=platform').catch((err) => {
    if (err.status === 401) fail(err)
    return []
  })
  const endpoint = market
    .filter((e) => !isExample(e))
    .flatMap((e) => e.endpoints)
    .find((ep) => ep.methods.includes('GET') && !ep.url.includes('?'))
  const agent = 'research-bot'
  const step = (n, title, body, ...lines) =>
    h('li', { class: 'step' }, h('h3', {}, `${n}. ${title}`), h('p', {}, ...body), lines.map(command))
  return h(
    'section',
    { class: 'getting-started', id: 'getting-started', 'aria-labelledby': 'getting-started-title' },
    h('h2', { id: 'getting-started-title' }, 'Get started: your first paid call'),
    h(
      'p',
      { class: 'hint' },
      'Nothing here yet. Three steps, on this dashboard or with the CLI (run them where Node 20 is installed):',
    ),
    h(
      'ol',
      {},
      step(
        1,
        'Create an agent',
        [
          'An agent pays from a wallet of its own, within spend caps you set. ',
          h('a', { href: '#/agents' }, 'Create one on Agents'),
          ' or:',
        ],
        `npx tollgate login --api-url ${origin} --email ${email}`,
        `npx tollgate agents create ${agent} --daily 5`,
      ),
      step(
        2,
        'Fund it',
        [
          'Put USDC in your ',
          h('a', { href: '#/funding' }, 'funding wallet'),
          ' (its address: ',
          h('code', {}, 'npx tollgate funding'),
          '), then send some to the agent:',
        ],
        `npx tollgate fund ${agent} 5`,
      ),
      step(
        3,
        'Make the first call',
        [
          'Give the agent a key and pay an endpoint of the ',
          h('a', { href: '#/marketplace' }, 'marketplace'),
          endpoint ? ':' : ', or search for one from the CLI:',
        ],
        `npx tollgate keys create --agent ${agent} --save`,
        endpoint ? fetchCommand(endpoint.url, 'GET') : 'npx tollgate search <words>',
      ),
    ),
  )
}
