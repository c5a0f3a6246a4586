/**
 * The documented lists gdpr-compliance-scanner matches against. Each entry names the vendor and
 * what its data use is; the hosts, cookie names and script markers are the ones the vendors
 * document for their tags (or that their snippets load), kept short on purpose: a host or cookie
 * not listed is reported as an unclassified third party or cookie, never guessed at.
 */

export type TrackerCategory =
  | 'analytics'
  | 'advertising'
  | 'session-recording'
  | 'tag-manager'
  | 'social'
  | 'marketing-automation'
  | 'video-embed'
  | 'fonts'
  | 'experimentation'

/** Hosts (matched as the host itself or any subdomain of it) of known trackers and third parties that receive visitors' personal data. */
export const TRACKER_HOSTS: Array<{ host: string; name: string; category: TrackerCategory }> = [
  { host: 'google-analytics.com', name: 'Google Analytics', category: 'analytics' },
  { host: 'analytics.google.com', name: 'Google Analytics', category: 'analytics' },
  { host: 'googletagmanager.com', name: 'Google Tag Manager / gtag.js', category: 'tag-manager' },
  { host: 'doubleclick.net', name: 'Google Ads (DoubleClick)', category: 'advertising' },
  { host: 'googlesyndication.com', name: 'Google AdSense', category: 'advertising' },
  { host: 'googleadservices.com', name: 'Google Ads', category: 'advertising' },
  { host: 'connect.facebook.net', name: 'Meta Pixel / Facebook SDK', category: 'advertising' },
  { host: 'facebook.com', name: 'Facebook', category: 'social' },
  { host: 'hotjar.com', name: 'Hotjar', category: 'session-recording' },
  { host: 'clarity.ms', name: 'Microsoft Clarity', category: 'session-recording' },
  { host: 'mouseflow.com', name: 'Mouseflow', category: 'session-recording' },
  { host: 'fullstory.com', name: 'FullStory', category: 'session-recording' },
  { host: 'crazyegg.com', name: 'Crazy Egg', category: 'session-recording' },
  { host: 'snap.licdn.com', name: 'LinkedIn Insight Tag', category: 'advertising' },
  { host: 'ads-twitter.com', name: 'X (Twitter) Ads', category: 'advertising' },
  { host: 'platform.twitter.com', name: 'X (Twitter) widgets', category: 'social' },
  { host: 'analytics.tiktok.com', name: 'TikTok Pixel', category: 'advertising' },
  { host: 'ct.pinterest.com', name: 'Pinterest Tag', category: 'advertising' },
  { host: 'bat.bing.com', name: 'Microsoft Advertising (UET)', category: 'advertising' },
  { host: 'criteo.com', name: 'Criteo', category: 'advertising' },
  { host: 'criteo.net', name: 'Criteo', category: 'advertising' },
  { host: 'taboola.com', name: 'Taboola', category: 'advertising' },
  { host: 'outbrain.com', name: 'Outbrain', category: 'advertising' },
  { host: 'adroll.com', name: 'AdRoll', category: 'advertising' },
  { host: 'quantserve.com', name: 'Quantcast Measure', category: 'advertising' },
  { host: 'scorecardresearch.com', name: 'Comscore', category: 'analytics' },
  { host: 'mc.yandex.ru', name: 'Yandex Metrica', category: 'analytics' },
  { host: 'cdn.segment.com', name: 'Segment', category: 'analytics' },
  { host: 'mxpnl.com', name: 'Mixpanel', category: 'analytics' },
  { host: 'cdn.amplitude.com', name: 'Amplitude', category: 'analytics' },
  { host: 'heapanalytics.com', name: 'Heap', category: 'analytics' },
  { host: 'matomo.cloud', name: 'Matomo Cloud', category: 'analytics' },
  { host: 'js.hs-scripts.com', name: 'HubSpot', category: 'marketing-automation' },
  { host: 'js.hs-analytics.net', name: 'HubSpot', category: 'marketing-automation' },
  { host: 'optimizely.com', name: 'Optimizely', category: 'experimentation' },
  { host: 'youtube.com', name: 'YouTube (use youtube-nocookie.com for embeds)', category: 'video-embed' },
  { host: 'player.vimeo.com', name: 'Vimeo', category: 'video-embed' },
  { host: 'fonts.googleapis.com', name: 'Google Fonts', category: 'fonts' },
  { host: 'fonts.gstatic.com', name: 'Google Fonts', category: 'fonts' },
]

