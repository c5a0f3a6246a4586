// The form that publishes an endpoint (POST …/endpoints) or changes one (PATCH …/endpoints/{slug}),
// with the fields the API takes; the price is entered in USDC and sent as atomic units.
import { api, ApiError, seg } from './api.js'
import { errorSlot, field, h } from './dom.js'
import { atomicFromUsdc, usdcInput } from './format.js'
import { onSubmit } from './ui.js'

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

/**
 * `path` is the service's endpoints path; `endpoint` the endpoint to change (absent: publish a
 * new one). `done(answer)` runs after the API accepted it (the answer may carry `signing_secret`).
 */
export function endpointForm({ id, path, endpoint: e, done, cancel }) {
  const el = (tag, name, attrs = {}, ...children) => h(tag, { id: `${id}-${name}`, ...attrs }, ...children)
  const inputs = endpointInputs(el, e)
  const target = targetInputs(el, id, e)
  const body = () => endpointBody(inputs, target, e)
  const { slug, methods, price, description, mime, settlement, access, schema, enabled } = inputs
  const submit = h('button', { type: 'submit' }, e ? 'Save endpoint' : 'Publish endpoint')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'card wide',
      id,
      onsubmit: onSubmit(submit, error, async () =>
        done(e ? await api('PATCH', `${path}/${seg(e.slug)}`, body()) : await api('POST', path, body())),
      ),
    },
    h('h3', {}, e ? `Edit ${e.slug}` : 'Publish an endpoint'),
    slug
      ? field('Slug', slug, '3-40 of a-z, 0-9 and inner dashes; part of the URL')
      : h('p', {}, 'Slug: ', h('code', {}, e.slug), ' (cannot change)'),
    methodSet(methods),
    field('Price per call (USDC)', price, 'sent as atomic units: 0.001 USDC = 1000'),
    field('Description', description),
    field('Response type', mime),
    field('Settlement', settlement),
    field(
      'Paid access (minutes)',
      access,
      'x402 sign-in-with-x: a buyer who paid signs in with the same wallet for this long instead of paying again; empty: off',
    ),
    ...targetFields(target),
    field('Input schema (JSON, optional)', schema),
    h('div', { class: 'check' }, enabled, h('label', { for: enabled.id }, 'Enabled')),
    error,
    h(
      'div',
      { class: 'inline' },
      submit,
      cancel && h('button', { type: 'button', class: 'plain', onclick: cancel }, 'Cancel'),
    ),
  )
}

/**
 * The endpoint's own controls, filled in from `e` when changing one: the slug (only when
 * publishing), methods, price, description, response type, settlement, paid access, input schema
 * and enabled. `el` makes a control with an id under the form's.
 */
function endpointInputs(el, e) {
  const slug =
    !e &&
    el('input', 'slug', { required: true, 'data-param': 'slug', placeholder: 'e.g. spot-price', autocomplete: 'off' })
  const methods = METHODS.map((m) =>
    el('input', `method-${m}`, { type: 'checkbox', value: m, checked: e ? e.methods.includes(m) : m === 'GET' }),
  )
  const price = el('input', 'price', {
    required: true,
    inputmode: 'decimal',
    'data-param': 'price',
    placeholder: 'e.g. 0.001',
    value: e ? usdcInput(e.price) : undefined,
  })
  const description = el(
    'textarea',
    'description',
    { rows: 2, maxlength: 2000, 'data-param': 'description' },
    e?.description ?? '',
  )
  const mime = el('input', 'mime', { 'data-param': 'mime_type', value: e?.mime_type ?? 'application/json' })
  const settlement = el(
    'select',
    'settlement',
    { 'data-param': 'settlement_mode' },
    h(
      'option',
      { value: 'async', selected: e?.settlement_mode !== 'sync' },
      'async: answer at once, settle in batches',
    ),
    h(
      'option',
      { value: 'sync', selected: e?.settlement_mode === 'sync' },
      'sync: settle before answering (high prices)',
    ),
  )
  const access = el('input', 'access', {
    inputmode: 'numeric',
    'data-param': 'access_minutes',
    placeholder: 'off',
    value: e?.access_minutes ?? undefined,
  })
  const schema = el(
    'textarea',
    'input-schema',
    { rows: 3, 'data-param': 'input_schema', placeholder: '{"type": "object", "properties": {…}}' },
    e?.input_schema ? JSON.stringify(e.input_schema, null, 2) : '',
  )
  const enabled = el('input', 'enabled', { type: 'checkbox', 'data-param': 'enabled', checked: e ? e.enabled : true })
  return { slug, methods, price, description, mime, settlement, access, schema, enabled }
}

