// Agents: the list and creating one (each gets a custodial wallet).
import { api } from './api.js'
import { emptyState, errorSlot, h, table } from './dom.js'
import { time, usdc } from './format.js'
import { notify, onSubmit } from './ui.js'

export const capsText = (c) =>
  `per transaction ${usdc(c.per_transaction)} · daily ${usdc(c.daily)} · monthly ${usdc(c.monthly)}`
export const topUpText = (t) => (t.enabled ? `on: below ${usdc(t.threshold)}, add ${usdc(t.amount)}` : 'off')

export async function agentsView(show) {
  const list = h('div')
  const row = (a) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/agents/${a.address}` }, a.name)),
      h('td', {}, h('code', {}, a.address)),
      h('td', {}, capsText(a.spend_caps)),
      h('td', {}, topUpText(a.top_up)),
      h('td', {}, time(a.created_at)),
    )
  const load = async () =>
    list.replaceChildren(
      table(
        ['Name', 'Address', 'Spend caps', 'Top-ups', 'Created'],
        (await api('GET', '/v1/agents')).data.map(row),
        emptyState(
          'No agents yet.',
          'Create one above with a name such as research-bot: it gets a wallet of its own. Then put USDC in it from your ',
          h('a', { href: '#/funding' }, 'funding wallet'),
          ' and give it a key on its page to make its first paid call.',
        ),
      ),
    )
  const name = h('input', {
    id: 'agent-name',
    required: true,
    maxlength: 100,
    placeholder: 'e.g. research-bot',
    'data-param': 'name',
  })
  const create = h('button', { type: 'submit' }, 'Create agent')
  const error = errorSlot()
  const form = h(
    'form',
    {
      class: 'inline',
      onsubmit: onSubmit(create, error, async () => {
        const a = await api('POST', '/v1/agents', { name: name.value })
        name.value = ''
        await load()
        notify(`Agent "${a.name}" created with wallet ${a.address}.`, 'ok')
      }),
    },
    h('label', { for: 'agent-name' }, 'New agent'),
    name,
    create,
    error,
  )
  await load()
  show(
    h('h1', {}, 'Agents'),
    h(
      'p',
      { class: 'hint' },
      'Each agent pays from its own custodial wallet, within its spend caps and allowlist; its keys authenticate its own calls.',
    ),
    form,
    list,
  )
}
