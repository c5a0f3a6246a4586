/* global document, window, location, navigator, fetch, confirm, getSelection, Node, URLSearchParams */
// Tollgate dashboard: one plain ES module, no build step. It calls the user API (/v1) with the
// session cookie and renders with DOM APIs only: API data never goes through innerHTML.

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const notice = document.getElementById('notice')
const who = document.getElementById('who')

/** An answer that is not 2xx: its status and the API's `{code, message}`. */
class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `the server answered ${status}`)
    this.status = status
    this.code = body?.code
  }
}

/** Same-origin fetch of the user API with the session cookie; JSON in and out; throws ApiError. */
async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json' } }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let res
  try {
    res = await fetch(path, init)
  } catch {
    throw new ApiError(0, { message: 'the server did not answer; check the connection and retry' })
  }
  const data = res.status === 204 ? null : await res.json().catch(() => null)
  if (!res.ok) throw new ApiError(res.status, data)
  return data
}

/** createElement with attributes, `on…` listeners and children; strings become text nodes. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat(2)) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c))
  return el
}

function table(headers, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty)
  return h('table', {}, h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))), h('tbody', {}, rows))
}

const time = (iso) => (iso ? iso.slice(0, 19).replace('T', ' ') + ' UTC' : '—')
const short = (hex) => (hex ? h('code', { title: hex }, `${hex.slice(0, 6)}…${hex.slice(-4)}`) : '—')

/** "1500000", 6 → "1.5": integer strings only, so no float rounding. */
function units(value, decimals) {
  const s = String(value).padStart(decimals + 1, '0')
  const frac = s.slice(-decimals).replace(/0+$/, '')
  return frac ? `${s.slice(0, -decimals)}.${frac}` : s.slice(0, -decimals)
}
const usdc = (atomic) => (atomic === null ? 'no cap' : `${units(atomic, 6)} USDC`)

