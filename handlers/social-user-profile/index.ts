import { cleanUsername, lookupUser, problemReason, xSettings } from '../_shared/misc-x-api.js'
import { defineHandler } from '../../src/pool/handler-contract.js'

interface Input {
  username: string
}

/** An X (Twitter) profile by username, from the X API v2 (https://docs.x.com/x-api, "User lookup by username"). */
export default defineHandler<Input>({
  slug: 'social-user-profile',
  description:
    'Public profile of an X (Twitter) account by username, from the X API: name, bio, location, website, avatar, creation date, verification, and follower, following, post and list counts.',
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
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'found; when true: id, username, name, description, location, url (the website link, as X gives it: often a t.co link), profileImageUrl, createdAt, protected, verified, verifiedType, pinnedPostId, ' +
      'metrics { followers, following, posts, listed, likes } (null where X does not give one), profileUrl. found:false with a reason (no such account, suspended) otherwise.',
    schema: {
      type: 'object',
      properties: {
        found: { type: 'boolean' },
        username: { type: 'string' },
        reason: { type: 'string' },
        id: { type: 'string' },
        name: { type: ['string', 'null'] },
        metrics: { type: 'object' },
      },
    },
    example: {
      found: true,
      id: '2244994945',
      username: 'XDevelopers',
      name: 'Developers',
      description: 'The voice of the X Developer Platform',
      location: 'Internet',
      url: 'https://t.co/3ZX3TNiZCY',
      profileImageUrl: 'https://pbs.twimg.com/profile_images/1683501992314798080/xl1POYLw_normal.jpg',
      createdAt: '2013-12-14T04:35:55.000Z',
      protected: false,
      verified: true,
      verifiedType: 'business',
      pinnedPostId: '1722701605825642574',
      metrics: { followers: 583423, following: 2048, posts: 14052, listed: 1672, likes: 2129 },
      profileUrl: 'https://x.com/XDevelopers',
    },
  },
  example: { username: 'XDevelopers' },
  async run(input, ctx) {
    const settings = xSettings(ctx, 'X profiles')
    const username = cleanUsername(input.username)
    const r = await lookupUser(settings, username)
    if ('problem' in r) return { body: { found: false, username, reason: problemReason(r.problem) } }
    const u = r.user
    const m = u.public_metrics ?? {}
    const n = (v: unknown) => (typeof v === 'number' ? v : null)
    return {
      body: {
        found: true,
        id: u.id,
        username: u.username ?? username,
        name: u.name ?? null,
        description: u.description ?? null,
        location: u.location ?? null,
        url: u.url || null,
        profileImageUrl: u.profile_image_url ?? null,
        createdAt: u.created_at ?? null,
        protected: u.protected ?? null,
        verified: u.verified ?? null,
        verifiedType: u.verified_type ?? null,
        pinnedPostId: u.pinned_tweet_id ?? null,
        metrics: {
          followers: n(m.followers_count),
          following: n(m.following_count),
          posts: n(m.tweet_count),
          listed: n(m.listed_count),
          likes: n(m.like_count),
        },
        profileUrl: `https://x.com/${u.username ?? username}`,
      },
    }
  },
})
