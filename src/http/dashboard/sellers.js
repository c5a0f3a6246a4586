// Seller: namespaces, services (one receiver each) and endpoints — publish, change, enable or
// disable, test an upstream, unpublish.
import { api, seg } from './api.js'
import { endpointForm } from './endpoint-form.js'
import { copyButton, emptyState, errorSlot, field, h, revealSecret, secretPanel, table } from './dom.js'
import { units } from './format.js'
import { mcpSummary, mcpTools, mcpToolsTable, mcpUpstreamForm } from './mcp-upstream.js'
import { act, notify, onSubmit } from './ui.js'

export async function sellersView(show) {
  const reveal = h('div')
  const content = h('div')
  let agents
  let stats = new Map()
  const page = {
    reveal,
    /** the user's agents, read once per reload (a namespace may link to one of them) */
    agents: () => agents,
    /** each endpoint's paid calls and revenue over the last 30 days (GET /v1/insights), by endpoint id */
    stats: (id) => stats.get(id),
    /** re-reads everything (after a change); the notice and a secret just shown stay */
    reload: async () => {
      agents = api('GET', '/v1/agents').then((r) => r.data)
      // only a namespace's section awaits it: with none (or when the sellers call fails first) its
      // error would go unhandled; the sellers call reports the same failure
      agents.catch(() => {})
      const [list, insights] = await Promise.all([
        api('GET', '/v1/sellers'),
        api('GET', '/v1/insights').catch(() => null),
      ])
      stats = new Map((insights?.revenue ?? []).map((e) => [e.endpoint_id, e]))
      const sellers = list.data
      content.replaceChildren(
        ...(sellers.length
          ? await Promise.all(sellers.map((s) => sellerSection(s, page)))
          : [
              emptyState(
                'You have not claimed a seller namespace yet.',
                'Claim one above (e.g. acme-data): your endpoints are published under it, and buyers pay you there.',
              ),
            ]),
      )
    },
  }
  await page.reload()
  show(
    h('h1', {}, 'Seller'),
    h(
      'p',
      { class: 'hint' },
      'Publish paid endpoints: claim a namespace, add a service with the address it is paid at, then publish endpoints at ',
      h('code', {}, '<proxy>/<namespace>/<service>/<slug>'),
      '.',
    ),
    claimForm(page),
    reveal,
    content,
  )
}

function claimForm(page) {
  const namespace = h('input', {
    id: 'claim-namespace',
    required: true,
    'data-param': 'namespace',
    placeholder: 'e.g. acme-data',
    autocomplete: 'off',
  })
  const display = h('input', { id: 'claim-display-name', 'data-param': 'display_name', placeholder: 'e.g. Acme Data' })
  const claim = h('button', { type: 'submit' }, 'Claim namespace')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'inline',
      id: 'claim',
      onsubmit: onSubmit(claim, error, async () => {
        const s = await api('POST', '/v1/sellers', {
          namespace: namespace.value.trim(),
          ...(display.value.trim() && { display_name: display.value.trim() }),
        })
        namespace.value = display.value = ''
        await page.reload()
        notify(`Namespace ${s.namespace} is yours.`, 'ok')
      }),
    },
    h('label', { for: 'claim-namespace' }, 'New namespace'),
    namespace,
    h('label', { for: 'claim-display-name' }, 'Display name'),
    display,
    claim,
    error,
  )
}

async function sellerSection(s, page) {
  const path = `/v1/sellers/${seg(s.namespace)}/services`
  const [services, agents] = await Promise.all([api('GET', path).then((r) => r.data), page.agents()])
  const blocks = await Promise.all(services.map((svc) => serviceSection(s, svc, page)))
  const slot = h('div')
  const open = h('button', { type: 'button', class: 'plain' }, 'Add a service')
  open.addEventListener('click', () =>
    slot.replaceChildren(
      serviceForm({
        id: `add-service-${s.namespace}`,
        path,
        done: async (svc) => {
          await page.reload()
          notify(`Service ${svc.name} created; it is paid at ${svc.pay_to}.`, 'ok')
        },
        cancel: () => slot.replaceChildren(),
      }),
    ),
  )
  return h(
    'section',
    { class: 'seller', id: `seller-${s.namespace}` },
    h('h2', {}, `${s.display_name} (namespace ${s.namespace})`),
    agentLink(s, agents, page),
    blocks.length
      ? blocks
      : emptyState(
          'No services yet.',
          'Add a service below: it groups your endpoints and names the address you are paid at.',
        ),
    h('div', { class: 'toolbar' }, open),
    slot,
  )
}

