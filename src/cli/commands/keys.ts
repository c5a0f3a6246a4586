/**
 * `tollgate keys create|list|revoke`: an agent's keys (ak_…), which pay and read its budget.
 * `tollgate keys rotate-master` is the operator's command (rotate-master.ts).
 */
import os from 'node:os'
import { resolveAgent } from '../agent-ref.js'
import { parseOptions, type Command } from '../command.js'
import { updateConfigFile } from '../config-file.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { checkKeyDeployment } from '../key-deployment.js'
import { keysCli } from './rotate-master.js'

export const KEYS_HELP = `usage: tollgate keys create [--agent <name|address>] [--name N] [--save] [--json]
       tollgate keys list [--agent <name|address>] [--json]
       tollgate keys revoke <key-id> [--agent <name|address>] [--json]
       tollgate keys rotate-master [--dry-run]     (operator; see tollgate keys rotate-master --help)

create  a new agent key; its secret is printed once. --save stores it (and the agent) in the
        context, for fetch, budget and payments status
list    the agent's keys: id, name, prefix, last use, revoked
revoke  the key stops working at once, on every process
Default agent: the context's (tollgate setup). Uses the API key.
`

export interface AgentKey {
  object: 'agent_key'
  id: string
  agent: string
  name: string
  prefix: string
  last4: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
  secret?: string
}

export async function keysCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  if (sub === 'rotate-master') {
    const code = await keysCli(args, {
      out: (l) => cmd.io.stdout(l + '\n'),
      err: (l) => cmd.io.stderr(l + '\n'),
      env: cmd.io.env,
    })
    return code === 2 ? EXIT.usage : code
  }
  const { values: v, positionals } = parseOptions(
    rest,
    { agent: { type: 'string' }, name: { type: 'string' }, save: { type: 'boolean' } },
    KEYS_HELP,
    { positionals: true },
  )
  if (v.help || sub === '--help' || sub === '-h') {
    cmd.io.stdout(KEYS_HELP)
    return EXIT.ok
  }
  if (!['create', 'list', 'revoke'].includes(sub ?? '') || positionals.length !== (sub === 'revoke' ? 1 : 0))
    throw new UsageError(KEYS_HELP)
  const api = cmd.api()
  const s = cmd.settings()
  const a = await resolveAgent(api, s, v.agent)
  if (sub === 'create') {
    const k = await api.user<AgentKey & { secret: string }>('POST', `/v1/agents/${a.address}/keys`, {
      body: { name: v.name ?? `cli@${cmd.io.hostname ?? os.hostname()}` },
    })
    if (v.save) saveAgentKey(cmd, k.secret, a.address)
    cmd.out.result({ ...k, saved: Boolean(v.save) }, k.secret)
    cmd.out.note(
      `agent key "${k.name}" (${k.id}) for ${a.address}: the secret above is shown only once${v.save ? `; stored in context "${s.contextName}"` : ' (--save stores it in the context)'}`,
    )
    return EXIT.ok
  }
  if (sub === 'list') {
    const { data } = await api.user<{ data: AgentKey[] }>('GET', `/v1/agents/${a.address}/keys`)
    cmd.out.result({ object: 'list', data }, () =>
      data.length === 0
        ? `no keys for ${a.address}: tollgate keys create`
        : data.map(
            (k) =>
              `${k.id}  ${k.prefix}…${k.last4}  ${k.name}  ${k.revoked_at ? `revoked ${k.revoked_at}` : `last used ${k.last_used_at ?? 'never'}`}`,
          ),
    )
    return EXIT.ok
  }
  const k = await api.user<AgentKey>('DELETE', `/v1/agents/${a.address}/keys/${encodeURIComponent(positionals[0]!)}`)
  cmd.out.result(k, `revoked agent key "${k.name}" (${k.prefix}…${k.last4}) of ${a.address}`)
  return EXIT.ok
}

/** Stores an agent key and its agent in the context in use, refusing a key of the other deployment. */
export function saveAgentKey(cmd: Command, secret: string, agent: string): void {
  const s = cmd.settings()
  if (!s.contextName) throw new UsageError('no context to store the key in: tollgate login first')
  checkKeyDeployment(secret, s.context.deployment, 'the new agent key', `context "${s.contextName}"`)
  updateConfigFile(cmd.io, (file) => {
    file.contexts[s.contextName!] = { ...file.contexts[s.contextName!], agent_key: secret, agent }
  })
}
