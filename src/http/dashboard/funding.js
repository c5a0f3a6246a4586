// The funding wallet: the user's custodial wallet that agent top-ups are paid from.
import { api } from './api.js'
import { copyButton, errorSlot, field, h } from './dom.js'
import { atomicFromUsdc, time, units } from './format.js'
import { notify, onSubmit } from './ui.js'
import { topUpText } from './agents.js'
import { withdrawForm } from './withdraw.js'

export async function fundingView(show) {
  const [wallet, agents] = await Promise.all([api('GET', '/v1/funding-wallet'), api('GET', '/v1/agents')])
  const address = h('code', { id: 'funding-address' }, wallet.address)
  const balance = h('p', { id: 'funding-balance', role: 'status' })
  const render = (w) => {
    // the API answers balance: null and says why in balance_error when the chain RPC does not answer (the address is still good)
    const b = w.balance
    balance.className = b ? '' : 'error'
    balance.textContent = b
      ? `${units(b.usdc, 6)} USDC · ${units(b.eth, 18)} ETH (block ${b.block_number})`
      : `Balance unavailable right now: ${w.balance_error ?? 'the chain did not answer'}. The address above is still where to send USDC.`
  }
  render(wallet)
  const toppedUp = agents.data.filter((a) => a.top_up.enabled)
  show(
    h('h1', {}, 'Funding wallet'),
    h(
      'p',
      { class: 'hint' },
      'Your custodial wallet that agent top-ups are paid from. Send USDC to this address to fund it; each agent with top-ups on is refilled from it.',
    ),
    h(
      'dl',
      {},
      h('dt', {}, 'Address'),
      h('dd', { class: 'secret-row' }, address, copyButton(wallet.address, address)),
      h('dt', {}, 'Created'),
      h('dd', {}, time(wallet.created_at)),
    ),
    h('h2', {}, 'Balance'),
    balance,
    wallet.faucet_available && faucet(async () => render(await api('GET', '/v1/funding-wallet'))),
    withdrawForm({
      id: 'funding-withdraw',
      path: '/v1/funding-wallet/withdrawals',
      assets: ['USDC', 'ETH'],
      available:
        'Send USDC, or the ETH left in this wallet, to an address. Top-ups it has signed and not yet paid stay until they are; an ETH withdrawal pays its own gas from the wallet.',
      done: async (w) => {
        if (w.status !== 'pending') render(await api('GET', '/v1/funding-wallet'))
      },
    }),
    h('h2', {}, 'Agents with top-ups on'),
    toppedUp.length
      ? h(
          'ul',
          {},
          toppedUp.map((a) =>
            h('li', {}, h('a', { href: `#/agents/${a.address}` }, a.name), ` — ${topUpText(a.top_up)}`),
          ),
        )
      : h('p', { class: 'empty' }, 'None. Turn top-ups on from an agent’s page.'),
  )
}

/** Dev chain only (the API says so in `faucet_available`): mint test USDC into the wallet. */
function faucet(reload) {
  const amount = h('input', { id: 'faucet-amount', inputmode: 'decimal', value: '100', 'data-param': 'amount' })
  const mint = h('button', { type: 'submit' }, 'Get test USDC')
  const error = errorSlot()
  return h(
    'form',
    {
      class: 'card',
      id: 'faucet',
      onsubmit: onSubmit(mint, error, async () => {
        const r = await api('POST', '/v1/funding-wallet/faucet', {
          amount: atomicFromUsdc('Amount', amount.value, { optional: false, positive: true, param: 'amount' }),
        })
        await reload()
        notify(`Minted ${units(r.amount, 6)} test USDC (transaction ${r.tx_hash}).`, 'ok')
      }),
    },
    h('h2', {}, 'Test USDC (dev chain)'),
    h(
      'p',
      { class: 'hint' },
      'This deployment runs on the embedded dev chain: mint test USDC into the funding wallet, at most 1,000 a time.',
    ),
    field('Amount (USDC)', amount),
    error,
    mint,
  )
}
