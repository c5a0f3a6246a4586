// A service's upstream MCP server (PUT …/services/{service}/mcp-upstream): the form that publishes
// or re-reads it, and the table of the tools it fronts. Prices are entered in USDC and sent as
// atomic units; everything else is the API's validation, shown as the API words it.
import { api, ApiError } from './api.js'
import { errorSlot, field, h, table } from './dom.js'
import { atomicFromUsdc, units, usdcInput } from './format.js'
import { onSubmit } from './ui.js'

/** The endpoints that are tools of the service's upstream MCP server (`mcp_tool` set). */
export const mcpTools = (endpoints) => endpoints.filter((e) => e.mcp_tool)

/**
 * `path` is the service's path; `tools` its current MCP tool endpoints (none: a first publish).
 * `done(answer)` runs after the API accepted it (the first answer carries `signing_secret`).
 */
export function mcpUpstreamForm({ id, path, tools, done, cancel }) {
  const el = (tag, name, attrs = {}, ...children) => h(tag, { id: `${id}-${name}`, ...attrs }, ...children)
  const url = el('input', 'url', {
    type: 'url',
    required: true,
    'data-param': 'url',
    placeholder: 'https://mcp.example.com/mcp',
    value: tools[0]?.upstream_url ?? undefined,
    autocomplete: 'off',
  })
  const fallback = el('input', 'default-price', {
    inputmode: 'decimal',
    'data-param': 'default_price',
    placeholder: 'e.g. 0.001',
  })
  const prices = el(
    'textarea',
    'tool-prices',
    { rows: 3, 'data-param': 'tool_prices', placeholder: 'get_quote: 0.0025' },
    tools
      .filter((e) => e.enabled)
      .map((e) => `${e.mcp_tool}: ${usdcInput(e.price)}`)
      .join('\n'),
  )
  const body = () => {
    const b = { url: url.value.trim(), tool_prices: toolPrices(prices.value) }
    const d = atomicFromUsdc('Default price', fallback.value, { param: 'default_price', positive: true })
    if (d !== null) b.default_price = d
    return b
  }
  const submit = h('button', { type: 'submit' }, tools.length ? 'Update MCP server' : 'Publish MCP server')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'card wide',
      id,
      onsubmit: onSubmit(submit, error, async () => done(await api('PUT', `${path}/mcp-upstream`, body()))),
    },
    h('h3', {}, tools.length ? 'Update the upstream MCP server' : 'Publish an upstream MCP server'),
    h(
      'p',
      { class: 'hint' },
      'Tollgate lists the tools of your MCP server (Streamable HTTP) and publishes each priced one as a paid tool of this service. Publishing again re-reads the server: new tools are added, prices updated, tools gone or unpriced disabled.',
    ),
    field('MCP server URL', url, 'paid tool calls are forwarded to it signed (X-Tollgate-Signature)'),
    field('Default price (USDC)', fallback, 'the price of every tool not priced below; empty: those are not published'),
    field('Price per tool (USDC)', prices, 'one per line, tool_name: price; sent as atomic units'),
    error,
    h(
      'div',
      { class: 'inline' },
      submit,
      cancel && h('button', { type: 'button', class: 'plain', onclick: cancel }, 'Cancel'),
    ),
  )
}

/** The tools of the service's upstream MCP server, with their prices. */
export function mcpToolsTable(tools) {
  if (tools.length === 0) return null
  const servers = [...new Set(tools.map((e) => e.upstream_url))]
  return h(
    'div',
    { class: 'mcp-tools' },
    h('h4', {}, 'Upstream MCP server ', ...servers.map((s) => h('code', {}, s))),
    table(
      ['Tool', 'Slug', 'Price', 'Status'],
      tools.map((e) =>
        h(
          'tr',
          { 'data-tool': e.mcp_tool },
          h('td', {}, h('code', {}, e.mcp_tool)),
          h('td', {}, e.slug),
          h('td', {}, `${units(e.price, 6)} USDC`),
          h('td', { class: e.enabled ? 'active' : 'revoked' }, e.enabled ? 'enabled' : 'disabled'),
        ),
      ),
      '',
    ),
  )
}

/** What a publish did, in words: the tools published and those left out for want of a price. */
export function mcpSummary(answer) {
  const tools = answer.tools.map((x) => `${x.name} (${units(x.price, 6)} USDC)`).join(', ') || 'none'
  const left = answer.unpriced.length ? ` Not published (no price): ${answer.unpriced.join(', ')}.` : ''
  return `MCP server ${answer.url} published: ${tools} at ${answer.mcp_url}.${left}`
}

/** "get_quote: 0.0025" lines → {"get_quote": "2500"} (atomic units). */
function toolPrices(text) {
  const out = {}
  for (const line of text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)) {
    const i = line.lastIndexOf(':')
    if (i < 1)
      throw new ApiError(400, {
        message: `Price per tool: expected "tool_name: price" on each line, got "${line}"`,
        param: 'tool_prices',
      })
    const name = line.slice(0, i).trim()
    out[name] = atomicFromUsdc(`Price of ${name}`, line.slice(i + 1), {
      param: 'tool_prices',
      optional: false,
      positive: true,
    })
  }
  return out
}
