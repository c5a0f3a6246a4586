/**
 * The parts of robots.txt (RFC 9309) the SEO analysis needs: the rules that apply to a crawler
 * with no group of its own (user-agent *), whether they block a path, and the Sitemap lines.
 */

export interface RobotsTxt {
  /** Allow/Disallow rules of the group(s) for user-agent *, in file order */
  rules: Array<{ allow: boolean; pattern: string }>
  sitemaps: string[]
}

export function parseRobotsTxt(text: string): RobotsTxt {
  const rules: RobotsTxt['rules'] = []
  const sitemaps: string[] = []
  let agents: string[] = []
  let inRules = false
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/#.*$/, '').trim()
    const i = line.indexOf(':')
    if (i === -1) continue
    const key = line.slice(0, i).trim().toLowerCase()
    const value = line.slice(i + 1).trim()
    if (key === 'sitemap') {
      if (value) sitemaps.push(value)
      continue
    }
    if (key === 'user-agent') {
      // consecutive user-agent lines form one group; a user-agent after rules starts a new one
      if (inRules) agents = []
      inRules = false
      agents.push(value.toLowerCase())
      continue
    }
    if (key === 'allow' || key === 'disallow') {
      inRules = true
      if (agents.includes('*') && value !== '') rules.push({ allow: key === 'allow', pattern: value })
    }
  }
  return { rules, sitemaps }
}

/**
 * Whether a rule's pattern (`*` any run of characters, a final `$` the end) matches the start of
 * the path. A linear-time wildcard match, not a RegExp: `.*` runs in a regular expression
 * backtrack exponentially on patterns like `/*a*a*a*…b$`, and robots.txt is written by the site
 * the buyer names.
 */
function matches(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$')
  const body = anchored ? pattern.slice(0, -1) : pattern
  let p = 0
  let s = 0
  let star = -1
  let resume = 0
  while (s < path.length) {
    if (p < body.length && body[p] !== '*' && body[p] === path[s]) {
      p++
      s++
    } else if (p < body.length && body[p] === '*') {
      star = p++
      resume = s
    } else if (p === body.length && !anchored) {
      return true // the whole pattern matched a prefix of the path
    } else if (star !== -1) {
      p = star + 1
      s = ++resume
    } else return false
  }
  while (p < body.length && body[p] === '*') p++
  return p === body.length
}

/** True when the longest matching rule for `path` (path + query) is a Disallow; Allow wins ties (RFC 9309 2.2.2). */
export function isDisallowed(robots: RobotsTxt, path: string): boolean {
  let best: { allow: boolean; len: number } | null = null
  for (const r of robots.rules) {
    if (!matches(r.pattern, path)) continue
    const len = r.pattern.length
    if (!best || len > best.len || (len === best.len && r.allow)) best = { allow: r.allow, len }
  }
  return best !== null && !best.allow
}