/** The methods' checkboxes under one legend (the API's errors about methods point at it). */
function methodSet(methods) {
  return h(
    'fieldset',
    { class: 'methods', tabindex: '-1', 'data-param': 'methods' },
    h('legend', {}, 'Methods'),
    methods.map((c) => h('span', { class: 'check' }, c, h('label', { for: c.id }, c.value))),
  )
}

/**
 * Where paid calls go: the two radio buttons (a hosted handler, or the seller's upstream URL), the
 * handler's name and the upstream's URL and options; `up` is the upstream options of `e`.
 */
function targetInputs(el, id, e) {
  const hosted = el('input', 'hosted', {
    type: 'radio',
    name: `${id}-target`,
    value: 'handler',
    checked: e ? Boolean(e.handler) : false,
  })
  const upstream = el('input', 'upstream', {
    type: 'radio',
    name: `${id}-target`,
    value: 'upstream',
    checked: e ? !e.handler : true,
  })
  const handler = el('input', 'handler', {
    'data-param': 'handler',
    placeholder: 'e.g. hash-generator',
    value: e?.handler ?? undefined,
  })
  const url = el('input', 'upstream-url', {
    type: 'url',
    'data-param': 'upstream_url',
    placeholder: 'https://api.example.com/v1/price',
    value: e?.upstream_url ?? undefined,
  })
  const up = e?.upstream
  const forward = el('textarea', 'forward-headers', {
    rows: 2,
    'data-param': 'upstream.forward_headers',
    placeholder: up?.forward_headers.length
      ? `set: ${up.forward_headers.join(', ')} (leave empty to keep)`
      : 'X-Api-Key: your-upstream-key',
  })
  const dropForward = up?.forward_headers.length > 0 && el('input', 'drop-forward', { type: 'checkbox' })
  const required = el('input', 'required-headers', {
    'data-param': 'upstream.required_headers',
    placeholder: 'e.g. X-Customer',
    value: up?.required_headers.join(', ') || undefined,
  })
  const timeout = el('input', 'timeout', {
    inputmode: 'numeric',
    'data-param': 'upstream.timeout_ms',
    placeholder: '10000',
    value: up?.timeout_ms ?? undefined,
  })
  const rateRequests = el('input', 'rate-requests', {
    inputmode: 'numeric',
    'data-param': 'upstream.rate_limit.requests',
    value: up?.rate_limit?.requests ?? undefined,
  })
  const ratePer = el('input', 'rate-per', {
    inputmode: 'numeric',
    'data-param': 'upstream.rate_limit.per_seconds',
    value: up?.rate_limit?.per_seconds ?? undefined,
  })
  return { hosted, upstream, handler, url, up, forward, dropForward, required, timeout, rateRequests, ratePer }
}

/**
 * The target's part of the form: the radio buttons, then the upstream's fields and the hosted
 * handler's, of which only the picked one shows.
 */