/** Names (or name prefixes, ending in *) of cookies set by known analytics and advertising tags. */
export const TRACKING_COOKIES: Array<{ pattern: string; name: string; category: TrackerCategory }> = [
  { pattern: '_ga', name: 'Google Analytics', category: 'analytics' },
  { pattern: '_ga_*', name: 'Google Analytics', category: 'analytics' },
  { pattern: '_gid', name: 'Google Analytics', category: 'analytics' },
  { pattern: '_gat*', name: 'Google Analytics', category: 'analytics' },
  { pattern: '__utm*', name: 'Google Analytics (legacy)', category: 'analytics' },
  { pattern: '_gcl_*', name: 'Google Ads', category: 'advertising' },
  { pattern: 'IDE', name: 'Google Ads (DoubleClick)', category: 'advertising' },
  { pattern: '_fbp', name: 'Meta Pixel', category: 'advertising' },
  { pattern: '_fbc', name: 'Meta Pixel', category: 'advertising' },
  { pattern: '_hjSessionUser_*', name: 'Hotjar', category: 'session-recording' },
  { pattern: '_hjSession_*', name: 'Hotjar', category: 'session-recording' },
  { pattern: '_hjid', name: 'Hotjar', category: 'session-recording' },
  { pattern: '_clck', name: 'Microsoft Clarity', category: 'session-recording' },
  { pattern: '_clsk', name: 'Microsoft Clarity', category: 'session-recording' },
  { pattern: '_uetsid', name: 'Microsoft Advertising (UET)', category: 'advertising' },
  { pattern: '_uetvid', name: 'Microsoft Advertising (UET)', category: 'advertising' },
  { pattern: '_pin_unauth', name: 'Pinterest Tag', category: 'advertising' },
  { pattern: '_ttp', name: 'TikTok Pixel', category: 'advertising' },
  { pattern: 'li_fat_id', name: 'LinkedIn Insight Tag', category: 'advertising' },
  { pattern: 'hubspotutk', name: 'HubSpot', category: 'marketing-automation' },
  { pattern: '__hstc', name: 'HubSpot', category: 'marketing-automation' },
  { pattern: '__hssc', name: 'HubSpot', category: 'marketing-automation' },
  { pattern: 'ajs_anonymous_id', name: 'Segment', category: 'analytics' },
  { pattern: 'mp_*_mixpanel', name: 'Mixpanel', category: 'analytics' },
  { pattern: '_pk_id.*', name: 'Matomo', category: 'analytics' },
  { pattern: '_pk_ses.*', name: 'Matomo', category: 'analytics' },
  { pattern: '_ym_uid', name: 'Yandex Metrica', category: 'analytics' },
  { pattern: '_scid', name: 'Snap Pixel', category: 'advertising' },
]

