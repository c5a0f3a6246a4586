/* global ResizeObserver */
// Line charts drawn by uPlot, served from our own origin (/dashboard/vendor/uPlot.esm.js, loaded
// on first use). Each chart is a <figure> with a caption; the canvas is hidden from screen
// readers, which get the same numbers as a table under "Data".
import { h } from './dom.js'

let uplot
const load = () => (uplot ??= import('./vendor/uPlot.esm.js').then((m) => m.default))

/** Colour-blind-safe series colours (Okabe–Ito). */
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000']

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
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [{}, { values: (u, ticks) => ticks.map((v) => format(v)), size: 100 }],
    series: [
      { label: 'Day', value: (u, v) => (v === null ? '' : new Date(v * 1000).toISOString().slice(0, 10)) },
      ...series.map((s, i) => ({
        label: s.label,
        stroke: COLOURS[i % COLOURS.length],
        width: 2,
        dash: s.dash,
        points: { show: days.length <= 62 },
        value: (u, v) => (v === null ? '—' : format(v)),
      })),
    ],
  }
  const plot = new UPlot(opts, [x, ...series.map((s) => s.values)], canvas)
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
