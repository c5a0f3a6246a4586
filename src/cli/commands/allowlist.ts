/** `tollgate allowlist list|add|remove`: the sellers an agent may pay (empty: any seller). */
import { resolveAgent } from '../agent-ref.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const ALLOWLIST_HELP = `usage: tollgate allowlist list [--agent <name|address>] [--json]
       tollgate allowlist add (--pay-to 0x… | --namespace NS | --host HOST) [--agent <name|address>] [--json]
       tollgate allowlist remove (<entry-id> | --pay-to 0x… | --namespace NS | --host HOST) [--agent …] [--json]

An agent with an empty allowlist may pay any seller; otherwise only a seller one entry matches:
its payTo address, its namespace on this platform's proxy, or the URL's host name.
Default agent: the context's (tollgate setup). Uses the API key.
`

interface Entry {
  id: string
  kind: 'pay_to' | 'namespace' | 'host'
  value: string
}

export async function allowlistCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(
    rest,
    {
      agent: { type: 'string' },
      'pay-to': { type: 'string' },
      namespace: { type: 'string' },
      host: { type: 'string' },
    },
    ALLOWLIST_HELP,
    { positionals: true },
  )
  if (v.help || sub === '--help' || sub === '-h') {
    cmd.io.stdout(ALLOWLIST_HELP)
    return EXIT.ok
  }
  const given = (
    [
      ['pay_to', v['pay-to']],
      ['namespace', v.namespace],
      ['host', v.host],
    ] as const
  ).filter(([, x]) => x !== undefined) as Array<[Entry['kind'], string]>
  if (given.length > 1) throw new UsageError('give one of --pay-to, --namespace, --host')
  const api = cmd.api()
  const load = async () => {
    const a = await resolveAgent(api, cmd.settings(), v.agent)
    return { a, path: `/v1/agents/${a.address}/allowlist` }
  }
  if (sub === 'list' && positionals.length === 0 && given.length === 0) {
    const { a, path } = await load()
    const { data } = await api.user<{ data: Entry[] }>('GET', path)
    cmd.out.result({ object: 'list', agent: a.address, data }, () =>
      data.length === 0
        ? `"${a.name}" may pay any seller (empty allowlist)`
        : data.map((e) => `${e.id}  ${e.kind.padEnd(9)}  ${e.value}`),
    )
    return EXIT.ok
  }
  if (sub === 'add' && positionals.length === 0 && given.length === 1) {
    const { a, path } = await load()
    const [kind, value] = given[0]!
    const e = await api.user<Entry>('POST', path, { body: { kind, value } })
    cmd.out.result(e, `"${a.name}" may now pay ${kind} ${e.value} (entry ${e.id})`)
    return EXIT.ok
  }
  if (sub === 'remove' && positionals.length + given.length === 1) {
    const { a, path } = await load()
    let id: string | undefined = positionals[0]
    if (!id) {
      const [kind, value] = given[0]!
      const { data } = await api.user<{ data: Entry[] }>('GET', path)
      id = data.find((e) => e.kind === kind && e.value.toLowerCase() === value.toLowerCase())?.id
      if (!id) throw new UsageError(`"${a.name}" has no allowlist entry ${kind} ${value} (tollgate allowlist list)`)
    }
    await api.user('DELETE', `${path}/${encodeURIComponent(id)}`)
    cmd.out.result({ object: 'allowlist_entry', id, deleted: true }, `removed allowlist entry ${id} of "${a.name}"`)
    return EXIT.ok
  }
  throw new UsageError(ALLOWLIST_HELP)
}