/** Links the namespace to one of the user's agents: its marketplace entries then show that agent (platform_agent_address). */
function agentLink(s, agents, page) {
  const id = `agent-link-${s.namespace}`
  const select = h(
    'select',
    { id: `${id}-select`, 'data-param': 'agent_address' },
    h('option', { value: '' }, 'none'),
    ...agents.map((a) =>
      h('option', { value: a.address, selected: a.address === s.agent_address }, `${a.name} (${a.address})`),
    ),
  )
  const save = h('button', { type: 'submit', class: 'plain' }, 'Save agent')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'inline',
      id,
      onsubmit: onSubmit(save, error, async () => {
        const x = await api('PATCH', `/v1/sellers/${seg(s.namespace)}`, { agent_address: select.value || null })
        await page.reload()
        notify(
          x.agent_address
            ? `Namespace ${s.namespace} is listed as your agent ${x.agent_address}.`
            : `Namespace ${s.namespace} is no longer linked to an agent.`,
          'ok',
        )
      }),
    },
    h('label', { for: `${id}-select` }, 'Platform agent'),
    select,
    save,
    error,
  )
}

/**
 * Creates a service (POST) or, given `service`, changes it (PATCH): display name, receiver,
 * description, and how it appears in the marketplace (category, tags, links).
 */
function serviceForm({ id, path, service: svc, done, cancel }) {
  const name =
    !svc &&
    h('input', {
      id: `${id}-name`,
      required: true,
      'data-param': 'name',
      placeholder: 'e.g. prices',
      autocomplete: 'off',
    })
  const display = h('input', { id: `${id}-display-name`, 'data-param': 'display_name', value: svc?.display_name })
  const payTo = h('input', {
    id: `${id}-pay-to`,
    required: true,
    'data-param': 'pay_to',
    placeholder: '0x…',
    value: svc?.pay_to,
    autocomplete: 'off',
  })
  const description = h(
    'textarea',
    { id: `${id}-description`, rows: 2, maxlength: 2000, 'data-param': 'description' },
    svc?.description ?? '',
  )
  const category = h('input', {
    id: `${id}-category`,
    'data-param': 'category',
    placeholder: 'Other',
    value: svc?.category,
  })
  const tags = h('input', {
    id: `${id}-tags`,
    'data-param': 'tags',
    placeholder: 'e.g. prices, base',
    value: svc?.tags?.join(', '),
  })
  const links = ['website_url', 'docs_url', 'logo_url'].map((f) =>
    h('input', {
      id: `${id}-${f.replace('_', '-')}`,
      type: 'url',
      'data-param': f,
      placeholder: 'https://…',
      value: svc?.[f] ?? '',
    }),
  )
  const submit = h('button', { type: 'submit' }, svc ? 'Save service' : 'Create service')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'card',
      id,
      onsubmit: onSubmit(submit, error, async () => {
        const body = { pay_to: payTo.value.trim(), description: description.value.trim() || null }
        if (display.value.trim()) body.display_name = display.value.trim()
        if (category.value.trim()) body.category = category.value.trim()
        body.tags = tags.value
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
        for (const l of links) body[l.dataset.param] = l.value.trim() || null
        if (svc) return done(await api('PATCH', `${path}/${seg(svc.name)}`, body))
        // a new service: leave out what was not filled in
        for (const k of Object.keys(body)) if (body[k] === null) delete body[k]
        done(await api('POST', path, { name: name.value.trim(), ...body }))
      }),
    },
    h('h3', {}, svc ? `Edit service ${svc.name}` : 'Add a service'),
    name && field('Name', name, '3-40 of a-z, 0-9 and inner dashes; part of the URL'),
    field('Display name', display),
    field('Receiver (pay_to)', payTo, 'the address every endpoint of this service is paid at'),
    field('Description', description),
    field(
      'Marketplace category',
      category,
      svc
        ? 'e.g. Crypto, Search, Data; left empty, it stays as it is'
        : 'e.g. Crypto, Search, Data; Other if left empty',
    ),
    field('Tags', tags, 'comma-separated; the marketplace search matches them'),
    field('Website', links[0]),
    field('Documentation', links[1]),
    field('Logo URL', links[2]),
    error,
    h('div', { class: 'inline' }, submit, h('button', { type: 'button', class: 'plain', onclick: cancel }, 'Cancel')),
  )
}

/**
 * One service of namespace `s`: its receiver and marketplace entry, its endpoints (a row each,
 * with their actions), its MCP tools, and the buttons that publish, change or remove.
 */
