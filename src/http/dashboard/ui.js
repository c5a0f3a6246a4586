// What every screen shares: the notice bar, navigation, and how an action's error is shown.
import { ApiError } from './api.js'
import { h } from './dom.js'

const notice = document.getElementById('notice')
export const who = document.getElementById('who')
/**
 * Where the login screen goes back to (the screen a 401 interrupted), and whether a session the
 * user had ended under them (expired, or logged out elsewhere): the login screen then says so.
 */
export const session = { returnTo: '#/overview', ended: false }

export function notify(message, kind = 'error') {
  notice.textContent = message
  notice.className = kind
  notice.hidden = !message
}

/**
 * Shows a screen; the same hash again re-renders it (the router listens to hashchange). A redirect
 * the user did not ask for (`replace`: to the login screen on a 401, back after logging in) takes
 * the place of the current history entry, so Back never lands on a login form while logged in.
 */
export function go(hash, { replace = false } = {}) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'))
  else if (replace) location.replace(hash)
  else location.hash = hash
}

/**
 * An error from a view or an action: 401 goes back to the login screen. Anything else is shown
 * with the API's message, in `box` (next to the form it belongs to) or else in the notice bar.
 */
export function fail(err, box) {
  if (err instanceof ApiError && err.status === 401) {
    if (location.hash !== '#/login') session.returnTo = location.hash || '#/overview'
    // `who` names the user only while logged in: a first visit without a session gets no message
    if (who.textContent) session.ended = true
    who.textContent = ''
    return go('#/login', { replace: true })
  }
  if (!box) return notify(err.message)
  box.textContent = err.message
  box.hidden = false
  const input = err.param && fieldFor(box.closest('form') ?? box.parentElement, err.param)
  if (input) {
    input.setAttribute('aria-invalid', 'true')
    input.focus()
  }
}

/** The control for an API field name: exact, else the nearest parent (`upstream.forward_headers.X` → `upstream.forward_headers`). */
function fieldFor(form, param) {
  const controls = [...form.querySelectorAll('[data-param]')]
  for (let p = param; p; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    const hit = controls.find((c) => c.dataset.param === p)
    if (hit) return hit
  }
  return undefined
}

function clearError(box) {
  box.hidden = true
  box.textContent = ''
  for (const c of (box.closest('form') ?? box.parentElement).querySelectorAll('[aria-invalid]'))
    c.removeAttribute('aria-invalid')
}

/** Runs a button's or form's action: busy while it runs; its error shown (in `box` when given, see fail). */
export async function act(button, fn, box) {
  // a focused button loses focus to <body> when disabled: given back below, so Tab goes on from it
  const hadFocus = document.activeElement === button
  button.disabled = true
  button.setAttribute('aria-busy', 'true')
  notify('')
  if (box) clearError(box)
  try {
    await fn()
  } catch (err) {
    fail(err, box)
  } finally {
    button.disabled = false
    button.removeAttribute('aria-busy')
    // not when the action moved focus itself (an error's field) or removed or hid the button
    const lost = document.activeElement === null || document.activeElement === document.body
    if (hadFocus && lost && button.isConnected && button.offsetParent !== null) button.focus()
  }
}

/** A form whose submit runs `fn` through act, with its errors in `box`. */
export function onSubmit(button, box, fn) {
  return (e) => {
    e.preventDefault()
    act(button, fn, box)
  }
}

/**
 * Newest / Older under a list the API pages newest first: `load(cursor)` shows a page, `cursor` is
 * the one on screen (none for the newest), `page` its answer (`has_more`, `next_cursor`).
 */
export function pager(cursor, page, load) {
  return h(
    'div',
    { class: 'toolbar' },
    cursor &&
      h('button', { type: 'button', class: 'plain', onclick: (e) => act(e.currentTarget, () => load()) }, 'Newest'),
    page.has_more &&
      h('button', { type: 'button', onclick: (e) => act(e.currentTarget, () => load(page.next_cursor)) }, 'Older'),
  )
}
