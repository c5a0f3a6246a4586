// Tollgate dashboard: plain ES modules, no build step. Every screen calls the user API (/v1) with
// the session cookie and renders with DOM APIs only: API data never goes through innerHTML.
// This module is the entry: the router, the login screen and the logout button.
import { api, ApiError } from './api.js'
import { agentsView } from './agents.js'
import { agentView } from './agent.js'
import { h } from './dom.js'
import { fundingView } from './funding.js'
import { insightsView } from './insights.js'
import { keysView } from './keys.js'
import { marketplaceView } from './marketplace.js'
import { overviewView } from './overview.js'
import { paymentView } from './payment.js'
import { sellersView } from './sellers.js'
import { signupOpen, signupView } from './signup.js'
import { transactionsView } from './transactions.js'
import { act, fail, go, notify, session, who } from './ui.js'
import { webhooksView } from './webhooks.js'
import { approvalsView } from './approvals.js'

const main = document.getElementById('main')
const nav = document.getElementById('nav')

const routes = [
  [/^#\/login$/, loginView],
  [/^#\/signup$/, signupView],
  [/^#\/overview$/, overviewView],
  [/^#\/keys$/, keysView],
  [/^#\/agents$/, agentsView],
  [/^#\/agents\/(0x[0-9a-fA-F]{40})$/, agentView],
  [/^#\/funding$/, fundingView],
  [/^#\/transactions$/, transactionsView],
  [/^#\/payments\/([0-9a-fA-F-]{36})$/, paymentView],
  [/^#\/insights$/, insightsView],
  [/^#\/marketplace$/, marketplaceView],
  [/^#\/sellers$/, sellersView],
  [/^#\/webhooks$/, webhooksView],
  [/^#\/approvals$/, approvalsView],
]

let current = 0

async function route() {
  const hash = location.hash || '#/overview'
  const found = routes.map(([re, view]) => [re.exec(hash), view]).find(([m]) => m)
  if (!found) return go('#/overview', { replace: true })
  const [match, view] = found
  const seq = ++current
  // a slow answer for a screen the user has already left must not replace the current one
  // (views pass `condition && node`: a false or null is left out, never shown as text)
  const show = (...nodes) =>
    seq === current &&
    main.replaceChildren(...nodes.flat(2).filter((n) => n !== false && n !== null && n !== undefined))
  nav.hidden = view === loginView || view === signupView
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
    if (!(err instanceof ApiError && err.status === 401))
      show(h('p', { class: 'empty' }, 'This page could not be loaded.'))
    fail(err)
  }
}

async function loginView(show) {
  // where sign-up is open, a link to it; otherwise how an account is made
  const noAccount = (await signupOpen())
    ? h('p', { class: 'hint' }, 'No account yet? ', h('a', { href: '#/signup' }, 'Sign up'), '.')
    : h(
        'p',
        { class: 'hint' },
        'No account yet? An operator creates one with ',
        h('code', {}, 'tollgate users create --email <email>'),
        '.',
      )
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
            (s) => {
              who.textContent = s.user.email
              go(session.returnTo, { replace: true })
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
    noAccount,
  )
  if (session.ended) {
    session.ended = false
    error.textContent =
      'Your session has ended (it expired, or you logged out elsewhere). Log in again to continue where you were.'
    error.hidden = false
  }
  show(form)
  email.focus()
}

document.getElementById('logout').addEventListener('click', (e) =>
  act(e.currentTarget, async () => {
    // 400/401: the session had already ended; either way the user is logged out
    await api('DELETE', '/v1/session').catch((err) => {
      if (err.status !== 400 && err.status !== 401) throw err
    })
    who.textContent = ''
    session.returnTo = '#/overview'
    go('#/login')
  }),
)
window.addEventListener('hashchange', route)
route()
// a sandbox deployment says so on every page, the login screen included (GET /v1/signup is public)
api('GET', '/v1/signup').then(
  (s) => (document.getElementById('sandbox-banner').hidden = s.deployment !== 'sandbox'),
  () => {},
)
// after a reload the page has the cookie but not the email: ask who is calling (401: the login screen shows)
api('GET', '/v1/session').then(
  (s) => {
    if (!who.textContent) who.textContent = s.user.email ?? ''
  },
  () => {},
)
