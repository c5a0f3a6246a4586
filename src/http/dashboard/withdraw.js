// Money out: the form that sends USDC (or the funding wallet's ETH) from a wallet to an address,
// and the line that follows the withdrawal until it is confirmed or failed.
import { api, seg } from './api.js'
import { errorSlot, field, h } from './dom.js'
import { atomicFrom, short, units } from './format.js'
import { notify, onSubmit } from './ui.js'

const ASSETS = { USDC: { decimals: 6, unit: 'USDC' }, ETH: { decimals: 18, unit: 'ETH' } }

/**
 * A withdrawal form for `path` (POST /v1/agents/{address}/withdrawals or
 * /v1/funding-wallet/withdrawals). Each withdrawal gets its own Idempotency-Key, made when the
 * form is ready for it and kept until the API has answered: a submit that lost its answer (the
 * network) and is sent again finds the first withdrawal instead of sending the funds twice.
 * `available` is what the page knows may leave (a hint); `done` runs after the API recorded it.
 */
export function withdrawForm({ id, path, assets = ['USDC'], available, done }) {
  let key = crypto.randomUUID()
  const to = h('input', {
    id: `${id}-to`,
    required: true,
    'data-param': 'to',
    placeholder: '0x… address the funds go to',
    autocomplete: 'off',
    spellcheck: 'false',
  })
  const amount = h('input', { id: `${id}-amount`, inputmode: 'decimal', required: true, 'data-param': 'amount' })
  const asset =
    assets.length > 1
      ? h(
          'select',
          { id: `${id}-asset`, 'data-param': 'asset' },
          assets.map((a) => h('option', { value: a }, a)),
        )
      : null
  const progress = h('p', { id: `${id}-progress`, role: 'status', 'aria-live': 'polite' })
  const submit = h('button', { type: 'submit' }, 'Withdraw')
  const error = errorSlot()
  const chosen = () => asset?.value ?? assets[0]
  const form = h(
    'form',
    {
      class: 'card',
      id,
      onsubmit: onSubmit(submit, error, async () => {
        const a = chosen()
        const body = {
          to: to.value.trim(),
          amount: atomicFrom('Amount', amount.value, ASSETS[a].decimals, { param: 'amount', unit: ASSETS[a].unit }),
          ...(asset ? { asset: a } : {}),
        }
        const w = await api('POST', path, body, { 'idempotency-key': key })
        key = crypto.randomUUID()
        amount.value = ''
        notify(
          `Withdrawal of ${units(w.amount, ASSETS[w.asset].decimals)} ${w.asset} to ${w.to} recorded; it is being sent.`,
          'ok',
        )
        follow(w, progress, done)
      }),
    },
    h('h2', {}, 'Withdraw'),
    h(
      'p',
      { class: 'hint' },
      available ??
        'Send funds from this wallet to an address. What payments have signed and not settled yet stays until they settle.',
    ),
    field('To address', to),
    field(`Amount (${assets.map((a) => ASSETS[a].unit).join(' or ')})`, amount),
    asset && field('Asset', asset, 'ETH: the gas left in the wallet; the transfer’s own gas is paid from it'),
    error,
    submit,
    progress,
  )
  return form
}

/** Shows the withdrawal's progress (GET /v1/withdrawals/{id}) until it is confirmed or failed, for up to a minute. */
async function follow(w, line, done) {
  const show = (x) => {
    const amount = `${units(x.amount, ASSETS[x.asset].decimals)} ${x.asset}`
    line.className = x.status === 'failed' ? 'error' : ''
    line.replaceChildren(
      x.status === 'confirmed'
        ? `Withdrawal of ${amount} confirmed (transaction `
        : x.status === 'failed'
          ? `Withdrawal of ${amount} failed: ${x.error ?? 'unknown reason'}`
          : `Withdrawal of ${amount} pending${x.tx_hash ? ' (transaction ' : ''}`,
      x.tx_hash && x.status !== 'failed' ? short(x.tx_hash) : '',
      x.tx_hash && x.status !== 'failed' ? ').' : x.status === 'pending' ? '…' : '',
    )
  }
  show(w)
  await done?.(w)
  for (let i = 0; i < 60 && w.status === 'pending' && line.isConnected; i++) {
    await new Promise((r) => setTimeout(r, 1000))
    try {
      w = await api('GET', `/v1/withdrawals/${seg(w.id)}`)
    } catch {
      continue // the next poll tries again; the withdrawal goes on regardless
    }
    show(w)
    if (w.status !== 'pending') await done?.(w)
  }
}
