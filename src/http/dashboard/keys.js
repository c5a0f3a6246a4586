// API Keys: list, create (the secret once), revoke.
import { api, seg } from './api.js'
import { emptyState, errorSlot, h, revealSecret, secretPanel, table } from './dom.js'
import { time } from './format.js'
import { act, onSubmit } from './ui.js'

export async function keysView(show) {
  const list = h('div')
  const reveal = h('div')
  const row = (k) =>
    keyRow(k, {
      what: 'key',
      consequence: 'Every call with it will get 401 at once.',
      path: `/v1/api-keys/${seg(k.id)}`,
    })
  const load = async () =>
    list.replaceChildren(
      table(
        KEY_COLUMNS,
        (await api('GET', '/v1/api-keys')).data.map(row),
        emptyState(
          'No API keys yet.',
          'Create one to call the API from a program; the CLI makes its own with ',
          h('code', {}, 'npx tollgate login'),
          '.',
        ),
      ),
    )
  const name = h('input', {
    id: 'key-name',
    required: true,
    maxlength: 100,
    placeholder: 'e.g. ci-deploy',
    'data-param': 'name',
  })
  const create = h('button', { type: 'submit' }, 'Create')
  const error = errorSlot()
  const form = h(
    'form',
    {
      class: 'inline',
      hidden: true,
      onsubmit: onSubmit(create, error, async () => {
        const key = await api('POST', '/v1/api-keys', { name: name.value })
        form.hidden = true
        name.value = ''
        revealSecret(reveal, secretPanel(`New API key "${key.name}"`, key.secret))
        await load()
      }),
    },
    h('label', { for: 'key-name' }, 'Key name'),
    name,
    create,
    h('button', { type: 'button', class: 'plain', onclick: () => (form.hidden = true) }, 'Cancel'),
    error,
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
    h(
      'p',
      { class: 'hint' },
      'Keys authenticate scripts and CI jobs on the user API (',
      h('code', {}, 'Authorization: Bearer <key>'),
      '). Revoking a key takes effect at once.',
    ),
    h('div', { class: 'toolbar' }, open),
    form,
    reveal,
    list,
  )
}

export const KEY_COLUMNS = ['Name', 'Key', 'Created', 'Last used', 'Status', '']

/**
 * A row of an API key or agent key list; Revoke (after a confirmation naming `consequence`)
 * DELETEs `path` and the row shows the revoked key the API answers with.
 */
export function keyRow(k, { what, consequence, path }) {
  const revoke =
    !k.revoked_at &&
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: () => {
          if (!confirm(`Revoke the ${what} "${k.name}" (${k.prefix}…${k.last4})? ${consequence}`)) return
          act(revoke, async () => row.replaceWith(keyRow(await api('DELETE', path), { what, consequence, path })))
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
