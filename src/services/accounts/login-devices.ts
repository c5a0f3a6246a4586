import { randomBytes } from 'node:crypto'
import type { RedisClient } from '../../redis-client.js'
import { hashSecret, isWellFormed, newSecret } from '../../secrets/secret-token.js'

/** The cookie that marks a browser as one that has logged in to an account before. */
export const DEVICE_COOKIE = 'tollgate_device'
/** A browser stays known for 180 days after its last login. */
export const DEVICE_TTL_SECONDS = 180 * 24 * 3600
const PREFIX = 'dev_'

/** The email as the login throttle counts it: trimmed, lower case, hashed (Redis keys stay short, and hold no address). */
export function loginEmailId(email: string): string {
  return hashSecret(email.trim().toLowerCase())
}

/**
 * Browsers that have logged in to an account: OWASP's "device cookies" (Slow Down Online Guessing
 * Attacks with Device Cookies). A successful login gives the browser a random token (httpOnly
 * cookie); Redis keeps, under the token's hash, the device's id and the accounts (email ids) it
 * has logged in to. The login throttle lets such a browser through the per-email backoff that
 * strangers' failures raise, so nobody can lock an owner out of the browsers they use.
 *
 * @example
 *   const device = await devices.recognise(request.cookies[DEVICE_COOKIE], emailId) // before the password check
 *   reply.setCookie(DEVICE_COOKIE, await devices.remember(request.cookies[DEVICE_COOKIE], emailId), …) // after a success
 */
export function createLoginDevices({ redis, key }: { redis: RedisClient; key: (...parts: string[]) => string }) {
  const hashKey = (token: string) => key('login-device', hashSecret(token))
  return {
    /**
     * The device's id (what its own login limit counts under) when `token` is a device cookie that
     * has logged in to `emailId`; otherwise, or when Redis does not answer, undefined (a stranger).
     */
    async recognise(token: string | undefined, emailId: string): Promise<string | undefined> {
      if (token === undefined || !isWellFormed(token, PREFIX)) return undefined
      const [id, known] = await redis.hmget(hashKey(token), 'id', emailId).catch(() => [null, null])
      return id && known ? id : undefined
    },

    /**
     * After a successful login: a new token for this browser, knowing `emailId` and every account
     * the old token knew, under the same device id (so the device's login limit is not reset by
     * logging in). The old token ends, so a token planted in the browser by someone else (a
     * sibling subdomain can set cookies) never comes to know this account.
     */
    async remember(token: string | undefined, emailId: string): Promise<string> {
      const old =
        token !== undefined && isWellFormed(token, PREFIX)
          ? await redis.hgetall(hashKey(token)).catch(() => ({}) as Record<string, string>)
          : {}
      const next = newSecret(PREFIX).secret
      await redis
        .multi()
        .hset(hashKey(next), { ...old, id: old.id ?? randomBytes(16).toString('hex'), [emailId]: '1' })
        .expire(hashKey(next), DEVICE_TTL_SECONDS)
        .exec()
        .catch(() => {})
      // after the new token is stored, on its own: the two tokens' keys may sit in different
      // slots of a Redis Cluster, and one MULTI must not span slots
      if (token !== undefined && old.id) await redis.del(hashKey(token)).catch(() => {})
      return next
    },
  }
}

export type LoginDevices = ReturnType<typeof createLoginDevices>
