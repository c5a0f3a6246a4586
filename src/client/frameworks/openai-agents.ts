/**
 * Tollgate tools for the OpenAI Agents SDK (`@openai/agents`, an optional peer): `paid_fetch` and,
 * with an API address, `search_endpoints`, as function tools (strict schemas) for `new Agent({ tools })`.
 *
 * @example
 *   import { tollgateAgentTools } from 'tollgate/client/openai-agents'
 *   const agent = new Agent({ name: 'buyer', tools: tollgateAgentTools({ baseUrl: 'http://localhost:4020', agentKey: process.env.TOLLGATE_AGENT_KEY!, budget: 50_000n }) })
 */
import { tool, type Tool } from '@openai/agents'
import { PAID_FETCH_DESCRIPTION, SEARCH_DESCRIPTION, tollgateToolCore, type TollgateToolsOptions } from './core.js'
import { strictPaidFetchSchema, strictSearchSchema } from './schemas.js'

export function tollgateAgentTools(opts: TollgateToolsOptions): Tool[] {
  const core = tollgateToolCore(opts)
  const tools: Tool[] = [
    tool({
      name: 'paid_fetch',
      description: PAID_FETCH_DESCRIPTION,
      parameters: strictPaidFetchSchema,
      execute: (input, _context, details) => core.paidFetch(input, details?.signal),
    }),
  ]
  const search = core.searchEndpoints
  if (search)
    tools.push(
      tool({
        name: 'search_endpoints',
        description: SEARCH_DESCRIPTION,
        parameters: strictSearchSchema,
        execute: (input, _context, details) => search(input, details?.signal),
      }),
    )
  return tools
}