async function serviceSection(s, svc, page) {
  const svcPath = `/v1/sellers/${seg(s.namespace)}/services`
  const path = `${svcPath}/${seg(svc.name)}/endpoints`
  const endpoints = (await api('GET', path)).data
  const slot = h('div')
  const key = `${s.namespace}-${svc.name}`
  const service = { s, svc, page, svcPath, path, endpoints, slot, key }
  service.changed = (message, answer) => afterChange(service, message, answer)
  return h(
    'section',
    { class: 'service', id: `service-${key}` },
    h('h3', {}, `${svc.display_name} (${svc.name})${svc.enabled ? '' : ' — disabled'}`),
    h('p', {}, 'Receiver (pay_to): ', h('code', {}, svc.pay_to)),
    mcpEndpoint(svc),
    svc.description && h('p', {}, svc.description),
    h(
      'p',
      { class: 'hint' },
      `Marketplace: ${svc.category}${svc.tags.length ? ` · tags ${svc.tags.join(', ')}` : ''}${svc.website_url ? ` · ${svc.website_url}` : ''}`,
    ),
    table(
      ['URL', 'Methods', 'Price', 'Settlement', 'Target', 'Status', 'Calls (30 days)', 'Revenue (30 days)', ''],
      endpoints.map((e) => endpointRow(service, e)),
      emptyState(
        'No endpoints published.',
        'Publish one below: a price per call and the URL of your API or a hosted handler.',
      ),
    ),
    mcpToolsTable(mcpTools(endpoints)),
    h(
      'div',
      { class: 'toolbar' },
      h('button', { type: 'button', onclick: () => openEndpointForm(service) }, 'Publish an endpoint'),
      h(
        'button',
        { type: 'button', class: 'plain', onclick: () => openMcpForm(service) },
        mcpTools(endpoints).length ? 'Update MCP server' : 'Publish an MCP server',
      ),
      editServiceButton(service),
      serviceToggle(service),
      deleteServiceButton(service),
    ),
    slot,
  )
}

/**
 * After a change to the service or one of its endpoints: re-reads the page, shows an endpoint's
 * new signing secret when the answer carries one, then `message`.
 */
async function afterChange({ s, svc, page }, message, answer) {
  await page.reload()
  if (answer?.signing_secret) {
    revealSecret(
      page.reveal,
      secretPanel(
        `Signing secret for ${s.namespace}/${svc.name}/${answer.slug}`,
        answer.signing_secret,
        'Your upstream checks the X-Tollgate-Signature header of each forwarded call with it (HMAC-SHA256, see the API docs). It is stored encrypted and never shown again.',
      ),
    )
  }
  notify(message, 'ok')
}

/** Opens the endpoint form under the service: publishing a new endpoint, or changing `endpoint`. */
function openEndpointForm({ page, slot, key, path, changed }, endpoint) {
  page.reveal.replaceChildren()
  slot.replaceChildren(
    endpointForm({
      id: endpoint ? `edit-${key}-${endpoint.slug}` : `publish-${key}`,
      path,
      endpoint,
      done: (e) => changed(endpoint ? `Endpoint ${e.slug} saved.` : `Endpoint ${e.slug} published at ${e.url}.`, e),
      cancel: () => slot.replaceChildren(),
    }),
  )
  slot.querySelector('input, textarea')?.focus()
}

/** Opens the form that publishes (or updates) the service's upstream MCP server. */
function openMcpForm({ s, svc, page, slot, key, svcPath, endpoints }) {
  page.reveal.replaceChildren()
  slot.replaceChildren(
    mcpUpstreamForm({
      id: `mcp-${key}`,
      path: `${svcPath}/${seg(svc.name)}`,
      tools: mcpTools(endpoints),
      done: async (answer) => {
        await page.reload()
        if (answer.signing_secret)
          revealSecret(
            page.reveal,
            secretPanel(
              `Signing secret for the MCP server of ${s.namespace}/${svc.name}`,
              answer.signing_secret,
              'Your MCP server checks the X-Tollgate-Signature header of every request Tollgate forwards with it (HMAC-SHA256 over the method, path and body; see the API docs). One secret for the server, kept when you publish it again; it is stored encrypted and never shown again.',
            ),
          )
        notify(mcpSummary(answer), 'ok')
      },
      cancel: () => slot.replaceChildren(),
    }),
  )
  slot.querySelector('input')?.focus()
}

