// DOM building blocks. API data only ever reaches the page as text nodes and attribute values.

/** createElement with attributes, `on…` listeners and children; strings become text nodes. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat(2))
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c))
  return el
}

/** A table, or when it has no rows `empty`: a line of text, or a node (an emptyState with a next step). */
export function table(headers, rows, empty) {
  if (rows.length === 0) return empty instanceof Node ? empty : h('p', { class: 'empty' }, empty)
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) => h('th', { scope: 'col' }, x)),
      ),
    ),
    h('tbody', {}, rows),
  )
}

/**
 * What an empty list says: what is missing (`title`, its own line) and the next step to take, as
 * text, links and code (`next`).
 */
export function emptyState(title, ...next) {
  return h('div', { class: 'empty-state' }, h('p', { class: 'empty' }, title), next.length > 0 && h('p', {}, ...next))
}

/** A label and its control, with the API field name the control stands for (`data-param`). */
export function field(label, control, hint) {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: control.id }, label),
    control,
    hint && h('span', { class: 'hint' }, hint),
  )
}

/** Where a form shows the API's message for it (validation errors name their field, see ui.js). */
export const errorSlot = () => h('p', { class: 'error form-error', role: 'alert', hidden: true })

/** A Copy button for `text`; outside a secure context (no clipboard API) it selects `target` instead. */
export function copyButton(text, target) {
  const copy = h('button', { type: 'button', class: 'plain' }, 'Copy')
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text)
      copy.textContent = 'Copied'
    } catch {
      getSelection().selectAllChildren(target)
      copy.textContent = 'Selected: press Ctrl+C'
    }
  })
  return copy
}

/**
 * A secret shown this once (API key, agent key, upstream signing secret): the API does not
 * give it out again. `note` says why it cannot be shown later.
 */
export function secretPanel(title, secret, note = 'Only a hash is stored, so it cannot be shown or recovered later.') {
  const code = h('code', { id: 'new-secret', class: 'secret' }, secret)
  const panel = h(
    'section',
    { class: 'secret-panel' },
    h('h2', {}, title),
    h('p', {}, h('strong', {}, 'Copy it now: you will not see it again.'), ' ', note),
    h('div', { class: 'secret-row' }, code, copyButton(secret, code)),
    h('button', { type: 'button', class: 'plain', onclick: () => panel.remove() }, 'Done, I have stored it'),
  )
  return panel
}

/**
 * Shows a secret panel in `slot` (on the page) and brings it to the user: the page may be
 * scrolled far from it (a long Seller page), and it is the only chance to copy the secret.
 */
export function revealSecret(slot, panel) {
  slot.replaceChildren(panel)
  panel.scrollIntoView({ block: 'center' })
  panel.querySelector('button').focus({ preventScroll: true })
}
