/** What the /v1 routes share (index.ts builds it and registers them): apart, so no route imports index.ts. */
import type { Deps } from '../../../deps.js'

/** The default limit of every credential on /v1 (and of each agent key on /v1/agent's publishing routes). */
export const RATE_LIMIT_PER_MINUTE = 600

export interface V1Context {
  deps: Deps
  limiter: { redis: Deps['redis']; key: Deps['key'] }
  loginMax: number
}
