/**
 * X (Twitter) API v2 user lookup, shared by social-user-profile and social-timeline-scraper.
 * Shapes from https://docs.x.com/x-api (users: "User lookup by username", posts: "User Posts timeline").
 *
 * X answers a lookup of an unknown or suspended user with HTTP 200 and `errors` instead of `data`:
 *   { errors: [{ value, detail: "Could not find user with username: [x].", title: "Not Found Error",
 *     resource_type: "user", parameter: "username", type: "https://api.twitter.com/2/problems/resource-not-found" }] }
 */
import { joinUrl, providerJson, providerSetting } from './outbound.js'
import { HandlerInputError, HandlerUpstreamError, type HandlerContext } from '../../src/pool/handler-contract.js'

export const X_PROVIDER = 'X API'

/** X's own rule for usernames (the API rejects anything else with 400). */
const USERNAME = /^[A-Za-z0-9_]{1,15}$/

export interface XProblem {
  title?: string
  detail?: string
  type?: string
  value?: string
}

export interface XUser {
  id: string
  name?: string
  username?: string
  created_at?: string
  description?: string
  location?: string
  url?: string
  profile_image_url?: string
  protected?: boolean
  verified?: boolean
  verified_type?: string
  pinned_tweet_id?: string
  public_metrics?: {
    followers_count?: number
    following_count?: number
    tweet_count?: number
    listed_count?: number
    like_count?: number
    media_count?: number
  }
}

export const USER_FIELDS =
  'created_at,description,location,url,profile_image_url,protected,verified,verified_type,pinned_tweet_id,public_metrics'

/** The X settings: base URL and bearer token (503 when either is missing). */
export function xSettings(ctx: HandlerContext, what: string) {
  return { base: providerSetting(ctx, 'X_API_URL', what), token: providerSetting(ctx, 'X_BEARER_TOKEN', what) }
}

/** A buyer's username without the @ and surrounding blanks, or 400 on `field`. */
export function cleanUsername(raw: string, field = 'username'): string {
  const u = raw
    .trim()
    .replace(/^@/, '')
    .replace(/^https?:\/\/(www\.)?(x|twitter)\.com\//i, '')
    .replace(/[/?#].*$/, '')
  if (!USERNAME.test(u))
    throw new HandlerInputError(
      field,
      `${field} must be an X username: 1–15 letters, digits or underscores (an @ or profile URL is fine)`,
    )
  return u
}

/** Looks a user up by username: the user, or the problem X reported (not found, suspended). */
export async function lookupUser(
  settings: { base: string; token: string },
  username: string,
  fields = USER_FIELDS,
): Promise<{ user: XUser } | { problem: XProblem }> {
  const a = await providerJson<{ data?: XUser; errors?: XProblem[] }>(
    X_PROVIDER,
    joinUrl(settings.base, `/2/users/by/username/${encodeURIComponent(username)}`, { 'user.fields': fields }),
    {
      headers: { authorization: `Bearer ${settings.token}` },
    },
  )
  if (a?.data && typeof a.data.id === 'string') return { user: a.data }
  const problem = Array.isArray(a?.errors) ? a.errors[0] : undefined
  if (!problem) throw new HandlerUpstreamError('upstream_failed', `${X_PROVIDER} answered neither a user nor an error`)
  return { problem }
}

/** A short reason for a problem X reported about a user. */
export function problemReason(p: XProblem): string {
  const detail = typeof p.detail === 'string' ? p.detail.slice(0, 200) : ''
  if (/suspended/i.test(detail)) return 'the account is suspended'
  if (/not.?found/i.test(`${p.title} ${p.type}`) || /could not find/i.test(detail))
    return 'no account has this username'
  return detail || p.title || 'X returned no user'
}
