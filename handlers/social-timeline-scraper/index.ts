import { callProvider, joinUrl } from '../_shared/outbound.js'
import {
  cleanUsername,
  lookupUser,
  problemReason,
  X_PROVIDER,
  xSettings,
  type XProblem,
} from '../_shared/misc-x-api.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

interface Input {
  username: string
  limit?: number
  excludeReplies?: boolean
  excludeRetweets?: boolean
  paginationToken?: string
}

/** X's bounds for max_results on the user posts timeline */
const X_MIN_RESULTS = 5
const MAX_LIMIT = 100

/**
 * `GET /2/users/{id}/tweets` (https://docs.x.com/x-api, "User Posts timeline"):
 *   { data: [{ id, text, created_at, lang, public_metrics: { retweet_count, reply_count, like_count, quote_count,
 *     bookmark_count, impression_count }, edit_history_tweet_ids }], meta: { result_count, newest_id, oldest_id, next_token } }
 *   no posts → { meta: { result_count: 0 } }; a protected account → 200 with errors (Authorization Error)
 */
interface Post {
  id?: string
  text?: string
  created_at?: string
  lang?: string
  public_metrics?: {
    retweet_count?: number
    reply_count?: number
    like_count?: number
    quote_count?: number
    bookmark_count?: number
    impression_count?: number
  }
}