/** An endpoint's row: where it is, its price and target, its last 30 days, and its actions. */
function endpointRow(service, e) {
  const stats = service.page.stats(e.id)
  return h(
    'tr',
    { 'data-endpoint': e.slug },
    h('td', { class: 'url' }, h('code', {}, e.url)),
    h('td', {}, e.methods.join(', ')),
    h('td', {}, `${units(e.price, 6)} USDC`),
    h('td', {}, e.settlement_mode),
    h(
      'td',
      {},
      e.handler
        ? `hosted: ${e.handler}`
        : e.mcp_tool
          ? `MCP tool ${e.mcp_tool}: ${e.upstream_url}`
          : `upstream: ${e.upstream_url}`,
    ),
    h('td', { class: e.enabled ? 'active' : 'revoked' }, e.enabled ? 'enabled' : 'disabled'),
    h('td', { class: 'calls' }, String(stats?.calls_total ?? 0)),
    h('td', { class: 'revenue' }, `${units(stats?.total ?? '0', 6)} USDC`),
    h('td', { class: 'actions' }, endpointActions(service, e)),
  )
}

/** An endpoint's buttons: Edit, Disable or Enable, Test (an upstream only) and Unpublish. */
function endpointActions(service, e) {
  const { path, changed } = service
  const patch = (body, message) => (ev) =>
    act(ev.currentTarget, async () => changed(message, await api('PATCH', `${path}/${seg(e.slug)}`, body)))
  const test = (ev) =>
    act(ev.currentTarget, async () => {
      const r = await api('POST', `${path}/${seg(e.slug)}/test`, {})
      if (r.ok) notify(`Upstream of ${e.slug} answered ${r.status} in ${r.latency_ms} ms.`, 'ok')
      else notify(`Upstream of ${e.slug} failed the test: ${r.error ?? `status ${r.status}`} (${r.latency_ms} ms).`)
    })
  const unpublish = (ev) => {
    if (!confirm(`Unpublish ${e.url}? Calls to it get 404 at once; the slug can be published again.`)) return
    act(ev.currentTarget, async () => {
      await api('DELETE', `${path}/${seg(e.slug)}`)
      await changed(`Endpoint ${e.slug} unpublished.`)
    })
  }
  return [
    h('button', { type: 'button', class: 'plain', onclick: () => openEndpointForm(service, e) }, 'Edit'),
    e.enabled
      ? h(
          'button',
          {
            type: 'button',
            class: 'plain',
            onclick: patch({ enabled: false }, `Endpoint ${e.slug} disabled: the proxy answers 404 for it.`),
          },
          'Disable',
        )
      : h(
          'button',
          { type: 'button', class: 'plain', onclick: patch({ enabled: true }, `Endpoint ${e.slug} enabled.`) },
          'Enable',
        ),
    e.upstream_url && h('button', { type: 'button', class: 'plain', onclick: test }, 'Test'),
    h('button', { type: 'button', class: 'danger', onclick: unpublish }, 'Unpublish'),
  ]
}

/** Disables the service (its endpoints then answer 404) or enables it again. */
function serviceToggle({ svc, svcPath, changed }) {
  const enable = !svc.enabled
  return h(
    'button',
    {
      type: 'button',
      class: 'plain',
      onclick: (ev) =>
        act(ev.currentTarget, async () =>
          changed(
            enable ? `Service ${svc.name} enabled.` : `Service ${svc.name} disabled: its endpoints answer 404.`,
            await api('PATCH', `${svcPath}/${seg(svc.name)}`, { enabled: enable }),
          ),
        ),
    },
    enable ? 'Enable service' : 'Disable service',
  )
}

/** Opens the service form on the service. */
function editServiceButton({ svc, svcPath, slot, key, changed }) {
  const edit = h('button', { type: 'button', class: 'plain' }, 'Edit service')
  edit.addEventListener('click', () =>
    slot.replaceChildren(
      serviceForm({
        id: `edit-service-${key}`,
        path: svcPath,
        service: svc,
        done: (x) => changed(`Service ${x.name} saved.`),
        cancel: () => slot.replaceChildren(),
      }),
    ),
  )
  return edit
}

/** Deletes the service and its endpoints, once confirmed. */
function deleteServiceButton({ svc, svcPath, endpoints, changed }) {
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete service')
  remove.addEventListener('click', () => {
    if (
      !confirm(`Delete the service ${svc.name} and its ${endpoints.length} endpoint(s)? Their URLs answer 404 at once.`)
    )
      return
    act(remove, async () => {
      await api('DELETE', `${svcPath}/${seg(svc.name)}`)
      await changed(`Service ${svc.name} deleted.`)
    })
  })
  return remove
}

/** The service as a paid MCP server: its endpoints (and an upstream MCP server's tools) as tools. */
function mcpEndpoint(svc) {
  const code = h('code', { class: 'mcp-url' }, svc.mcp_url)
  return h('p', {}, 'MCP endpoint: ', code, ' ', copyButton(svc.mcp_url, code))
}
