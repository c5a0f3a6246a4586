import type { FastifyInstance } from 'fastify'
import { EVENT_TYPES } from '../../../services/events/types.js'
import { DELIVERIES_PAGE_MAX, type EndpointInput, type Webhooks } from '../../../services/events/webhooks.js'
import { authErrors, errorResponse, list, ok } from './schemas.js'

const idParam = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', description: 'the webhook endpoint id' } },
} as const
// validated by the service, which says what to send (an unknown event type names the known ones)
const endpointBody = {
  type: 'object',
  properties: {
    url: { type: 'string', description: 'the receiver: an http(s) URL on a public host' },
    events: { type: 'array', items: { type: 'string', enum: [...EVENT_TYPES] }, description: 'event types to receive' },
    cap_near_percent: {
      type: 'integer',
      description: 'agent.cap_near: the share of a cap (1–100, default 80) from which it is sent',
    },
    enabled: { type: 'boolean', description: 'PATCH only: false disables, true re-enables' },
  },
} as const
const example = {
  id: '0b6c…',
  object: 'webhook_endpoint',
  url: 'https://example.com/tollgate-hook',
  events: ['payment.settled', 'agent.cap_reached'],
  cap_near_percent: 80,
  enabled: true,
  secret: 'whsec_…',
}

/**
 * Signed webhooks (docs/api.md, "Webhooks"): the user's endpoints, a test event, and each
 * endpoint's delivery log; the alerts (cap, balance and failure events) the dashboard lists.
 */
export async function webhookRoutes(app: FastifyInstance, webhooks: Webhooks) {
  const user = (r: { principal: { userId: string } | null }) => r.principal!.userId
  const tags = ['webhooks']
  app.post<{ Body: EndpointInput }>(
    '/webhooks',
    {
      schema: {
        tags,
        summary: 'Register a webhook endpoint; the answer holds its signing secret, shown only this once',
        body: endpointBody,
        response: {
          201: ok('the endpoint, with `secret`', example),
          400: errorResponse,
          409: errorResponse,
          ...authErrors,
        },
      },
    },
    async (request, reply) => reply.code(201).send(await webhooks.create(user(request), request.body ?? {})),
  )
  app.get(
    '/webhooks',
    { schema: { tags, summary: 'List your webhook endpoints', response: { 200: list('endpoints'), ...authErrors } } },
    (request) => webhooks.list(user(request)),
  )
  app.get<{ Params: { id: string } }>(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'One webhook endpoint (without its secret)',
        params: idParam,
        response: { 200: ok('the endpoint'), ...authErrors },
      },
    },
    (request) => webhooks.get(user(request), request.params.id),
  )
  app.patch<{ Params: { id: string }; Body: EndpointInput }>(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Change the URL, events or cap_near_percent, or enable/disable the endpoint',
        params: idParam,
        body: endpointBody,
        response: { 200: ok('the endpoint'), 400: errorResponse, ...authErrors },
      },
    },
    (request) => webhooks.update(user(request), request.params.id, request.body ?? {}),
  )
  app.delete<{ Params: { id: string } }>(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Delete the endpoint and its delivery log',
        params: idParam,
        response: { 200: ok('{id, deleted: true}'), ...authErrors },
      },
    },
    (request) => webhooks.remove(user(request), request.params.id),
  )
  await webhookLogRoutes(app, webhooks)
}

/** The test event, the delivery log and the alerts. */
async function webhookLogRoutes(app: FastifyInstance, webhooks: Webhooks) {
  const user = (r: { principal: { userId: string } | null }) => r.principal!.userId
  const tags = ['webhooks']
  app.post<{ Params: { id: string } }>(
    '/webhooks/:id/test',
    {
      schema: {
        tags,
        summary: 'Send a `webhook.test` event to the endpoint (delivered, signed, by the worker within a second or so)',
        params: idParam,
        response: { 202: ok('{event_id, delivery_id, status: "pending"}'), 409: errorResponse, ...authErrors },
      },
    },
    async (request, reply) => reply.code(202).send(await webhooks.sendTest(user(request), request.params.id)),
  )
  app.get<{ Params: { id: string }; Querystring: { limit?: number } }>(
    '/webhooks/:id/deliveries',
    {
      schema: {
        tags,
        summary: "The endpoint's delivery log, newest first: status, attempts, response code, latency, last error",
        params: idParam,
        querystring: {
          type: 'object',
          properties: { limit: { type: 'integer', minimum: 1, maximum: DELIVERIES_PAGE_MAX, default: 50 } },
        },
        response: { 200: list('deliveries'), 400: errorResponse, ...authErrors },
      },
    },
    (request) => webhooks.deliveries(user(request), request.params.id, request.query.limit),
  )
  app.get<{ Querystring: { limit?: number } }>(
    '/alerts',
    {
      schema: {
        tags,
        summary: 'Your latest alerts (cap, balance and failure events), newest first',
        querystring: {
          type: 'object',
          properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        },
        response: { 200: list('alerts'), 400: errorResponse, ...authErrors },
      },
    },
    (request) => webhooks.alerts(user(request), request.query.limit),
  )
}
