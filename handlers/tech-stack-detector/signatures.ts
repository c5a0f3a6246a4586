/**
 * The signature table of tech-stack-detector: for each technology, the markers that show it is in
 * use, on the page's answer as fetched (no script is executed).
 *
 * - headers: response header (lower-case name) → pattern on its value
 * - cookies: patterns on the names of cookies the answers set
 * - meta: <meta name> (lower-case) → pattern on its content (mostly `generator`)
 * - scripts / links: patterns on absolute <script src> / <link href> URLs
 * - html: patterns on the raw HTML
 * - implies: technologies that this one cannot run without (reported as implied, never with a version)
 *
 * A pattern with a named group `version` yields a version only when that group matched: a
 * version is never guessed. Markers follow the technologies' own documentation and the markup
 * they generate (generator meta tags, asset paths, cookie and header names).
 */

export interface Signature {
  name: string
  category: string
  website: string
  headers?: Record<string, RegExp>
  cookies?: RegExp[]
  meta?: Record<string, RegExp>
  scripts?: RegExp[]
  links?: RegExp[]
  html?: RegExp[]
  implies?: string[]
}

const V = '(?<version>\\d+(?:\\.\\d+){1,3})'
const re = (s: string, flags = 'i') => new RegExp(s.replace(/\{V\}/g, V), flags)

