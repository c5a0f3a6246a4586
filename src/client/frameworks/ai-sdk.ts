/**
 * Tollgate tools for the Vercel AI SDK (`ai`, an optional peer): `paid_fetch` and, with an API
 * address, `search_endpoints`, for `generateText({ tools })` / `streamText`.
 *
 * @example
 *   import { tollgateTools } from 'tollgate/client/ai-sdk'
 *   const tools = tollgateTools({ baseUrl: 'http://localhost:4020', agentKey: process.env.TOLLGATE_AGENT_KEY!, budget: 50_000n })
 *   await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'Get me a UUID' })
 */
import { tool, type Tool } from 'ai'
import { PAID_FETCH_DESCRIPTION, SEARCH_DESCRIPTION, tollgateToolCore, type TollgateToolsOptions } from './core.js'
import { paidFetchSchema, searchSchema } from './schemas.js'

export function tollgateTools(opts: TollgateToolsOptions): Record<string, Tool> {
  const core = tollgateToolCore(opts)
  const tools: Record<string, Tool> = {
    paid_fetch: tool({
      description: PAID_FETCH_DESCRIPTION,
      inputSchema: paidFetchSchema,
      execute: (input, { abortSignal }) => core.paidFetch(input, abortSignal),
    }),
  }
  const search = core.searchEndpoints
  if (search)
    tools.search_endpoints = tool({
      description: SEARCH_DESCRIPTION,
      inputSchema: searchSchema,
      execute: (input, { abortSignal }) => search(input, abortSignal),
    })
  return tools
}
