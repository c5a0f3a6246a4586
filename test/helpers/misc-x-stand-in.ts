import type { ReceivedRequest, StandInAnswer } from './provider-stand-in.js'

/**
 * Routes of an X API v2 stand-in, answering in the shapes of https://docs.x.com/x-api
 * (User lookup by username; User Posts timeline; 200-with-errors for unknown or suspended users).
 * XDevelopers (id 2244994945) has 7 posts, newest first: the 3rd is a reply and the 5th a retweet.
 */
export const X_TOKEN = 'x-bearer-test-token'

export const XDEV = {
  id: '2244994945',
  name: 'Developers',
  username: 'XDevelopers',
  created_at: '2013-12-14T04:35:55.000Z',
  description: 'The voice of the X Developer Platform',
  location: 'Internet',
  url: 'https://t.co/3ZX3TNiZCY',
  profile_image_url: 'https://pbs.twimg.com/profile_images/1683501992314798080/xl1POYLw_normal.jpg',
  protected: false,
  verified: true,
  verified_type: 'business',
  pinned_tweet_id: '1722701605825642574',
  public_metrics: {
    followers_count: 583423,
    following_count: 2048,
    tweet_count: 14052,
    listed_count: 1672,
    like_count: 2129,
  },
}

export const XDEV_POSTS = Array.from({ length: 7 }, (_, i) => ({
  id: String(1860000000000000000n - BigInt(i)),
  text: i === 2 ? '@someone thanks for the report' : i === 4 ? 'RT @XEng: new endpoint' : `Post number ${i + 1}`,
  created_at: `2024-11-${String(22 - i).padStart(2, '0')}T15:00:00.000Z`,
  lang: 'en',
  edit_history_tweet_ids: [String(1860000000000000000n - BigInt(i))],
  public_metrics: {
    retweet_count: 10 + i,
    reply_count: i,
    like_count: 100 * (i + 1),
    quote_count: 1,
    bookmark_count: 2,
    impression_count: 5000 + i,
  },
}))

const notFound = (name: string) => ({
  errors: [
    {
      value: name,
      detail: `Could not find user with username: [${name}].`,
      title: 'Not Found Error',
      resource_type: 'user',
      parameter: 'username',
      resource_id: name,
      type: 'https://api.twitter.com/2/problems/resource-not-found',
    },
  ],
})

export function xStandIn(req: ReceivedRequest): StandInAnswer {
  if (req.headers.authorization !== `Bearer ${X_TOKEN}`)
    return { status: 401, json: { title: 'Unauthorized', type: 'about:blank', status: 401, detail: 'Unauthorized' } }
  const byName = /^\/2\/users\/by\/username\/([^/]+)$/.exec(req.path)
  if (byName) {
    const name = decodeURIComponent(byName[1]!)
    if (name.toLowerCase() === 'xdevelopers') return { json: { data: XDEV } }
    if (name === 'suspendeduser')
      return {
        json: {
          errors: [
            {
              value: name,
              detail: `User has been suspended: [${name}].`,
              title: 'Forbidden',
              resource_type: 'user',
              parameter: 'username',
              resource_id: name,
              type: 'https://api.twitter.com/2/problems/resource-not-found',
            },
          ],
        },
      }
    if (name === 'quietuser')
      return {
        json: {
          data: {
            id: '42',
            name: 'Quiet',
            username: 'quietuser',
            public_metrics: { followers_count: 0, following_count: 0, tweet_count: 0, listed_count: 0 },
          },
        },
      }
    if (name === 'lockeduser')
      return { json: { data: { id: '43', name: 'Locked', username: 'lockeduser', protected: true } } }
    return { json: notFound(name) }
  }
  const tweets = /^\/2\/users\/(\d+)\/tweets$/.exec(req.path)
  if (tweets) {
    if (tweets[1] === '42') return { json: { meta: { result_count: 0 } } }
    if (tweets[1] === '43')
      return {
        json: {
          errors: [
            {
              resource_id: '43',
              parameter: 'id',
              resource_type: 'user',
              section: 'data',
              title: 'Authorization Error',
              value: '43',
              detail: 'Sorry, you are not authorized to see the user with id: [43].',
              type: 'https://api.twitter.com/2/problems/not-authorized-for-resource',
            },
          ],
        },
      }
    const max = Number(req.query.get('max_results') ?? 10)
    if (max < 5 || max > 100)
      return {
        status: 400,
        json: {
          title: 'Invalid Request',
          detail: 'One or more parameters to your request was invalid.',
          type: 'https://api.twitter.com/2/problems/invalid-request',
        },
      }
    const exclude = (req.query.get('exclude') ?? '').split(',')
    const start = req.query.get('pagination_token') === 'next-page-token' ? 3 : 0
    const all = XDEV_POSTS.slice(start).filter(
      (p) =>
        !(exclude.includes('replies') && p.text.startsWith('@')) &&
        !(exclude.includes('retweets') && p.text.startsWith('RT ')),
    )
    const page = all.slice(0, max)
    return {
      json: {
        data: page,
        meta: {
          result_count: page.length,
          newest_id: page[0]?.id,
          oldest_id: page.at(-1)?.id,
          next_token: page.length < all.length || start === 0 ? 'next-page-token' : undefined,
        },
      },
    }
  }
  return { status: 404, json: { title: 'Not Found', detail: 'no such route' } }
}