export const SIGNATURES: Signature[] = [
  // Web servers
  { name: 'Nginx', category: 'Web server', website: 'https://nginx.org', headers: { server: re('^nginx(?:/{V})?') } },
  {
    name: 'Apache HTTP Server',
    category: 'Web server',
    website: 'https://httpd.apache.org',
    headers: { server: re('^Apache(?:/{V})?(?:\\s|$)') },
  },
  {
    name: 'Microsoft IIS',
    category: 'Web server',
    website: 'https://www.iis.net',
    headers: { server: re('^Microsoft-IIS(?:/{V})?') },
  },
  {
    name: 'LiteSpeed',
    category: 'Web server',
    website: 'https://www.litespeedtech.com',
    headers: { server: re('^LiteSpeed') },
  },
  { name: 'Caddy', category: 'Web server', website: 'https://caddyserver.com', headers: { server: re('^Caddy') } },
  {
    name: 'OpenResty',
    category: 'Web server',
    website: 'https://openresty.org',
    headers: { server: re('^openresty(?:/{V})?') },
    implies: ['Nginx'],
  },
  {
    name: 'Envoy',
    category: 'Web server',
    website: 'https://www.envoyproxy.io',
    headers: { server: re('^envoy'), 'x-envoy-upstream-service-time': re('.') },
  },
  {
    name: 'Gunicorn',
    category: 'Web server',
    website: 'https://gunicorn.org',
    headers: { server: re('^gunicorn(?:/{V})?') },
    implies: ['Python'],
  },
  {
    name: 'Kestrel',
    category: 'Web server',
    website: 'https://learn.microsoft.com/aspnet/core/fundamentals/servers/kestrel',
    headers: { server: re('^Kestrel') },
    implies: ['ASP.NET'],
  },

  // CDN and hosting
  {
    name: 'Cloudflare',
    category: 'CDN',
    website: 'https://www.cloudflare.com',
    headers: { server: re('^cloudflare$'), 'cf-ray': re('.') },
    cookies: [re('^(__cf_bm|__cflb|cf_clearance|__cfruid)$')],
  },
  {
    name: 'Amazon CloudFront',
    category: 'CDN',
    website: 'https://aws.amazon.com/cloudfront/',
    headers: { 'x-amz-cf-id': re('.'), via: re('CloudFront') },
  },
  {
    name: 'Fastly',
    category: 'CDN',
    website: 'https://www.fastly.com',
    headers: { 'x-fastly-request-id': re('.'), 'x-served-by': re('^cache-[a-z0-9-]+') },
  },
  {
    name: 'Akamai',
    category: 'CDN',
    website: 'https://www.akamai.com',
    headers: { server: re('^AkamaiGHost'), 'x-akamai-transformed': re('.'), 'akamai-grn': re('.') },
  },
  {
    name: 'Varnish',
    category: 'Cache',
    website: 'https://varnish-cache.org',
    headers: { via: re('varnish'), 'x-varnish': re('.') },
  },
  {
    name: 'Vercel',
    category: 'Hosting',
    website: 'https://vercel.com',
    headers: { server: re('^Vercel$'), 'x-vercel-id': re('.'), 'x-vercel-cache': re('.') },
  },
  {
    name: 'Netlify',
    category: 'Hosting',
    website: 'https://www.netlify.com',
    headers: { server: re('^Netlify$'), 'x-nf-request-id': re('.') },
  },
  {
    name: 'GitHub Pages',
    category: 'Hosting',
    website: 'https://pages.github.com',
    headers: { server: re('^GitHub\\.com$'), 'x-github-request-id': re('.') },
  },
  {
    name: 'jsDelivr',
    category: 'CDN',
    website: 'https://www.jsdelivr.com',
    scripts: [re('^https?://(?:fastly\\.|gcore\\.)?cdn\\.jsdelivr\\.net/')],
    links: [re('^https?://(?:fastly\\.|gcore\\.)?cdn\\.jsdelivr\\.net/')],
  },
  {
    name: 'cdnjs',
    category: 'CDN',
    website: 'https://cdnjs.com',
    scripts: [re('^https?://cdnjs\\.cloudflare\\.com/')],
    links: [re('^https?://cdnjs\\.cloudflare\\.com/')],
  },
  {
    name: 'unpkg',
    category: 'CDN',
    website: 'https://unpkg.com',
    scripts: [re('^https?://unpkg\\.com/')],
    links: [re('^https?://unpkg\\.com/')],
  },

  // Programming languages and back-end frameworks
  {
    name: 'PHP',
    category: 'Programming language',
    website: 'https://www.php.net',
    headers: { 'x-powered-by': re('PHP(?:/{V})?') },
    cookies: [re('^PHPSESSID$')],
  },
  { name: 'Python', category: 'Programming language', website: 'https://www.python.org' },
  { name: 'Java', category: 'Programming language', website: 'https://www.java.com', cookies: [re('^JSESSIONID$')] },
  {
    name: 'ASP.NET',
    category: 'Web framework',
    website: 'https://dotnet.microsoft.com/apps/aspnet',
    headers: { 'x-aspnet-version': re('^{V}'), 'x-powered-by': re('ASP\\.NET'), 'x-aspnetmvc-version': re('.') },
    cookies: [re('^(ASP\\.NET_SessionId|\\.ASPXAUTH|\\.AspNetCore\\.\\w+)')],
    html: [re('<input[^>]{1,1000}name="__VIEWSTATE"')],
  },
  {
    name: 'Express',
    category: 'Web framework',
    website: 'https://expressjs.com',
    headers: { 'x-powered-by': re('^Express$') },
    implies: ['Node.js'],
  },
  { name: 'Node.js', category: 'Programming language', website: 'https://nodejs.org' },
  {
    name: 'Ruby on Rails',
    category: 'Web framework',
    website: 'https://rubyonrails.org',
    meta: { 'csrf-param': re('^authenticity_token$') },
    implies: ['Ruby'],
  },
  { name: 'Ruby', category: 'Programming language', website: 'https://www.ruby-lang.org' },
  {
    name: 'Django',
    category: 'Web framework',
    website: 'https://www.djangoproject.com',
    cookies: [re('^(csrftoken|django_language)$')],
    html: [re('name="csrfmiddlewaretoken"')],
    implies: ['Python'],
  },
  {
    name: 'Laravel',
    category: 'Web framework',
    website: 'https://laravel.com',
    cookies: [re('^laravel_session$')],
    implies: ['PHP'],
  },

  // JavaScript frameworks and libraries
  {
    name: 'React',
    category: 'JavaScript framework',
    website: 'https://react.dev',
    scripts: [
      re('/react(?:-dom)?@{V}/'),
      re('/react(?:-dom)?(?:\\.production|\\.development)?(?:\\.min)?\\.js(?:[?#]|$)'),
    ],
    html: [re('\\sdata-reactroot(?:=|\\s|>)')],
  },
  {
    name: 'Next.js',
    category: 'JavaScript framework',
    website: 'https://nextjs.org',
    headers: { 'x-powered-by': re('^Next\\.js(?: {V})?') },
    scripts: [re('/_next/static/')],
    html: [re('<script[^>]{1,1000}id="__NEXT_DATA__"'), re('/_next/static/')],
    implies: ['React'],
  },
  {
    name: 'Gatsby',
    category: 'Static site generator',
    website: 'https://www.gatsbyjs.com',
    meta: { generator: re('^Gatsby(?: {V})?') },
    html: [re('id="___gatsby"')],
    implies: ['React'],
  },
  {
    name: 'Remix',
    category: 'JavaScript framework',
    website: 'https://remix.run',
    html: [re('window\\.__remixContext')],
    implies: ['React'],
  },
  {
    name: 'Vue.js',
    category: 'JavaScript framework',
    website: 'https://vuejs.org',
    scripts: [re('/vue@{V}/'), re('/vue(?:\\.runtime)?(?:\\.global)?(?:\\.prod)?(?:\\.min)?\\.js(?:[?#]|$)')],
    html: [re('\\sdata-v-[0-9a-f]{8}(?:=|\\s|>)'), re('\\sdata-v-app(?:=|\\s|>)')],
  },
  {
    name: 'Nuxt',
    category: 'JavaScript framework',
    website: 'https://nuxt.com',
    headers: { 'x-powered-by': re('^Nuxt') },
    scripts: [re('/_nuxt/')],
    html: [re('<div id="__nuxt"'), re('window\\.__NUXT__')],
    implies: ['Vue.js'],
  },
  {
    name: 'Angular',
    category: 'JavaScript framework',
    website: 'https://angular.dev',
    html: [re('\\sng-version="{V}"')],
  },
  {
    name: 'AngularJS',
    category: 'JavaScript framework',
    website: 'https://angularjs.org',
    scripts: [re('/angular(?:js)?/{V}/angular(?:\\.min)?\\.js'), re('/angular(?:\\.min)?\\.js(?:[?#]|$)')],
    html: [re('\\sng-app(?:=|\\s|>)')],
  },
  {
    name: 'Svelte',
    category: 'JavaScript framework',
    website: 'https://svelte.dev',
    html: [re('class="[^"]*\\bsvelte-[a-z0-9]{5,}')],
  },
  {
    name: 'SvelteKit',
    category: 'JavaScript framework',
    website: 'https://kit.svelte.dev',
    scripts: [re('/_app/immutable/')],
    html: [re('data-sveltekit-'), re('__sveltekit_')],
    implies: ['Svelte'],
  },
  {
    name: 'Astro',
    category: 'Static site generator',
    website: 'https://astro.build',
    meta: { generator: re('^Astro(?: v{V})?') },
    html: [re('<astro-island')],
  },
  {
    name: 'Ember.js',
    category: 'JavaScript framework',
    website: 'https://emberjs.com',
    html: [re('class="[^"]*\\bember-view\\b'), re('<meta name="[^"]+/config/environment"')],
  },
  {
    name: 'Alpine.js',
    category: 'JavaScript framework',
    website: 'https://alpinejs.dev',
    scripts: [re('alpinejs@{V}'), re('/alpine(?:js)?(?:\\.min)?\\.js(?:[?#]|$)')],
    html: [re('\\sx-data(?:=|\\s|>)')],
  },
  {
    name: 'htmx',
    category: 'JavaScript library',
    website: 'https://htmx.org',
    scripts: [re('htmx\\.org@{V}'), re('/htmx(?:\\.min)?\\.js(?:[?#]|$)')],
    html: [re('\\shx-(?:get|post|put|delete|patch)=')],
  },
  {
    name: 'jQuery',
    category: 'JavaScript library',
    website: 'https://jquery.com',
    scripts: [
      re('/jquery[.-]{V}(?:\\.slim)?(?:\\.min)?\\.js'),
      re('/jquery@{V}/'),
      re('/jquery/{V}/jquery'),
      re('/jquery(?:\\.slim)?(?:\\.min)?\\.js(?:[?#]|$)'),
    ],
  },
  {
    name: 'Bootstrap',
    category: 'UI framework',
    website: 'https://getbootstrap.com',
    links: [re('/bootstrap@{V}/'), re('/bootstrap/{V}/css/'), re('/bootstrap(?:\\.min)?\\.css(?:[?#]|$)')],
    scripts: [re('/bootstrap@{V}/'), re('/bootstrap(?:\\.bundle)?(?:\\.min)?\\.js(?:[?#]|$)')],
  },
  {
    name: 'Tailwind CSS',
    category: 'UI framework',
    website: 'https://tailwindcss.com',
    scripts: [re('^https?://cdn\\.tailwindcss\\.com')],
    links: [re('/tailwindcss@{V}/'), re('/tailwind(?:\\.min)?\\.css(?:[?#]|$)')],
  },
  {
    name: 'Font Awesome',
    category: 'Font script',
    website: 'https://fontawesome.com',
    links: [re('font-?awesome(?:@|/){V}/'), re('font-?awesome')],
    scripts: [re('^https?://kit\\.fontawesome\\.com/')],
  },
  {
    name: 'Google Fonts',
    category: 'Font script',
    website: 'https://fonts.google.com',
    links: [re('^https?://fonts\\.googleapis\\.com/')],
  },

  // CMS and site builders
  {
    name: 'WordPress',
    category: 'CMS',
    website: 'https://wordpress.org',
    meta: { generator: re('^WordPress(?: {V})?') },
    headers: { link: re('rel="https://api\\.w\\.org/"') },
    html: [re('/wp-content/(?:themes|plugins|uploads)/'), re('/wp-includes/')],
    implies: ['PHP'],
  },
  {
    name: 'Drupal',
    category: 'CMS',
    website: 'https://www.drupal.org',
    meta: { generator: re('^Drupal(?: (?<version>\\d+))?') },
    headers: { 'x-generator': re('^Drupal(?: (?<version>\\d+))?'), 'x-drupal-cache': re('.') },
    html: [re('data-drupal-selector='), re('drupal-settings-json')],
    implies: ['PHP'],
  },
  {
    name: 'Joomla',
    category: 'CMS',
    website: 'https://www.joomla.org',
    meta: { generator: re('^Joomla!?(?: {V})?') },
    implies: ['PHP'],
  },
  {
    name: 'TYPO3',
    category: 'CMS',
    website: 'https://typo3.org',
    meta: { generator: re('^TYPO3 (?:CMS|(?<version>\\d+\\.\\d+))') },
    html: [re('/typo3(?:conf|temp)/')],
    implies: ['PHP'],
  },
  {
    name: 'Ghost',
    category: 'CMS',
    website: 'https://ghost.org',
    meta: { generator: re('^Ghost(?: {V})?') },
    implies: ['Node.js'],
  },
  {
    name: 'Wix',
    category: 'Site builder',
    website: 'https://www.wix.com',
    headers: { 'x-wix-request-id': re('.') },
    meta: { generator: re('^Wix\\.com Website Builder') },
    scripts: [re('^https?://static\\.parastorage\\.com/')],
  },
  {
    name: 'Squarespace',
    category: 'Site builder',
    website: 'https://www.squarespace.com',
    html: [re('<!-- This is Squarespace\\. -->'), re('static1\\.squarespace\\.com/static/')],
  },
  {
    name: 'Webflow',
    category: 'Site builder',
    website: 'https://webflow.com',
    meta: { generator: re('^Webflow') },
    html: [re('\\sdata-wf-page=')],
  },
  {
    name: 'Hugo',
    category: 'Static site generator',
    website: 'https://gohugo.io',
    meta: { generator: re('^Hugo(?: {V})?') },
  },
  {
    name: 'Jekyll',
    category: 'Static site generator',
    website: 'https://jekyllrb.com',
    meta: { generator: re('^Jekyll(?: v{V})?') },
  },
  {
    name: 'Docusaurus',
    category: 'Static site generator',
    website: 'https://docusaurus.io',
    meta: { generator: re('^Docusaurus(?: v{V})?') },
    implies: ['React'],
  },

  // E-commerce and payments
  {
    name: 'Shopify',
    category: 'E-commerce',
    website: 'https://www.shopify.com',
    headers: { 'x-shopid': re('.'), 'x-shopify-stage': re('.') },
    cookies: [re('^(_shopify_y|_shopify_s|cart_sig)$')],
    scripts: [re('^https?://cdn\\.shopify\\.com/')],
    html: [re('Shopify\\.theme\\s*=')],
  },
  {
    name: 'WooCommerce',
    category: 'E-commerce',
    website: 'https://woocommerce.com',
    cookies: [re('^(woocommerce_cart_hash|woocommerce_items_in_cart|wp_woocommerce_session_)')],
    html: [re('/wp-content/plugins/woocommerce/')],
    meta: { generator: re('^WooCommerce(?: {V})?') },
    implies: ['WordPress'],
  },
  {
    name: 'Magento',
    category: 'E-commerce',
    website: 'https://business.adobe.com/products/magento/magento-commerce.html',
    cookies: [re('^(X-Magento-Vary|mage-cache-sessid|mage-cache-storage)$')],
    html: [re('data-mage-init='), re('/static/version\\d+/frontend/')],
    implies: ['PHP'],
  },
  {
    name: 'PrestaShop',
    category: 'E-commerce',
    website: 'https://www.prestashop.com',
    meta: { generator: re('^PrestaShop') },
    cookies: [re('^PrestaShop-[0-9a-f]+$')],
    html: [re('var prestashop\\s*=')],
    implies: ['PHP'],
  },
  {
    name: 'BigCommerce',
    category: 'E-commerce',
    website: 'https://www.bigcommerce.com',
    scripts: [re('^https?://cdn\\d*\\.bigcommerce\\.com/')],
  },
  {
    name: 'Stripe',
    category: 'Payment processor',
    website: 'https://stripe.com',
    scripts: [re('^https?://js\\.stripe\\.com/')],
  },
  {
    name: 'PayPal',
    category: 'Payment processor',
    website: 'https://www.paypal.com',
    scripts: [re('^https?://(?:www\\.)?paypal\\.com/sdk/js'), re('^https?://www\\.paypalobjects\\.com/')],
  },

  // Analytics, tag managers, marketing
  {
    name: 'Google Analytics',
    category: 'Analytics',
    website: 'https://marketingplatform.google.com/about/analytics/',
    scripts: [re('google-analytics\\.com/(?:ga|analytics)\\.js'), re('googletagmanager\\.com/gtag/js')],
    html: [re('google-analytics\\.com/(?:ga|analytics)\\.js'), re('googletagmanager\\.com/gtag/js')],
    cookies: [re('^(_ga|_gid|_ga_[A-Z0-9]+)$')],
  },
  {
    name: 'Google Tag Manager',
    category: 'Tag manager',
    website: 'https://tagmanager.google.com',
    scripts: [re('googletagmanager\\.com/gtm\\.js')],
    html: [re('googletagmanager\\.com/gtm\\.js'), re('googletagmanager\\.com/ns\\.html')],
  },
  {
    name: 'Meta Pixel',
    category: 'Advertising',
    website: 'https://www.facebook.com/business/tools/meta-pixel',
    scripts: [re('connect\\.facebook\\.net/[A-Za-z_]+/fbevents\\.js')],
    html: [re('connect\\.facebook\\.net/[A-Za-z_]+/fbevents\\.js'), re('fbq\\(\\s*[\'"]init[\'"]')],
    cookies: [re('^_fbp$')],
  },
  {
    name: 'Hotjar',
    category: 'Analytics',
    website: 'https://www.hotjar.com',
    scripts: [re('static\\.hotjar\\.com/')],
    html: [re('static\\.hotjar\\.com/c/hotjar-')],
  },
  {
    name: 'Microsoft Clarity',
    category: 'Analytics',
    website: 'https://clarity.microsoft.com',
    scripts: [re('www\\.clarity\\.ms/tag/')],
    html: [re('www\\.clarity\\.ms/tag/')],
  },
  {
    name: 'Matomo',
    category: 'Analytics',
    website: 'https://matomo.org',
    scripts: [re('/(?:matomo|piwik)\\.js(?:[?#]|$)')],
    html: [re('_paq\\.push\\('), re('/(?:matomo|piwik)\\.(?:js|php)')],
    cookies: [re('^_pk_(?:id|ses)\\.')],
  },
  {
    name: 'Plausible',
    category: 'Analytics',
    website: 'https://plausible.io',
    scripts: [re('^https?://plausible\\.io/js/')],
  },
  {
    name: 'Segment',
    category: 'Analytics',
    website: 'https://segment.com',
    scripts: [re('cdn\\.segment\\.com/analytics\\.js')],
    html: [re('cdn\\.segment\\.com/analytics\\.js')],
  },
  {
    name: 'Mixpanel',
    category: 'Analytics',
    website: 'https://mixpanel.com',
    scripts: [re('cdn\\.mxpnl\\.com/')],
    html: [re('cdn\\.mxpnl\\.com/'), re('mixpanel\\.init\\(')],
  },
  {
    name: 'HubSpot',
    category: 'Marketing automation',
    website: 'https://www.hubspot.com',
    scripts: [re('js\\.hs-scripts\\.com/'), re('js\\.hsforms\\.net/')],
    cookies: [re('^(hubspotutk|__hstc|__hssc)$')],
  },
  {
    name: 'Intercom',
    category: 'Live chat',
    website: 'https://www.intercom.com',
    scripts: [re('widget\\.intercom\\.io/')],
    html: [re('widget\\.intercom\\.io/widget/'), re('window\\.intercomSettings')],
  },
  {
    name: 'Zendesk Widget',
    category: 'Live chat',
    website: 'https://www.zendesk.com',
    scripts: [re('static\\.zdassets\\.com/ekr/snippet\\.js')],
  },
  {
    name: 'Sentry',
    category: 'Error tracking',
    website: 'https://sentry.io',
    scripts: [re('browser\\.sentry-cdn\\.com/{V}/'), re('js\\.sentry-cdn\\.com/')],
  },
  {
    name: 'New Relic',
    category: 'Monitoring',
    website: 'https://newrelic.com',
    scripts: [re('js-agent\\.newrelic\\.com/')],
    html: [re('js-agent\\.newrelic\\.com/'), re('window\\.NREUM')],
  },

  // Security
  {
    name: 'reCAPTCHA',
    category: 'Security',
    website: 'https://www.google.com/recaptcha/',
    scripts: [re('(?:google\\.com|recaptcha\\.net)/recaptcha/(?:api|enterprise)\\.js')],
  },
  {
    name: 'hCaptcha',
    category: 'Security',
    website: 'https://www.hcaptcha.com',
    scripts: [re('(?:js\\.)?hcaptcha\\.com/1/api\\.js')],
  },
  {
    name: 'Cloudflare Turnstile',
    category: 'Security',
    website: 'https://www.cloudflare.com/products/turnstile/',
    scripts: [re('challenges\\.cloudflare\\.com/turnstile/')],
  },
]
