/** `tollgate config use|list|show`: the contexts in ~/.config/tollgate/config.json. */
import { parseOptions, type Command } from '../command.js'
import { configPath, readConfigFile, updateConfigFile, type Context } from '../config-file.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'

export const CONFIG_HELP = `usage: tollgate config use NAME      make NAME the current context
       tollgate config list          the contexts (current marked *), their API and deployment
       tollgate config show [NAME]   one context (default: the one in use), keys shortened
       (each takes --json)

A context is an API address with its keys: tollgate login makes one, tollgate setup adds the
agent. Pick one per command with --context NAME (or TOLLGATE_CONTEXT). The file is
~/.config/tollgate/config.json (mode 0600); docs/cli.md describes it.
`

/** A context as shown: secrets cut to their prefix. */
export function publicContext(c: Context): Record<string, string | null> {
  const cut = (k: string | undefined) => (k ? `${k.slice(0, 12)}…` : null)
  return {
    api_url: c.api_url ?? null,
    deployment: c.deployment ?? null,
    api_key: cut(c.api_key),
    agent_key: cut(c.agent_key),
    agent: c.agent ?? null,
  }
}

export async function configCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(rest, {}, CONFIG_HELP, { positionals: true })
  if (v.help || sub === '--help' || sub === '-h') {
    cmd.io.stdout(CONFIG_HELP)
    return EXIT.ok
  }
  const file = readConfigFile(cmd.io)
  const names = Object.keys(file.contexts)
  if (sub === 'use' && positionals.length === 1) {
    const name = positionals[0]!
    if (!(name in file.contexts))
      throw new UsageError(
        `no context "${name}"${names.length ? ` (there: ${names.join(', ')})` : ''}`,
        `create it with tollgate login --context ${name} --api-url <URL>`,
      )
    updateConfigFile(cmd.io, (f) => {
      f.current = name
    })
    const c = file.contexts[name]!
    cmd.out.result(
      { object: 'context', name, current: true, ...publicContext(c) },
      `now using context "${name}" (${c.api_url ?? 'default API'}${c.deployment ? `, ${c.deployment}` : ''})`,
    )
    return EXIT.ok
  }
  if (sub === 'list' && positionals.length === 0) {
    cmd.out.result(
      {
        object: 'list',
        current: file.current ?? null,
        data: names.map((n) => ({ name: n, current: n === file.current, ...publicContext(file.contexts[n]!) })),
      },
      () =>
        names.length === 0
          ? `no contexts in ${configPath(cmd.io)}: tollgate login makes one`
          : names.map((n) => {
              const c = file.contexts[n]!
              return `${n === file.current ? '*' : ' '} ${n.padEnd(12)} ${(c.api_url ?? '-').padEnd(30)} ${(c.deployment ?? '?').padEnd(10)} ${c.api_key ? 'api key' : '-'}  ${c.agent_key ? `agent ${c.agent ?? '(key only)'}` : '-'}`
            }),
    )
    return EXIT.ok
  }
  if (sub === 'show' && positionals.length <= 1) {
    const name = positionals[0] ?? cmd.contextFlag ?? (cmd.io.env.TOLLGATE_CONTEXT || undefined) ?? file.current
    if (!name || !(name in file.contexts))
      throw new UsageError(name ? `no context "${name}"` : `no context in use: tollgate login makes one`)
    const shown = { object: 'context', name, current: name === file.current, ...publicContext(file.contexts[name]!) }
    cmd.out.result(
      shown,
      Object.entries(shown)
        .filter(([k]) => k !== 'object')
        .map(([k, x]) => `${k.padEnd(10)} ${x ?? '-'}`),
    )
    return EXIT.ok
  }
  throw new UsageError(CONFIG_HELP)
}
