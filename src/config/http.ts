import type { EnvReader } from './env-reader.js'
import type { Config } from './types.js'

type PublicUrls = Pick<Config, 'webPort' | 'proxyPort' | 'baseUrl' | 'proxyUrl' | 'dashboardUrl'>

/** The ports the roles listen on and the addresses the world reaches them at (defaults: localhost). */
export function readPublicUrls(r: EnvReader): PublicUrls {
  const webPort = r.int('WEB_PORT', r.int('PORT', 4020, 0, 65535), 0, 65535)
  const proxyPort = r.int('PROXY_PORT', 4021, 0, 65535)
  const baseUrl = r.url('BASE_URL', `http://localhost:${webPort}`, ['http:', 'https:'])!
  const proxyUrl = r.url('PROXY_URL', `http://localhost:${proxyPort}`, ['http:', 'https:'])!
  const dashboardUrl = r.url('DASHBOARD_URL', `${baseUrl}/dashboard`, ['http:', 'https:'])!
  return { webPort, proxyPort, baseUrl, proxyUrl, dashboardUrl }
}
