// Sign-up: where the deployment allows it (GET /v1/signup says so), a person creates an account
// and is logged in at once (POST /v1/signup sets the session cookie).
import { api } from './api.js'
import { h } from './dom.js'
import { act, go, who } from './ui.js'

/** Whether sign-up is open here; false when the API cannot say (the login screen then shows the operator hint). */
export async function signupOpen() {
  return api('GET', '/v1/signup').then(
    (s) => s.open === true,
    () => false,
  )
}

/**
 * The API's refusal of a sign-up in a person's words (the API says "invalid value for password:
 * expected 10 to 1024 characters"); what the form cannot word better keeps the API's message.
 */
function humanSignupError(err, minLength) {
  if (err.param === 'password') {
    if (/1024|at most|too long/i.test(err.message) && !/\d+ to 1024/.test(err.message))
      return 'Use a password of at most 1024 characters.'
    return `Use at least ${minLength} characters for your password — a few words in a row are easy to remember.`
  }
  if (err.param === 'email') return 'Enter your email address, such as you@example.com.'
  if (err.status === 409) return 'An account with this email exists already. Log in instead, or use another email.'
  if (err.status === 429) return 'Too many accounts were made from here in the last hour. Try again later.'
  return err.message
}

export async function signupView(show) {
  const status = await api('GET', '/v1/signup')
  if (!status.open) {
    show(
      h(
        'section',
        { class: 'card login' },
        h('h1', {}, 'Sign up'),
        h('p', {}, 'Sign-up is closed on this deployment: an operator creates accounts.'),
        h('p', {}, h('a', { href: '#/login' }, 'Log in')),
      ),
    )
    return
  }
  const email = h('input', {
    id: 'signup-email',
    type: 'email',
    required: true,
    autocomplete: 'username',
    'data-param': 'email',
  })
  const password = h('input', {
    id: 'signup-password',
    type: 'password',
    required: true,
    autocomplete: 'new-password',
    'data-param': 'password',
    'aria-describedby': 'signup-password-hint',
  })
  const error = h('p', { id: 'signup-error', class: 'error', role: 'alert', hidden: true })
  const submit = h('button', { type: 'submit' }, 'Create account')
  const form = h(
    'form',
    {
      class: 'card login',
      onsubmit: (e) => {
        e.preventDefault()
        error.hidden = true
        for (const c of [email, password]) c.removeAttribute('aria-invalid')
        act(submit, () =>
          api('POST', '/v1/signup', { email: email.value, password: password.value }).then(
            (s) => {
              who.textContent = s.user.email
              go('#/overview', { replace: true })
            },
            (err) => {
              error.textContent = humanSignupError(err, status.min_password_length)
              error.hidden = false
              const field = err.param === 'email' ? email : password
              field.setAttribute('aria-invalid', 'true')
              field.focus()
            },
          ),
        )
      },
    },
    h('h1', {}, 'Sign up'),
    h('label', { for: 'signup-email' }, 'Email'),
    email,
    h('label', { for: 'signup-password' }, 'Password'),
    password,
    h('span', { id: 'signup-password-hint', class: 'hint' }, `At least ${status.min_password_length} characters.`),
    error,
    submit,
    h('p', { class: 'hint' }, 'Already have an account? ', h('a', { href: '#/login' }, 'Log in'), '.'),
  )
  show(form)
  email.focus()
}