/** "0.25" → "250000" atomic units; empty → null (no cap). */
function atomicFromUsdc(label, text) {
  const s = text.trim()
  if (s === '') return null
  const m = /^(\d{1,30})(?:\.(\d{1,6}))?$/.exec(s)
  if (!m) throw new ApiError(400, { message: `${label}: expected a USDC amount such as 5 or 0.25 (at most 6 decimals), or nothing for no cap` })
  return (BigInt(m[1]) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0'))).toString()
}

function notify(message, kind = 'error') {
  notice.textContent = message
  notice.className = kind
  notice.hidden = !message
}

// --- routing -------------------------------------------------------------------------------

let returnTo = '#/keys'
let current = 0

function go(hash) {
  if (location.hash === hash) route()
  else location.hash = hash
}

/** An error from a view or an action: 401 goes back to the login screen, anything else is shown. */
function fail(err) {
  if (err instanceof ApiError && err.status === 401) {
    if (location.hash !== '#/login') returnTo = location.hash || '#/keys'
    who.textContent = ''
    return go('#/login')
  }
  notify(err.message)
}

/** Runs a button's or form's action: busy while it runs, its error shown. */
async function act(button, fn) {
  button.disabled = true
  button.setAttribute('aria-busy', 'true')
  notify('')
  try {
    await fn()
  } catch (err) {
    fail(err)
  } finally {
    button.disabled = false
    button.removeAttribute('aria-busy')
  }
}

async function route() {
  const hash = location.hash || '#/keys'
  const found = routes.map(([re, view]) => [re.exec(hash), view]).find(([m]) => m)
  if (!found) return go('#/keys')
  const [match, view] = found
  const seq = ++current
  // a slow answer for a screen the user has already left must not replace the current one
  const show = (...nodes) => seq === current && main.replaceChildren(...nodes.flat(2))
  nav.hidden = view === loginView
  for (const a of nav.querySelectorAll('a[href^="#/"]')) {
    if (hash.startsWith(a.getAttribute('href'))) a.setAttribute('aria-current', 'page')
    else a.removeAttribute('aria-current')
  }
  notify('')
  show(h('p', { class: 'loading', role: 'status' }, 'Loading…'))
  try {
    await view(show, ...match.slice(1))
  } catch (err) {
    if (seq !== current) return
    if (!(err instanceof ApiError && err.status === 401)) show(h('p', { class: 'empty' }, 'This page could not be loaded.'))
    fail(err)
  }
}

// --- screens -------------------------------------------------------------------------------

async function loginView(show) {
  const email = h('input', { id: 'email', type: 'email', required: true, autocomplete: 'username' })
  const password = h('input', { id: 'password', type: 'password', required: true, autocomplete: 'current-password' })
  const error = h('p', { id: 'login-error', class: 'error', role: 'alert', hidden: true })
  const submit = h('button', { type: 'submit' }, 'Log in')
  const form = h(
    'form',
    {
      class: 'card login',
      onsubmit: (e) => {
        e.preventDefault()
        error.hidden = true
        // every failure, 401 included, stays on this screen with the API's message
        act(submit, () =>
          api('POST', '/v1/session', { email: email.value, password: password.value }).then(
            (session) => {
              who.textContent = session.user.email
              go(returnTo)
            },
            (err) => {
              error.textContent = err.message
              error.hidden = false
              password.value = ''
              password.focus()
            },
          ),
        )
      },
    },
    h('h1', {}, 'Log in'),
    h('label', { for: 'email' }, 'Email'),
    email,
    h('label', { for: 'password' }, 'Password'),
    password,
    error,
    submit,
    h('p', { class: 'hint' }, 'No account yet? An operator creates one with ', h('code', {}, 'tollgate users create --email <email>'), '.'),
  )
  show(form)
  email.focus()
}

async function keysView(show) {
  const list = h('div')
  const reveal = h('div')
  const load = async () => list.replaceChildren(table(['Name', 'Key', 'Created', 'Last used', 'Status', ''], (await api('GET', '/v1/api-keys')).data.map(keyRow), 'No API keys yet.'))
  const name = h('input', { id: 'key-name', required: true, maxlength: 100, placeholder: 'e.g. ci-deploy' })
  const create = h('button', { type: 'submit' }, 'Create')
  const form = h(
    'form',
    {
      class: 'inline',
      hidden: true,
      onsubmit: (e) => {
        e.preventDefault()
        act(create, async () => {
          const key = await api('POST', '/v1/api-keys', { name: name.value })
          form.hidden = true
          name.value = ''
          reveal.replaceChildren(secretPanel(key))
          await load()
        })
      },
    },
    h('label', { for: 'key-name' }, 'Key name'),
    name,
    create,
    h('button', { type: 'button', class: 'plain', onclick: () => (form.hidden = true) }, 'Cancel'),
  )
  const open = h('button', { type: 'button' }, 'Create API key')
  open.addEventListener('click', () => {
    form.hidden = false
    reveal.replaceChildren() // a secret shown earlier goes away for good
    name.focus()
  })
  await load()
  show(
    h('h1', {}, 'API Keys'),
    h('p', { class: 'hint' }, 'Keys authenticate scripts and CI jobs on the user API (', h('code', {}, 'Authorization: Bearer <key>'), '). Revoking a key takes effect at once.'),
    h('div', { class: 'toolbar' }, open),
    form,
    reveal,
    list,
  )
}

/** The new key's secret, shown this once: the API keeps only a hash of it. */
function secretPanel(key) {
  const secret = h('code', { id: 'new-secret', class: 'secret' }, key.secret)
  const copy = h('button', { type: 'button' }, 'Copy')
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(key.secret)
      copy.textContent = 'Copied'
    } catch {
      // no clipboard API outside a secure context: select it for Ctrl+C
      getSelection().selectAllChildren(secret)
      copy.textContent = 'Selected: press Ctrl+C'
    }
  })
  const panel = h(
    'section',
    { class: 'secret-panel' },
    h('h2', {}, `New API key "${key.name}"`),
    h('p', {}, h('strong', {}, 'Copy this key now: you will not see it again.'), ' Only a hash is stored, so it cannot be shown or recovered later.'),
    h('div', { class: 'secret-row' }, secret, copy),
    h('button', { type: 'button', class: 'plain', onclick: () => panel.remove() }, 'Done, I have stored it'),
  )
  return panel
}

function keyRow(k) {
  const revoke =
    !k.revoked_at &&
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: () => {
          if (!confirm(`Revoke the key "${k.name}" (${k.prefix}…${k.last4})? Every call with it will get 401 at once.`)) return
          act(revoke, async () => row.replaceWith(keyRow(await api('DELETE', `/v1/api-keys/${encodeURIComponent(k.id)}`))))
        },
      },
      'Revoke',
    )
  const row = h(
    'tr',
    { 'data-key': k.id },
    h('td', {}, k.name),
    h('td', {}, h('code', {}, `${k.prefix}…${k.last4}`)),
    h('td', {}, time(k.created_at)),
    h('td', {}, k.last_used_at ? time(k.last_used_at) : 'never'),
    h('td', { class: k.revoked_at ? 'revoked' : 'active' }, k.revoked_at ? `revoked ${time(k.revoked_at)}` : 'active'),
    h('td', {}, revoke),
  )
  return row
}

const capsText = (c) => `per transaction ${usdc(c.per_transaction)} · daily ${usdc(c.daily)} · monthly ${usdc(c.monthly)}`