/** Recent posts of an X (Twitter) account, from the X API v2. */
export default defineHandler<Input>({
  slug: 'social-timeline-scraper',
  description:
    'Recent posts of an X (Twitter) account by username, newest first, from the X API: text, time, language, link and engagement counts; replies and reposts can be left out.',
  providers: ['X_API_URL', 'X_BEARER_TOKEN'],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['username'],
    properties: {
      username: {
        type: 'string',
        minLength: 1,
        maxLength: 60,
        description: 'The X username (handle), e.g. "XDevelopers"; a leading @ or an x.com profile URL is accepted.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_LIMIT,
        default: 10,
        description: `How many recent posts to return (1–${MAX_LIMIT}, default 10).`,
      },
      excludeReplies: { type: 'boolean', default: false, description: 'Leave out replies to other posts.' },
      excludeRetweets: { type: 'boolean', default: false, description: 'Leave out reposts (retweets).' },
      paginationToken: {
        type: 'string',
        maxLength: 200,
        pattern: '^[A-Za-z0-9_-]+$',
        description: 'nextToken from a previous answer, to read older posts.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'found; user { id, username, name }; posts[] (newest first) { id, text, createdAt, lang, url, metrics { reposts, replies, likes, quotes, bookmarks, impressions } (null where X gives none) }; count; nextToken (null at the end). ' +
      'found:false with a reason when there is no such account (or it is suspended); a protected account gives found:true, posts [] and a reason.',
    schema: {
      type: 'object',
      properties: {
        found: { type: 'boolean' },
        user: { type: 'object' },
        posts: { type: 'array', items: { type: 'object' } },
        count: { type: 'integer' },
        nextToken: { type: ['string', 'null'] },
        reason: { type: 'string' },
      },
    },
    example: {
      found: true,
      user: { id: '2244994945', username: 'XDevelopers', name: 'Developers' },
      posts: [
        {
          id: '1860000000000000000',
          text: 'Post number 1',
          createdAt: '2024-11-22T15:00:00.000Z',
          lang: 'en',
          url: 'https://x.com/XDevelopers/status/1860000000000000000',
          metrics: { reposts: 10, replies: 0, likes: 100, quotes: 1, bookmarks: 2, impressions: 5000 },
        },
        {
          id: '1859999999999999999',
          text: 'Post number 2',
          createdAt: '2024-11-21T15:00:00.000Z',
          lang: 'en',
          url: 'https://x.com/XDevelopers/status/1859999999999999999',
          metrics: { reposts: 11, replies: 1, likes: 200, quotes: 1, bookmarks: 2, impressions: 5001 },
        },
        {
          id: '1859999999999999997',
          text: 'Post number 4',
          createdAt: '2024-11-19T15:00:00.000Z',
          lang: 'en',
          url: 'https://x.com/XDevelopers/status/1859999999999999997',
          metrics: { reposts: 13, replies: 3, likes: 400, quotes: 1, bookmarks: 2, impressions: 5003 },
        },
      ],
      count: 5,
      nextToken: 'next-page-token',
    },
  },
  example: { username: 'XDevelopers', limit: 5, excludeReplies: true },
  async run(input, ctx) {
    const settings = xSettings(ctx, 'X timelines')
    const username = cleanUsername(input.username)
    const limit = input.limit ?? 10
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      throw new HandlerInputError('limit', `limit must be 1–${MAX_LIMIT}`)
    const r = await lookupUser(settings, username, 'protected')
    if ('problem' in r) return { body: { found: false, username, reason: problemReason(r.problem) } }
    const user = { id: r.user.id, username: r.user.username ?? username, name: r.user.name ?? null }
    const exclude = [input.excludeReplies ? 'replies' : '', input.excludeRetweets ? 'retweets' : '']
      .filter(Boolean)
      .join(',')
    const res = await callProvider(
      X_PROVIDER,
      joinUrl(settings.base, `/2/users/${encodeURIComponent(user.id)}/tweets`, {
        max_results: Math.max(X_MIN_RESULTS, limit),
        exclude: exclude || undefined,
        'tweet.fields': 'created_at,public_metrics,lang',
        pagination_token: input.paginationToken,
      }),
      // 400 is X's answer to a pagination token it does not know (stale, or from another query)
      { headers: { authorization: `Bearer ${settings.token}` }, acceptStatus: [400] },
    )
    if (res.status === 400) {
      if (input.paginationToken !== undefined && /pagination_token/.test(res.text))
        throw new HandlerInputError(
          'paginationToken',
          'paginationToken: X does not accept this token (take nextToken from a previous answer for the same account and filters)',
        )
      throw new HandlerUpstreamError('upstream_failed', `${X_PROVIDER} answered HTTP 400`)
    }
    const a = res.json as
      { data?: Post[]; meta?: { result_count?: number; next_token?: string }; errors?: XProblem[] } | undefined
    if (!a || typeof a !== 'object')
      throw new HandlerUpstreamError('upstream_failed', `${X_PROVIDER} answered an unexpected shape`)
    if (!Array.isArray(a.data)) {
      if (Array.isArray(a.errors) && a.errors.length > 0) {
        const e = a.errors[0]!
        const reason = /not-authorized|authoriz/i.test(`${e.type} ${e.title}`)
          ? 'the account is protected: its posts are visible to approved followers only'
          : problemReason(e)
        return { body: { found: true, user, posts: [], count: 0, nextToken: null, reason } }
      }
      if (a.meta && a.meta.result_count === 0)
        return { body: { found: true, user, posts: [], count: 0, nextToken: null } }
      throw new HandlerUpstreamError('upstream_failed', `${X_PROVIDER} answered without posts or a count`)
    }
    const n = (v: unknown) => (typeof v === 'number' ? v : null)
    const posts = a.data
      .slice(0, limit)
      .filter((p) => typeof p.id === 'string')
      .map((p) => ({
        id: p.id,
        text: p.text ?? '',
        createdAt: p.created_at ?? null,
        lang: p.lang ?? null,
        url: `https://x.com/${user.username}/status/${p.id}`,
        metrics: {
          reposts: n(p.public_metrics?.retweet_count),
          replies: n(p.public_metrics?.reply_count),
          likes: n(p.public_metrics?.like_count),
          quotes: n(p.public_metrics?.quote_count),
          bookmarks: n(p.public_metrics?.bookmark_count),
          impressions: n(p.public_metrics?.impression_count),
        },
      }))
    // below X's minimum of 5 the page is cut, and X's next_token would skip the cut posts: no token then
    const nextToken = a.data.length <= limit && typeof a.meta?.next_token === 'string' ? a.meta.next_token : null
    return { body: { found: true, user, posts, count: posts.length, nextToken } }
  },
})
