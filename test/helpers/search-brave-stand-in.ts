/**
 * Brave Search API answers in their documented shapes, for stand-in servers
 * (https://api-dashboard.search.brave.com/app/documentation/web-search/responses,
 * https://api-dashboard.search.brave.com/app/documentation/suggest/responses).
 */

export interface StandInResult {
  title: string
  url: string
  description?: string
  age?: string
  page_age?: string
  language?: string
  family_friendly?: boolean
  extra_snippets?: string[]
}

/** A WebSearchApiResponse with the given web results (none: no `web` key, as Brave answers). */
export function braveWebResponse(q: string, results: StandInResult[], o: { altered?: string; more?: boolean } = {}) {
  return {
    type: 'search',
    query: {
      original: q,
      ...(o.altered ? { altered: o.altered } : {}),
      show_strict_warning: false,
      is_navigational: false,
      is_news_breaking: false,
      spellcheck_off: true,
      country: 'us',
      bad_results: false,
      should_fallback: false,
      postal_code: '',
      city: '',
      header_country: '',
      more_results_available: o.more ?? false,
      state: '',
    },
    mixed: { type: 'mixed', main: results.map((_, i) => ({ type: 'web', index: i, all: false })), top: [], side: [] },
    ...(results.length
      ? {
          web: {
            type: 'search',
            family_friendly: true,
            results: results.map((r) => {
              const u = new URL(r.url)
              return {
                type: 'search_result',
                subtype: 'generic',
                is_source_local: false,
                is_source_both: false,
                profile: {
                  name: u.hostname,
                  url: r.url,
                  long_name: u.hostname,
                  img: 'https://imgs.search.brave.com/x.png',
                },
                meta_url: {
                  scheme: u.protocol.replace(':', ''),
                  netloc: u.host,
                  hostname: u.hostname,
                  favicon: 'https://imgs.search.brave.com/f.png',
                  path: `› ${u.pathname.slice(1)}`,
                },
                ...r,
              }
            }),
          },
        }
      : {}),
  }
}

/** A SuggestSearchApiResponse. */
export function braveSuggestResponse(q: string, queries: string[]) {
  return { type: 'suggest', query: { original: q }, results: queries.map((query) => ({ query, is_entity: false })) }
}

/** Brave's 422 ErrorResponse for a refused query parameter. */
export function braveValidationError(param: string, msg: string) {
  return {
    type: 'ErrorResponse',
    error: {
      id: 'e0f1',
      status: 422,
      code: 'VALIDATION',
      detail: 'Unable to validate request parameter(s)',
      meta: { errors: [{ type: 'enum', loc: ['query', param], msg, input: 'XX' }] },
    },
    time: 1_763_900_000,
  }
}

/** Provider settings pointing the search endpoints at a stand-in. */
export const braveSettings = (url: string) => ({ BRAVE_SEARCH_URL: url, BRAVE_SEARCH_API_KEY: 'brave-test-token' })