async function agentsView(show) {
  const list = h('div')
  const row = (a) => h('tr', {}, h('td', {}, h('a', { href: `#/agents/${a.address}` }, a.name)), h('td', {}, h('code', {}, a.address)), h('td', {}, capsText(a.spend_caps)), h('td', {}, time(a.created_at)))
  const load = async () => list.replaceChildren(table(['Name', 'Address', 'Spend caps', 'Created'], (await api('GET', '/v1/agents')).data.map(row), 'No agents yet.'))
  const name = h('input', { id: 'agent-name', required: true, maxlength: 100, placeholder: 'e.g. research-bot' })
  const create = h('button', { type: 'submit' }, 'Create agent')
  const form = h(
    'form',
    {
      class: 'inline',
      onsubmit: (e) => {
        e.preventDefault()
        act(create, async () => {
          const a = await api('POST', '/v1/agents', { name: name.value })
          name.value = ''
          await load()
          notify(`Agent "${a.name}" created with wallet ${a.address}.`, 'ok')
        })
      },
    },
    h('label', { for: 'agent-name' }, 'New agent'),
    name,
    create,
  )
  await load()
  show(h('h1', {}, 'Agents'), h('p', { class: 'hint' }, 'Each agent pays from its own custodial wallet, within its spend caps.'), form, list)
}

async function agentView(show, address) {
  const base = `/v1/agents/${address}`
  const agent = await api('GET', base)
  const balance = h('p', { id: 'balance', role: 'status' }, 'Loading balance…')
  api('GET', `${base}/balance`).then(
    (b) => balance.replaceChildren(`${units(b.usdc, 6)} USDC · ${units(b.eth, 18)} ETH (block ${b.block_number})`),
    (err) => {
      if (!balance.isConnected) return
      if (err.status === 401) return fail(err)
      balance.className = 'error'
      balance.textContent = err.status === 503 ? `Balance unavailable right now: ${err.message}` : err.message
    },
  )
  const fields = [
    ['per_transaction', 'Per transaction'],
    ['daily', 'Daily'],
    ['monthly', 'Monthly'],
  ]
  const shown = (v) => (v === null ? '' : units(v, 6))
  const inputs = Object.fromEntries(fields.map(([k]) => [k, h('input', { id: `cap-${k}`, inputmode: 'decimal', placeholder: 'no cap', value: shown(agent.spend_caps[k]) })]))
  const save = h('button', { type: 'submit' }, 'Save spend caps')
  const form = h(
    'form',
    {
      class: 'card',
      onsubmit: (e) => {
        e.preventDefault()
        act(save, async () => {
          const body = Object.fromEntries(fields.map(([k, label]) => [k, atomicFromUsdc(label, inputs[k].value)]))
          const caps = await api('PUT', `${base}/spend-caps`, body)
          for (const [k] of fields) inputs[k].value = shown(caps[k])
          notify('Spend caps saved.', 'ok')
        })
      },
    },
    h('h2', {}, 'Spend caps'),
    h('p', { class: 'hint' }, 'In USDC; leave a field empty for no cap. Every payment from this agent is checked against them.'),
    fields.map(([k, label]) => [h('label', { for: `cap-${k}` }, label), inputs[k]]),
    save,
  )
  show(
    h('p', {}, h('a', { href: '#/agents' }, '← Agents')),
    h('h1', {}, agent.name),
    h('dl', {}, h('dt', {}, 'Wallet address'), h('dd', {}, h('code', {}, agent.address)), h('dt', {}, 'Created'), h('dd', {}, time(agent.created_at))),
    h('h2', {}, 'Balance'),
    balance,
    form,
  )
}

