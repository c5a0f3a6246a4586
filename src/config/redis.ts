import { parseRedisUrl } from '../redis-url.js'
import type { EnvReader } from './env-reader.js'
import { redactUrl } from './redact-url.js'
import type { Config, Deployment } from './types.js'

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'

/** REDIS_URL (one Redis, redis:// or rediss://, or a Redis Cluster, redis+cluster://host:port,host:port) and REDIS_PREFIX. */
export function readRedis(r: EnvReader, deployment: Deployment): Pick<Config, 'redisUrl' | 'redisPrefix'> {
  let redisUrl = (r.optional('REDIS_URL') ?? DEFAULT_REDIS_URL).replace(/\/+$/, '')
  try {
    parseRedisUrl(redisUrl)
  } catch (err) {
    r.problems.push(`REDIS_URL: ${(err as Error).message}, got "${redactUrl(redisUrl)}"`)
    redisUrl = DEFAULT_REDIS_URL
  }
  // keys put their hash tag (`{payer}`) after the prefix: a brace in it would become the tag
  const redisPrefix = r.str('REDIS_PREFIX', `tollgate:${deployment}`)
  if (/[{}]/.test(redisPrefix))
    r.problems.push(`REDIS_PREFIX: must not contain { or } (keys hash-tag their own parts), got "${redisPrefix}"`)
  return { redisUrl, redisPrefix }
}
