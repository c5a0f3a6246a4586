/**
 * `--agent <name|address>`: one of the user's agents, by its wallet address or its name; without
 * the flag, the context's agent (the one tollgate setup chose).
 */
import type { Api } from './api-client.js'
import { UsageError } from './errors.js'
import type { Settings } from './settings.js'

export interface AgentView {
  object: 'agent'
  address: string
  name: string
  spend_caps: { per_transaction: string | null; daily: string | null; monthly: string | null }
  top_up: { enabled: boolean; threshold: string; amount: string; funding_source: string }
  created_at: string
  updated_at: string
}

export const ADDRESS = /^0x[0-9a-fA-F]{40}$/

export async function resolveAgent(api: Api, settings: Settings, ref: string | undefined): Promise<AgentView> {
  const wanted = ref ?? settings.context.agent
  if (!wanted)
    throw new UsageError(
      'which agent? give --agent <name|address> (tollgate agents list shows yours), or run tollgate setup to pick a default',
    )
  if (ADDRESS.test(wanted)) return api.user<AgentView>('GET', `/v1/agents/${wanted}`)
  const { data } = await api.user<{ data: AgentView[] }>('GET', '/v1/agents')
  const named = data.filter((a) => a.name === wanted)
  const matches = named.length ? named : data.filter((a) => a.name.toLowerCase() === wanted.toLowerCase())
  if (matches.length === 1) return matches[0]!
  if (matches.length === 0)
    throw new UsageError(
      `no agent named "${wanted}"${data.length ? ` (yours: ${data.map((a) => `"${a.name}"`).join(', ')})` : ' (you have none: tollgate agents create NAME)'}`,
    )
  throw new UsageError(
    `${matches.length} agents are named "${wanted}": give the address instead (${matches.map((a) => a.address).join(', ')})`,
  )
}