async function transactionsView(show) {
  const role = h('select', { id: 'tx-role' }, h('option', { value: '' }, 'all'), h('option', { value: 'buyer' }, 'buyer: paid by my agents'), h('option', { value: 'seller' }, 'seller: paid to my endpoints'))
  const from = h('input', { id: 'tx-from', type: 'date' })
  const list = h('div')
  const exports = h('p', { class: 'exports' })
  const query = (extra) => {
    const q = new URLSearchParams(extra)
    if (role.value) q.set('role', role.value)
    if (from.value) q.set('from', `${from.value}T00:00:00Z`)
    return q
  }
  const download = (path, format) => h('a', { href: `${path}?${query({ format })}`, download: '' }, `${path.slice(4)}.${format}`)
  const row = (t) =>
    h('tr', {}, h('td', {}, time(t.created_at)), h('td', {}, t.status), h('td', {}, `${units(t.value, 6)} USDC`), h('td', {}, short(t.payer)), h('td', {}, short(t.pay_to)), h('td', {}, `${t.method} ${t.resource}`), h('td', {}, short(t.tx_hash)))
  // newest first; the export links keep the API's default (oldest first, a sync order)
  async function load(cursor) {
    const page = await api('GET', `/v1/transactions?${query({ limit: '20', order: 'desc', ...(cursor && { cursor }) })}`)
    const links = [['/v1/transactions', 'csv'], ['/v1/transactions', 'ndjson'], ['/v1/payment-events', 'csv'], ['/v1/payment-events', 'ndjson']]
    exports.replaceChildren('Download the whole filtered history: ', ...links.flatMap(([p, f], i) => [i ? ' · ' : '', download(p, f)]))
    list.replaceChildren(
      table(['Created', 'Status', 'Amount', 'Payer', 'Pay to', 'Resource', 'Transaction'], page.data.map(row), cursor ? 'No older transactions.' : 'No transactions yet.'),
      h(
        'div',
        { class: 'toolbar' },
        cursor && h('button', { type: 'button', class: 'plain', onclick: (e) => act(e.currentTarget, () => load()) }, 'Newest'),
        page.has_more && h('button', { type: 'button', onclick: (e) => act(e.currentTarget, () => load(page.next_cursor)) }, 'Older'),
      ),
    )
  }
  const apply = h('button', { type: 'submit' }, 'Apply')
  const filters = h(
    'form',
    {
      class: 'inline',
      onsubmit: (e) => {
        e.preventDefault()
        act(apply, () => load())
      },
    },
    h('label', { for: 'tx-role' }, 'Role'),
    role,
    h('label', { for: 'tx-from' }, 'From (UTC)'),
    from,
    apply,
  )
  await load()
  show(h('h1', {}, 'Transactions'), h('p', { class: 'hint' }, 'Payments by your agents and to your endpoints, newest first, 20 per page.'), filters, exports, list)
}

async function sellersView(show) {
  const sellers = (await api('GET', '/v1/sellers')).data
  const endpointRow = (e) =>
    h('tr', {}, h('td', {}, h('code', {}, e.url)), h('td', {}, e.methods.join(', ')), h('td', {}, `${units(e.price, 6)} USDC`), h('td', {}, e.handler ? `hosted: ${e.handler}` : `upstream: ${e.upstream_url}`), h('td', {}, e.enabled ? 'yes' : 'no'))
  const sections = await Promise.all(
    sellers.map(async (s) => {
      const ns = `/v1/sellers/${encodeURIComponent(s.namespace)}/services`
      const services = (await api('GET', ns)).data
      const blocks = await Promise.all(
        services.map(async (svc) => {
          const endpoints = (await api('GET', `${ns}/${encodeURIComponent(svc.name)}/endpoints`)).data
          return h(
            'section',
            { class: 'service' },
            h('h3', {}, `${svc.display_name} (${svc.name})${svc.enabled ? '' : ' — disabled'}`),
            h('p', {}, 'Receiver (pay_to): ', h('code', {}, svc.pay_to)),
            svc.description && h('p', {}, svc.description),
            table(['URL', 'Methods', 'Price', 'Target', 'Enabled'], endpoints.map(endpointRow), 'No endpoints published.'),
          )
        }),
      )
      return h('section', { class: 'seller' }, h('h2', {}, `${s.display_name} (namespace ${s.namespace})`), blocks.length ? blocks : h('p', { class: 'empty' }, 'No services yet.'))
    }),
  )
  show(
    h('h1', {}, 'Seller'),
    h('p', { class: 'hint' }, 'Your namespaces, services and endpoints (read-only here; publish through the API under /v1/sellers).'),
    sections.length ? sections : h('p', { class: 'empty' }, 'You have not claimed a seller namespace yet.'),
  )
}

const routes = [
  [/^#\/login$/, loginView],
  [/^#\/keys$/, keysView],
  [/^#\/agents$/, agentsView],
  [/^#\/agents\/(0x[0-9a-fA-F]{40})$/, agentView],
  [/^#\/transactions$/, transactionsView],
  [/^#\/sellers$/, sellersView],
]

document.getElementById('logout').addEventListener('click', (e) =>
  act(e.currentTarget, async () => {
    // 400/401: the session had already ended; either way the user is logged out
    await api('DELETE', '/v1/session').catch((err) => {
      if (err.status !== 400 && err.status !== 401) throw err
    })
    who.textContent = ''
    returnTo = '#/keys'
    go('#/login')
  }),
)
window.addEventListener('hashchange', route)
route()
// after a reload the page has the cookie but not the email: ask who is calling (401: the login screen shows)
api('GET', '/v1/session').then(
  (s) => {
    if (!who.textContent) who.textContent = s.user.email ?? ''
  },
  () => {},
)
