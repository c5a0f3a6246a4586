/* global confirm */
// Seller: namespaces, services (one receiver each) and endpoints — publish, change, enable or
// disable, test an upstream, unpublish.
import { api, seg } from './api.js'
import { endpointForm } from './endpoint-form.js'
import { errorSlot, field, h, secretPanel, table } from './dom.js'
import { units } from './format.js'
import { act, notify, onSubmit } from './ui.js'

export async function sellersView(show) {
  const reveal = h('div')
  const content = h('div')
  const page = {
    reveal,
    /** re-reads everything (after a change); the notice and a secret just shown stay */
    reload: async () => {
      const sellers = (await api('GET', '/v1/sellers')).data
      content.replaceChildren(...(sellers.length ? await Promise.all(sellers.map((s) => sellerSection(s, page))) : [h('p', { class: 'empty' }, 'You have not claimed a seller namespace yet.')]))
    },
  }
  await page.reload()
  show(
    h('h1', {}, 'Seller'),
    h('p', { class: 'hint' }, 'Publish paid endpoints: claim a namespace, add a service with the address it is paid at, then publish endpoints at ', h('code', {}, '<proxy>/<namespace>/<service>/<slug>'), '.'),
    claimForm(page),
    reveal,
    content,
  )
}

function claimForm(page) {
  const namespace = h('input', { id: 'claim-namespace', required: true, 'data-param': 'namespace', placeholder: 'e.g. acme-data', autocomplete: 'off' })
  const display = h('input', { id: 'claim-display-name', 'data-param': 'display_name', placeholder: 'e.g. Acme Data' })
  const claim = h('button', { type: 'submit' }, 'Claim namespace')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'inline',
      id: 'claim',
      onsubmit: onSubmit(claim, error, async () => {
        const s = await api('POST', '/v1/sellers', { namespace: namespace.value.trim(), ...(display.value.trim() && { display_name: display.value.trim() }) })
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
  const services = (await api('GET', path)).data
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
    blocks.length ? blocks : h('p', { class: 'empty' }, 'No services yet.'),
    h('div', { class: 'toolbar' }, open),
    slot,
  )
}

/** Creates a service (POST) or, given `service`, changes its display name, receiver and description (PATCH). */
function serviceForm({ id, path, service: svc, done, cancel }) {
  const name = !svc && h('input', { id: `${id}-name`, required: true, 'data-param': 'name', placeholder: 'e.g. prices', autocomplete: 'off' })
  const display = h('input', { id: `${id}-display-name`, 'data-param': 'display_name', value: svc?.display_name })
  const payTo = h('input', { id: `${id}-pay-to`, required: true, 'data-param': 'pay_to', placeholder: '0x…', value: svc?.pay_to, autocomplete: 'off' })
  const description = h('textarea', { id: `${id}-description`, rows: 2, maxlength: 2000, 'data-param': 'description' }, svc?.description ?? '')
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
        if (svc) return done(await api('PATCH', `${path}/${seg(svc.name)}`, body))
        if (body.description === null) delete body.description
        done(await api('POST', path, { name: name.value.trim(), ...body }))
      }),
    },
    h('h3', {}, svc ? `Edit service ${svc.name}` : 'Add a service'),
    name && field('Name', name, '3-40 of a-z, 0-9 and inner dashes; part of the URL'),
    field('Display name', display),
    field('Receiver (pay_to)', payTo, 'the address every endpoint of this service is paid at'),
    field('Description', description),
    error,
    h('div', { class: 'inline' }, submit, h('button', { type: 'button', class: 'plain', onclick: cancel }, 'Cancel')),
  )
}

