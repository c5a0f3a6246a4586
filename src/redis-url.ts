// REDIS_URL's forms, parsed without loading a Redis client (config reads it).

/** A parsed REDIS_URL: one server, or the seed nodes of a cluster (the client discovers the rest). */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | {
      kind: 'cluster'
      nodes: { host: string; port: number }[]
      username?: string
      password?: string
      tls: boolean
    }

const CLUSTER_SCHEMES = ['redis+cluster:', 'rediss+cluster:']

/**
 * `redis://…` / `rediss://…`: one server. `redis+cluster://[user:password@]host:port,host:port[/]`
 * (`rediss+cluster://` for TLS): a Redis Cluster, given by one or more of its nodes. Throws a
 * message naming what is wrong (never the password).
 */
export function parseRedisUrl(url: string): RedisTarget {
  const m = /^([a-z+]+:)\/\/(.*)$/i.exec(url.trim())
  const scheme = m?.[1]?.toLowerCase()
  if (!m || !scheme) throw new Error('expected redis://, rediss://, redis+cluster:// or rediss+cluster://')
  if (scheme === 'redis:' || scheme === 'rediss:') {
    new URL(url) // throws on a malformed URL
    return { kind: 'single', url }
  }
  if (!CLUSTER_SCHEMES.includes(scheme))
    throw new Error('expected redis://, rediss://, redis+cluster:// or rediss+cluster://')
  let rest = m[2]!.replace(/\/+$/, '')
  if (rest.includes('/') || rest.includes('?'))
    throw new Error('a redis+cluster:// URL takes no database or options: host:port,host:port')
  let username: string | undefined
  let password: string | undefined
  const at = rest.lastIndexOf('@')
  if (at >= 0) {
    const auth = rest.slice(0, at)
    rest = rest.slice(at + 1)
    const colon = auth.indexOf(':')
    const user = decodeURIComponent(colon >= 0 ? auth.slice(0, colon) : auth)
    if (user) username = user
    if (colon >= 0) password = decodeURIComponent(auth.slice(colon + 1))
  }
  const nodes = rest.split(',').map((hp) => {
    const n = /^(\[[0-9a-f:.]+\]|[^:[\]]+):(\d{1,5})$/i.exec(hp.trim())
    const port = Number(n?.[2])
    if (!n || port < 1 || port > 65535) throw new Error(`cluster node "${hp.trim()}": expected host:port`)
    return { host: n[1]!.replace(/^\[|\]$/g, ''), port }
  })
  return { kind: 'cluster', nodes, username, password, tls: scheme === 'rediss+cluster:' }
}
