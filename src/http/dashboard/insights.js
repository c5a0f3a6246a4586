// Insights: per-day charts over a date range — spend per agent, revenue per endpoint, calls and
// failures, settlement delay (GET /v1/insights).
import { api } from './api.js'
import { lineChart } from './charts.js'
import { errorSlot, h } from './dom.js'
import { units } from './format.js'
import { onSubmit } from './ui.js'
import { alertsList } from './webhooks.js'

const DAY = 86_400_000
const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10)
/** USDC on the charts (numbers, for the axis); tables and totals use the exact atomic strings. */
const toUsdc = (atomic) => Number(atomic) / 1e6
const usdcLabel = (v) => `${Number(v.toFixed(6))} USDC`
const count = (v) => String(Math.round(v))
const duration = (ms) =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(0)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`

export async function insightsView(show) {
  const today = Date.now()
  const from = h('input', {
    id: 'insights-from',
    type: 'date',
    required: true,
    value: isoDay(today - 29 * DAY),
    'data-param': 'from',
  })
  const to = h('input', { id: 'insights-to', type: 'date', required: true, value: isoDay(today), 'data-param': 'to' })
  const apply = h('button', { type: 'submit' }, 'Show')
  const error = errorSlot()
  const charts = h('div', { id: 'insights-charts' })
  const summary = h('p', { id: 'insights-summary', role: 'status' })
  async function load() {
    const i = await api('GET', `/v1/insights?${new URLSearchParams({ from: from.value, to: to.value })}`)
    const total = (xs) => units(xs.reduce((a, b) => a + BigInt(b.total), 0n).toString(), 6)
    summary.textContent = `${i.from} to ${i.to} (UTC): spent ${total(i.spend)} USDC, earned ${total(i.revenue)} USDC.`
    charts.replaceChildren(
      ...(await Promise.all([
        lineChart({
          id: 'chart-spend',
          title: 'Spend per day, per agent',
          description:
            'Paid by each of your agents: payments at this platform that were not voided or failed, and payments the platform signed for them that sellers elsewhere accepted.',
          days: i.days,
          series: i.spend.map((s) => ({ label: s.name, values: s.daily.map(toUsdc) })),
          format: usdcLabel,
        }),
        lineChart({
          id: 'chart-revenue',
          title: 'Revenue per day, per endpoint',
          description: 'Received by each of your endpoints (voided and failed payments left out).',
          days: i.days,
          series: i.revenue.map((e) => ({ label: e.path, values: e.daily.map(toUsdc) })),
          format: usdcLabel,
        }),
        lineChart({
          id: 'chart-calls',
          title: 'Paid calls and failures per day',
          description:
            'Calls your agents paid for and calls to your endpoints, and how many of each failed (voided: not served, nothing charged; failed: not settled).',
          days: i.days,
          series: [
            { label: 'Calls by your agents', values: i.calls.buyer },
            { label: 'Failures (your agents)', values: i.calls.buyer_failures, dash: [6, 4] },
            { label: 'Calls to your endpoints', values: i.calls.seller },
            { label: 'Failures (your endpoints)', values: i.calls.seller_failures, dash: [6, 4] },
          ],
          format: count,
        }),
        lineChart({
          id: 'chart-delay',
          title: 'Settlement delay',
          description:
            'From the payment to its settlement on chain, for the payments settled of each day: median and 95th percentile.',
          days: i.days,
          series: [
            { label: 'Median', values: i.settlement_delay.p50_ms },
            { label: '95th percentile', values: i.settlement_delay.p95_ms, dash: [6, 4] },
          ],
          format: duration,
        }),
      ])),
    )
  }
  const form = h(
    'form',
    { class: 'inline', id: 'insights-range', onsubmit: onSubmit(apply, error, load) },
    h('label', { for: 'insights-from' }, 'From (UTC)'),
    from,
    h('label', { for: 'insights-to' }, 'To (UTC)'),
    to,
    apply,
    error,
  )
  await load()
  show(
    h('h1', {}, 'Insights'),
    h(
      'p',
      { class: 'hint' },
      'Your agents’ spending and your endpoints’ earnings per day; each chart’s numbers are under “Data”.',
    ),
    await alertsList(),
    form,
    summary,
    charts,
  )
}
