import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'

/**
 * OpenAPI 3 for every route registered after this (the document is built from route schemas),
 * served at /docs (Swagger UI) and /docs/json. Register it before the routes.
 */
export async function registerOpenApi(app: FastifyInstance, config: Readonly<Config>): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Tollgate user API',
        version: '1',
        description:
          `User-level API under /v1. Authenticate with \`Authorization: Bearer ${config.apiKeyPrefix}…\` (this is the ${config.deployment} deployment) ` +
          'or the dashboard session cookie. Errors are `{statusCode, code, error, message}`. Creating POSTs accept `Idempotency-Key`. ' +
          'Every answer carries RateLimit-Limit / RateLimit-Remaining / RateLimit-Reset. ' +
          'The paid endpoints on the proxy have their own documents: /docs/endpoints/<namespace>.json (tollgate for the hosted services).',
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: `${config.apiKeyPrefix}… API key` },
          session: { type: 'apiKey', in: 'cookie', name: 'tollgate_session' },
        },
      },
      security: [{ apiKey: [] }, { session: [] }],
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
}
