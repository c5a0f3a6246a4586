/**
 * Tollgate tools for LangChain.js (`@langchain/core`, an optional peer): `paid_fetch` and, with an
 * API address, `search_endpoints`. Each answers the model with JSON text and keeps the structured
 * result (status, cost in USDC, payment id) as the ToolMessage's `artifact`.
 *
 * @example
 *   import { tollgateLangChainTools } from 'tollgate/client/langchain'
 *   const tools = tollgateLangChainTools({ baseUrl: 'http://localhost:4020', agentKey: process.env.TOLLGATE_AGENT_KEY!, maxPerCall: 10_000n })
 *   const model = new ChatOpenAI({ model: 'gpt-4o-mini' }).bindTools(tools)
 */
import { tool, type StructuredToolInterface } from '@langchain/core/tools'
import { PAID_FETCH_DESCRIPTION, SEARCH_DESCRIPTION, tollgateToolCore, type TollgateToolsOptions } from './core.js'
import { paidFetchSchema, searchSchema } from './schemas.js'

export function tollgateLangChainTools(opts: TollgateToolsOptions): StructuredToolInterface[] {
  const core = tollgateToolCore(opts)
  const tools: StructuredToolInterface[] = [
    tool(
      async (input, config) => {
        const result = await core.paidFetch(input, config?.signal)
        return [JSON.stringify(result), result]
      },
      {
        name: 'paid_fetch',
        description: PAID_FETCH_DESCRIPTION,
        schema: paidFetchSchema,
        responseFormat: 'content_and_artifact',
      },
    ),
  ]
  const search = core.searchEndpoints
  if (search)
    tools.push(
      tool(
        async (input, config) => {
          const result = await search(input, config?.signal)
          return [JSON.stringify(result), result]
        },
        {
          name: 'search_endpoints',
          description: SEARCH_DESCRIPTION,
          schema: searchSchema,
          responseFormat: 'content_and_artifact',
        },
      ),
    )
  return tools
}
