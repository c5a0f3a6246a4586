// Line charts drawn by uPlot, served from our own origin (/dashboard/vendor/uPlot.esm.js, loaded
// on first use). Each chart is a <figure> with a caption; the canvas is hidden from screen
// readers, which get the same numbers as a table under "Data".
import { h } from './dom.js'

let uplot
const load = () => (uplot ??= import('./vendor/uPlot.esm.js').then((m) => m.default))

/** Colour-blind-safe series colours (Okabe–Ito). */
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000']
/**
 * Series that carry the same numbers must not hide each other: each later series is drawn thinner
 * and with a dash pattern of its own over the earlier ones, so a line under another still shows
 * (its colour between the dashes, its wider edge on both sides).
 */
const DASHES = [undefined, [10, 5], [3, 4], [14, 4, 3, 4], [6, 3, 1, 3]]
const widthOf = (i) => Math.max(1.5, 4 - i)

/**
 * Where the day axis puts its labels: every `step`-th day counted back from the last, so the last
 * label is the last day shown (uPlot's own time ticks may stop a day short of it).
 */
function daySplits(x, maxLabels = 8) {
  const step = Math.max(1, Math.ceil(x.length / maxLabels))
  const out = []
  for (let i = x.length - 1; i >= 0; i -= step) out.unshift(x[i])
  return out
}
const dayLabel = (ts) => new Date(ts * 1000).toISOString().slice(5, 10)

/**
 * A line chart of per-day series: `days` (YYYY-MM-DD), `series` [{label, values, dash?}] with one
 * number (or null) per day, `format` for the axis, tooltips and table cells.
 *
 * @example
 *   figure.append(await lineChart({ id: 'spend', title: 'Spend per day', days, series, format: usdc }))
 */
export async function lineChart({ id, title, description, days, series, format = String }) {
  const canvas = h('div', { class: 'chart', 'aria-hidden': 'true' })
  const empty = series.length === 0 || series.every((s) => s.values.every((v) => v === null || v === 0))
  const figure = h(
    'figure',
    { class: 'chart-figure', id, 'aria-labelledby': `${id}-title` },
    h('figcaption', {}, h('h2', { id: `${id}-title` }, title), description && h('p', { class: 'hint' }, description)),
    empty ? h('p', { class: 'empty' }, 'Nothing in this range.') : canvas,
    !empty && dataTable(days, series, format),
  )
  if (empty) return figure
  const UPlot = await load()
  const x = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000)
  const opts = {
    width: 600,
    height: 260,
    tzDate: (ts) => UPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    // the legend's markers dashed like their lines, so twins are told apart there too
    legend: { markers: { dash: (u, i) => (u.series[i].dash?.length ? 'dashed' : 'solid') } },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [
      { splits: () => daySplits(x), values: (u, ticks) => ticks.map(dayLabel) },
      { values: (u, ticks) => ticks.map((v) => format(v)), size: 100 },
    ],
    series: [
      { label: 'Day', value: (u, v) => (v === null ? '' : new Date(v * 1000).toISOString().slice(0, 10)) },
      ...series.map((s, i) => ({
        label: s.label,
        stroke: COLOURS[i % COLOURS.length],
        width: widthOf(i),
        dash: s.dash ?? DASHES[i % DASHES.length],
        points: { show: days.length <= 62, size: 5 + 2 * Math.max(0, 3 - i) },
        value: (u, v) => (v === null ? '—' : format(v)),
      })),
    ],
  }
  const plot = new UPlot(opts, [x, ...series.map((s) => s.values)], canvas)
  // the day labels the x axis draws on the canvas, for whoever cannot read the canvas
  figure.dataset.xLabels = daySplits(x).map(dayLabel).join(' ')
  // follow the page's width (the figure is laid out after this returns)
  new ResizeObserver(
    () => canvas.isConnected && plot.setSize({ width: Math.max(280, canvas.clientWidth), height: 260 }),
  ).observe(canvas)
  return figure
}

/** The chart's numbers as a table, for screen readers and for reading exact values. */
function dataTable(days, series, format) {
  return h(
    'details',
    { class: 'chart-data' },
    h('summary', {}, 'Data'),
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, 'Day (UTC)'),
          series.map((s) => h('th', { scope: 'col' }, s.label)),
        ),
      ),
      h(
        'tbody',
        {},
        days.map((d, i) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, d),
            series.map((s) => h('td', {}, s.values[i] === null ? '—' : format(s.values[i]))),
          ),
        ),
      ),
    ),
  )
}