async function serviceSection(s, svc, page) {
  const svcPath = `/v1/sellers/${seg(s.namespace)}/services`
  const path = `${svcPath}/${seg(svc.name)}/endpoints`
  const endpoints = (await api('GET', path)).data
  const slot = h('div')
  const key = `${s.namespace}-${svc.name}`
  const changed = async (message, answer) => {
    await page.reload()
    if (answer?.signing_secret) {
      page.reveal.replaceChildren(
        secretPanel(
          `Signing secret for ${s.namespace}/${svc.name}/${answer.slug}`,
          answer.signing_secret,
          'Your upstream checks the X-Tollgate-Signature header of each forwarded call with it (HMAC-SHA256, see the API docs). It is stored encrypted and never shown again.',
        ),
      )
    }
    notify(message, 'ok')
  }
  const openForm = (endpoint) => {
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
  const patch = (e, body, message) => (ev) => act(ev.currentTarget, async () => changed(message, await api('PATCH', `${path}/${seg(e.slug)}`, body)))
  const test = (e) => (ev) =>
    act(ev.currentTarget, async () => {
      const r = await api('POST', `${path}/${seg(e.slug)}/test`, {})
      if (r.ok) notify(`Upstream of ${e.slug} answered ${r.status} in ${r.latency_ms} ms.`, 'ok')
      else notify(`Upstream of ${e.slug} failed the test: ${r.error ?? `status ${r.status}`} (${r.latency_ms} ms).`)
    })
  const unpublish = (e) => (ev) => {
    if (!confirm(`Unpublish ${e.url}? Calls to it get 404 at once; the slug can be published again.`)) return
    act(ev.currentTarget, async () => {
      await api('DELETE', `${path}/${seg(e.slug)}`)
      await changed(`Endpoint ${e.slug} unpublished.`)
    })
  }
  const row = (e) =>
    h(
      'tr',
      { 'data-endpoint': e.slug },
      h('td', {}, h('code', {}, e.url)),
      h('td', {}, e.methods.join(', ')),
      h('td', {}, `${units(e.price, 6)} USDC`),
      h('td', {}, e.settlement_mode),
      h('td', {}, e.handler ? `hosted: ${e.handler}` : `upstream: ${e.upstream_url}`),
      h('td', { class: e.enabled ? 'active' : 'revoked' }, e.enabled ? 'enabled' : 'disabled'),
      h(
        'td',
        { class: 'actions' },
        h('button', { type: 'button', class: 'plain', onclick: () => openForm(e) }, 'Edit'),
        e.enabled
          ? h('button', { type: 'button', class: 'plain', onclick: patch(e, { enabled: false }, `Endpoint ${e.slug} disabled: the proxy answers 404 for it.`) }, 'Disable')
          : h('button', { type: 'button', class: 'plain', onclick: patch(e, { enabled: true }, `Endpoint ${e.slug} enabled.`) }, 'Enable'),
        e.upstream_url && h('button', { type: 'button', class: 'plain', onclick: test(e) }, 'Test'),
        h('button', { type: 'button', class: 'danger', onclick: unpublish(e) }, 'Unpublish'),
      ),
    )
  const toggle = svc.enabled
    ? h('button', { type: 'button', class: 'plain', onclick: (ev) => act(ev.currentTarget, async () => changed(`Service ${svc.name} disabled: its endpoints answer 404.`, await api('PATCH', `${svcPath}/${seg(svc.name)}`, { enabled: false }))) }, 'Disable service')
    : h('button', { type: 'button', class: 'plain', onclick: (ev) => act(ev.currentTarget, async () => changed(`Service ${svc.name} enabled.`, await api('PATCH', `${svcPath}/${seg(svc.name)}`, { enabled: true }))) }, 'Enable service')
  const edit = h('button', { type: 'button', class: 'plain' }, 'Edit service')
  edit.addEventListener('click', () =>
    slot.replaceChildren(serviceForm({ id: `edit-service-${key}`, path: svcPath, service: svc, done: (x) => changed(`Service ${x.name} saved.`), cancel: () => slot.replaceChildren() })),
  )
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete service')
  remove.addEventListener('click', () => {
    if (!confirm(`Delete the service ${svc.name} and its ${endpoints.length} endpoint(s)? Their URLs answer 404 at once.`)) return
    act(remove, async () => {
      await api('DELETE', `${svcPath}/${seg(svc.name)}`)
      await changed(`Service ${svc.name} deleted.`)
    })
  })
  return h(
    'section',
    { class: 'service', id: `service-${key}` },
    h('h3', {}, `${svc.display_name} (${svc.name})${svc.enabled ? '' : ' — disabled'}`),
    h('p', {}, 'Receiver (pay_to): ', h('code', {}, svc.pay_to)),
    svc.description && h('p', {}, svc.description),
    table(['URL', 'Methods', 'Price', 'Settlement', 'Target', 'Status', ''], endpoints.map(row), 'No endpoints published.'),
    h('div', { class: 'toolbar' }, h('button', { type: 'button', onclick: () => openForm() }, 'Publish an endpoint'), edit, toggle, remove),
    slot,
  )
}