function targetFields(t) {
  const hostedPart = h(
    'div',
    { class: 'target' },
    field('Handler name', t.handler, 'a hosted handler (handlers/<name>)'),
  )
  const upstreamPart = h(
    'div',
    { class: 'target' },
    field('Upstream URL', t.url, 'your origin: paid calls are forwarded with an X-Tollgate-Signature'),
    field('Forwarded headers', t.forward, 'one per line, Name: value; stored encrypted and never shown again'),
    t.dropForward &&
      h(
        'div',
        { class: 'check' },
        t.dropForward,
        h('label', { for: t.dropForward.id }, 'Remove the forwarded headers'),
      ),
    field('Required headers', t.required, 'comma-separated: headers a caller must send'),
    field('Timeout (ms)', t.timeout, '100 to 60000; default 10000'),
    h(
      'div',
      { class: 'pair' },
      field('Rate limit: requests', t.rateRequests),
      field('per seconds', t.ratePer, 'both empty: no limit'),
    ),
  )
  const showTarget = () => {
    hostedPart.hidden = !t.hosted.checked
    upstreamPart.hidden = t.hosted.checked
  }
  t.hosted.addEventListener('change', showTarget)
  t.upstream.addEventListener('change', showTarget)
  showTarget()
  const targets = h(
    'fieldset',
    { class: 'targets' },
    h('legend', {}, 'Target'),
    h('span', { class: 'check' }, t.upstream, h('label', { for: t.upstream.id }, 'Forward to your upstream URL')),
    h('span', { class: 'check' }, t.hosted, h('label', { for: t.hosted.id }, 'Run a hosted handler')),
  )
  return [targets, upstreamPart, hostedPart]
}

/**
 * The request's body from the form; a field cleared while changing `e` is sent as null (removed).
 * Throws an ApiError naming the field when a value cannot be read.
 */
function endpointBody(inputs, target, e) {
  const { slug, methods, price, description, mime, settlement, access, schema, enabled } = inputs
  const b = {
    methods: methods.filter((c) => c.checked).map((c) => c.value),
    price: atomicFromUsdc('Price', price.value, { optional: false, positive: true, param: 'price' }),
    description: description.value,
    mime_type: mime.value.trim(),
    settlement_mode: settlement.value,
    enabled: enabled.checked,
  }
  if (slug) b.slug = slug.value.trim()
  if (access.value.trim()) b.access_minutes = integer(access.value, 'access_minutes', 'Paid access')
  else if (e?.access_minutes) b.access_minutes = null
  const s = schema.value.trim()
  if (s) b.input_schema = parseJson(s)
  else if (e?.input_schema) b.input_schema = null
  if (target.hosted.checked) b.handler = target.handler.value.trim()
  else {
    b.upstream_url = target.url.value.trim()
    b.upstream = upstreamOptions(target)
  }
  return b
}

/** The body's `upstream`: required and forwarded headers, timeout and rate limit. */
function upstreamOptions({ up, forward, dropForward, required, timeout, rateRequests, ratePer }) {
  const o = { required_headers: required.value.split(/[\s,]+/).filter(Boolean) }
  if (forward.value.trim()) o.forward_headers = headerLines(forward.value)
  else if (dropForward?.checked) o.forward_headers = {}
  if (timeout.value.trim()) o.timeout_ms = integer(timeout.value, 'upstream.timeout_ms', 'Timeout')
  const [r, p] = [rateRequests.value.trim(), ratePer.value.trim()]
  if (r || p)
    o.rate_limit = {
      requests: integer(r, 'upstream.rate_limit.requests', 'Rate limit requests'),
      per_seconds: integer(p, 'upstream.rate_limit.per_seconds', 'Rate limit seconds'),
    }
  else if (up?.rate_limit) o.rate_limit = null
  return o
}

function parseJson(text) {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new ApiError(400, { message: `Input schema: not valid JSON (${err.message})`, param: 'input_schema' })
  }
}

/** "X-Api-Key: secret" lines → {"X-Api-Key": "secret"}. */
function headerLines(text) {
  const out = {}
  for (const line of text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)) {
    const i = line.indexOf(':')
    if (i < 1)
      throw new ApiError(400, {
        message: `Forwarded headers: expected "Name: value" on each line, got "${line}"`,
        param: 'upstream.forward_headers',
      })
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim()
  }
  return out
}

function integer(text, param, label) {
  if (!/^\d{1,9}$/.test(text.trim())) throw new ApiError(400, { message: `${label}: expected a whole number`, param })
  return Number(text)
}