/** Inline snippet calls that start a tracker even when its script URL is built at run time. */
export const TRACKER_SNIPPETS: Array<{ pattern: RegExp; name: string; category: TrackerCategory }> = [
  { pattern: /googletagmanager\.com\/gtm\.js/, name: 'Google Tag Manager / gtag.js', category: 'tag-manager' },
  { pattern: /gtag\(\s*['"]config['"]/, name: 'Google Analytics', category: 'analytics' },
  { pattern: /google-analytics\.com\/(?:analytics|ga)\.js/, name: 'Google Analytics', category: 'analytics' },
  { pattern: /fbq\(\s*['"]init['"]/, name: 'Meta Pixel / Facebook SDK', category: 'advertising' },
  { pattern: /static\.hotjar\.com\/c\/hotjar-/, name: 'Hotjar', category: 'session-recording' },
  { pattern: /www\.clarity\.ms\/tag\//, name: 'Microsoft Clarity', category: 'session-recording' },
  { pattern: /snap\.licdn\.com\/li\.lms-analytics/, name: 'LinkedIn Insight Tag', category: 'advertising' },
  { pattern: /analytics\.tiktok\.com\/i18n\/pixel/, name: 'TikTok Pixel', category: 'advertising' },
  { pattern: /_paq\.push\(/, name: 'Matomo', category: 'analytics' },
  { pattern: /mc\.yandex\.ru\/metrika/, name: 'Yandex Metrica', category: 'analytics' },
]

/** Consent-management platforms: markers in script URLs and inline script code. */
export const CMP_MARKERS: Array<{ name: string; pattern: RegExp }> = [
  { name: 'OneTrust', pattern: /cdn\.cookielaw\.org|optanon|otSDKStub|cookiepro\.com/i },
  { name: 'Cookiebot', pattern: /consent\.cookiebot\.(?:com|eu)|Cookiebot/ },
  { name: 'Usercentrics', pattern: /usercentrics\.eu|app\.usercentrics/i },
  { name: 'Didomi', pattern: /sdk\.privacy-center\.org|didomiConfig|window\.didomi/i },
  { name: 'TrustArc', pattern: /consent\.trustarc\.com|consent-pref\.trustarc\.com/i },
  { name: 'Quantcast Choice', pattern: /cmp\.quantcast\.com|quantcast\.mgr\.consensu\.org/i },
  { name: 'CookieYes', pattern: /cdn-cookieyes\.com/i },
  { name: 'Osano', pattern: /cmp\.osano\.com/i },
  { name: 'iubenda', pattern: /cdn\.iubenda\.com|_iub\.csConfiguration/i },
  { name: 'Complianz', pattern: /complianz-gdpr|cmplz_/i },
  { name: 'Borlabs Cookie', pattern: /borlabs-cookie|BorlabsCookie/i },
  { name: 'Klaro', pattern: /klaro(?:\.min)?\.js|klaroConfig/i },
  { name: 'Termly', pattern: /app\.termly\.io/i },
  { name: 'Sourcepoint', pattern: /cdn\.privacy-mgmt\.com|_sp_\.config|window\._sp_\s*=/ },
  { name: 'consentmanager', pattern: /consentmanager\.net/i },
  { name: 'CookieFirst', pattern: /consent\.cookiefirst\.com/i },
  { name: 'Axeptio', pattern: /static\.axept\.io|axeptioSettings/i },
  { name: 'Civic Cookie Control', pattern: /cc\.cdn\.civiccomputing\.com/i },
  { name: 'Cookie-Script', pattern: /cdn\.cookie-script\.com/i },
  { name: 'tarteaucitron', pattern: /tarteaucitron/i },
  { name: 'Google Funding Choices', pattern: /fundingchoicesmessages\.google\.com/i },
  { name: 'Ketch', pattern: /global\.ketchcdn\.com/i },
  { name: 'Cookie Information', pattern: /policy\.app\.cookieinformation\.com/i },
  { name: 'IAB TCF API (generic CMP stub)', pattern: /__tcfapi/ },
]

export const POLICY_LINKS = {
  privacy:
    /privacy|datenschutz|privacidad|confidentialit|privacit|privacybeleid|integritetspolicy|prywatno|donn[ée]es personnelles|protec[cç][aã]o de dados|gdpr|dsgvo/i,
  cookie: /cookie/i,
  imprint: /impressum|imprint|legal notice|mentions[- ]l[ée]gales|aviso[- ]legal|colofon|note[- ]legali|site notice/i,
}

/** '_ga_*' → /^_ga_.*$/ */
export const cookiePattern = (p: string) =>
  new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`)
