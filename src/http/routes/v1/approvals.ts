import type { FastifyInstance, FastifyRequest } from 'fastify'
import { appError, AppError } from '../../../errors.js'
import type { ApprovalsService, DecidedFrom } from '../../../services/approvals/approvals.js'
import type { Deps } from '../../../deps.js'
import { authErrors, errorResponse, list, ok } from './schemas.js'

const idParam = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 64 } },
} as const
type P = { Params: { id: string } }

function wantsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html')
}

function from(request: FastifyRequest) {
  const ua = request.headers['user-agent']
  return { ip: request.ip ?? null, userAgent: typeof ua === 'string' ? ua : null }
}

/**
 * The owner's side of human approval (services/approvals): list, approve, deny with an API key or
 * the dashboard session (an agent key is refused by /v1's authentication: an agent never approves
 * its own payments), and the signed link of the `approval.requested` webhook, which shows a
 * confirm page (GET) and takes the decision (POST) without a login.
 */
export async function approvalRoutes(app: FastifyInstance, ctx: { deps: Deps }) {
  const approvals = () => ctx.deps.services.agentPayments.approvals
  const tags = ['approvals']

  app.get<{ Querystring: { status?: string; limit?: number } }>(
    '/approvals',
    {
      schema: {
        tags,
        summary: "Your agents' approvals, newest first (pending: waiting for your decision)",
        querystring: {
          type: 'object',
          properties: {
            status: { type: 'string', enum: ['pending', 'approved', 'denied', 'expired', 'used'] },
            limit: { type: 'integer', minimum: 1, maximum: 200 },
          },
        },
        response: { 200: list('approvals'), 400: errorResponse, ...authErrors },
      },
    },
    async (request) => approvals().list(request.principal!.userId, request.query),
  )
  app.get<P>(
    '/approvals/:id',
    { schema: { tags, summary: 'One approval, with its decision audit', params: idParam } },
    async (request) => approvals().get(request.principal!.userId, request.params.id),
  )
  for (const decision of ['approve', 'deny'] as const)
    app.post<P>(
      `/approvals/:id/${decision}`,
      {
        schema: {
          tags,
          summary:
            decision === 'approve'
              ? 'Approve a pending payment: the agent retries it with approval_id and it is signed once'
              : 'Deny a pending payment: a retry with its approval_id is refused (approval_denied)',
          params: idParam,
          response: { 200: ok('the approval'), 409: errorResponse, ...authErrors },
        },
      },
      async (request) => {
        const p = request.principal!
        const by: DecidedFrom = { userId: p.userId, via: p.via, ...from(request) }
        return approvals().decide(request.params.id, p.userId, decision, by)
      },
    )
  await app.register(async (a) => decideLinkRoutes(a, approvals))
}

/** GET/POST /approvals/:id/decide?token=…: the signed link's confirm page and decision. */
async function decideLinkRoutes(app: FastifyInstance, approvals: () => ApprovalsService) {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 1024 },
    (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  )
  const schema = {
    tags: ['approvals'],
    params: idParam,
    querystring: { type: 'object', properties: { token: { type: 'string', maxLength: 200 } } },
  }
  app.get<P & { Querystring: { token?: string } }>(
    '/approvals/:id/decide',
    {
      config: { public: true },
      schema: {
        ...schema,
        summary: 'The confirm page of a signed approval link (from the approval.requested webhook)',
      },
    },
    async (request, reply) => {
      const a = await approvals().byLink(request.params.id, request.query.token)
      if (a) return page(reply, confirmPage(a, request.query.token!), 200)
      // a browser gets a page that says so; a program the usual error body
      if (!wantsHtml(request)) throw appError('approval_link_invalid')
      return page(reply, invalidPage(), 403)
    },
  )
  app.post<P & { Querystring: { token?: string }; Body: { decision?: unknown } }>(
    '/approvals/:id/decide',
    {
      config: { public: true },
      schema: {
        ...schema,
        summary: 'Decide through a signed approval link (form field or JSON `decision`: approve | deny)',
        body: {
          type: 'object',
          required: ['decision'],
          properties: { decision: { type: 'string', enum: ['approve', 'deny'] } },
        },
      },
    },
    async (request, reply) => {
      const decision = request.body.decision as 'approve' | 'deny'
      const html = wantsHtml(request)
      try {
        const a = await approvals().decideByLink(request.params.id, request.query.token, decision, from(request))
        if (!html) return a
        return page(reply, resultPage(`Payment ${a.status === 'denied' ? 'denied' : 'approved'}`, a), 200)
      } catch (err) {
        if (!html || !(err instanceof AppError)) throw err
        return page(reply, shell('Not decided', `<p>${esc(err.message)}</p>`), err.statusCode)
      }
    },
  )
}

type View = Awaited<ReturnType<ApprovalsService['get']>>

function page(reply: import('fastify').FastifyReply, html: string, status: number) {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
    .send(html)
}

function esc(s: unknown): string {
  return String(s ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  )
}

function shell(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${esc(title)} · Tollgate</title><style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem}dt{font-weight:600}button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}</style></head><body><h1>${esc(title)}</h1>${body}</body></html>`
}

/** Atomic USDC with its six decimals, as the confirm page has always shown amounts. */
const usdc6 = (atomic: string) =>
  `${BigInt(atomic) / 1_000_000n}.${(BigInt(atomic) % 1_000_000n).toString().padStart(6, '0')}`

function terms(a: View): string {
  // a batch-settlement payment may also move a deposit into the agent's channel (refundable, not spent)
  const deposit = a.deposit
    ? `<dt>Deposit</dt><dd>${esc(usdc6(a.deposit))} USDC into the agent's channel with this payee (not spent: what is not charged can be refunded)</dd>`
    : ''
  return `<dl><dt>Agent</dt><dd>${esc(a.agent?.name)} (${esc(a.agent?.address)})</dd><dt>Amount</dt><dd>${esc(usdc6(a.amount))} USDC (${esc(a.amount)} atomic, ${esc(a.scheme)})</dd>${deposit}<dt>URL</dt><dd>${esc(a.method)} ${esc(a.url)}</dd><dt>Pays to</dt><dd>${esc(a.pay_to)}</dd><dt>Why held</dt><dd>${a.reason === 'amount' ? 'above the approval amount' : 'many calls a minute to a new seller'}</dd><dt>Status</dt><dd id="status">${esc(a.status)}</dd><dt>Decide before</dt><dd>${esc(a.expires_at)}</dd></dl>`
}

function confirmPage(a: View, token: string): string {
  if (a.status !== 'pending') return resultPage(`This payment is ${a.status}`, a)
  const action = `?token=${encodeURIComponent(token)}`
  return shell(
    'Approve this payment?',
    `${terms(a)}<form method="post" action="${esc(action)}"><button name="decision" value="approve">Approve</button><button name="decision" value="deny">Deny</button></form>`,
  )
}

function resultPage(title: string, a: View): string {
  return shell(title, terms(a))
}

function invalidPage(): string {
  return shell(
    'Link not valid',
    '<p>This approval link is altered, for another approval, or past its expiry. Decide in the dashboard or with <code>tollgate approvals</code>.</p>',
  )
}
