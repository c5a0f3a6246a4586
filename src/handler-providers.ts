/**
 * The settings of hosted handlers that call outside services (their `ctx.providers`), one row
 * each: config.ts reads them from the environment, docs/hosted-services.md lists them, and a test
 * checks that every setting a handler declares is here and documented.
 *
 * Keyless public APIs default to their public base URL, so a deployment with internet access
 * serves them with no setup; services that need an account have no default and answer 503
 * `upstream_not_configured` until the operator sets them.
 */
export interface ProviderSetting {
  name: string
  /** 'url' values are checked as http(s) URLs; 'secret' values are never logged or shown */
  kind: 'url' | 'secret' | 'text'
  /** the value when the variable is unset; `rpc` means the platform's RPC_URL */
  default?: string | 'rpc'
  doc: string
}

export const PROVIDER_SETTINGS: readonly ProviderSetting[] = [
  // network checks
  {
    name: 'DNS_SERVERS',
    kind: 'text',
    doc: 'DNS servers for dns-lookup and the e-mail and domain checks (comma-separated `ip` or `ip:port`); unset: the system resolvers',
  },
  {
    name: 'RDAP_URL',
    kind: 'url',
    default: 'https://rdap.org',
    doc: 'RDAP bootstrap service (registration data, the successor of WHOIS) for domain-intelligence-whois and domain-trust-score',
  },
  {
    name: 'CHROMIUM_PATH',
    kind: 'text',
    default: '/usr/bin/chromium',
    doc: 'the Chromium binary web-screenshot drives (playwright-core)',
  },
  // chain data
  {
    name: 'CHAIN_DATA_RPC_URL',
    kind: 'url',
    default: 'rpc',
    doc: 'JSON-RPC of the chain the EVM data endpoints read (gas, tokens, holders, transfers, portfolios, NFTs, airdrops); default RPC_URL',
  },
  {
    name: 'CHAIN_DATA_LOG_CHUNK_BLOCKS',
    kind: 'text',
    doc: 'the largest block range asked of `eth_getLogs` at once by token-holder-distribution and on-chain-whale-alert; unset: 2000',
  },
  { name: 'ENS_RPC_URL', kind: 'url', doc: 'an Ethereum mainnet JSON-RPC for ens-wallet-identity-resolver' },
  {
    name: 'IPFS_GATEWAY_URL',
    kind: 'url',
    default: 'https://ipfs.io/ipfs/',
    doc: 'IPFS HTTP gateway for ipfs:// NFT metadata',
  },
  // market data
  {
    name: 'COINGECKO_API_URL',
    kind: 'url',
    default: 'https://api.coingecko.com/api/v3',
    doc: 'CoinGecko API v3 (token prices and candles)',
  },
  { name: 'COINGECKO_API_KEY', kind: 'secret', doc: 'CoinGecko demo or pro key (optional on the public API)' },
  {
    name: 'DEFILLAMA_YIELDS_URL',
    kind: 'url',
    default: 'https://yields.llama.fi',
    doc: 'DefiLlama yields API (defi-yield-scanner, base-defi-opportunities)',
  },
  {
    name: 'JUPITER_API_URL',
    kind: 'url',
    default: 'https://lite-api.jup.ag',
    doc: 'Jupiter swap API (Solana swap quotes)',
  },
  { name: 'JUPITER_API_KEY', kind: 'secret', doc: 'Jupiter API key (optional on the lite API)' },
  { name: 'ZEROX_API_URL', kind: 'url', default: 'https://api.0x.org', doc: '0x Swap API v2 (EVM swap quotes)' },
  { name: 'ZEROX_API_KEY', kind: 'secret', doc: '0x API key (required by 0x)' },
  { name: 'LIFI_API_URL', kind: 'url', default: 'https://li.quest', doc: 'LI.FI API (cross-chain bridge routes)' },
  { name: 'LIFI_API_KEY', kind: 'secret', doc: 'LI.FI API key (optional; raises rate limits)' },
  {
    name: 'POLYMARKET_GAMMA_URL',
    kind: 'url',
    default: 'https://gamma-api.polymarket.com',
    doc: 'Polymarket Gamma API (prediction markets and their resolution)',
  },
  {
    name: 'OPENSEA_API_URL',
    kind: 'url',
    default: 'https://api.opensea.io',
    doc: 'OpenSea API v2 (NFT collection floor prices)',
  },
  { name: 'OPENSEA_API_KEY', kind: 'secret', doc: 'OpenSea API key (required by OpenSea)' },
  {
    name: 'CRYPTOPANIC_API_URL',
    kind: 'url',
    default: 'https://cryptopanic.com',
    doc: 'CryptoPanic API (crypto news)',
  },
  { name: 'CRYPTOPANIC_API_KEY', kind: 'secret', doc: 'CryptoPanic auth token (required by CryptoPanic)' },
  {
    name: 'HYPERLIQUID_API_URL',
    kind: 'url',
    default: 'https://api.hyperliquid.xyz',
    doc: 'Hyperliquid info API (the perpdex-* endpoints, funding rates, order book depth)',
  },
  {
    name: 'DYDX_INDEXER_URL',
    kind: 'url',
    default: 'https://indexer.dydx.trade',
    doc: 'dYdX v4 indexer (cross-venue funding rates)',
  },
  {
    name: 'SOLANA_RPC_URL',
    kind: 'url',
    default: 'https://api.mainnet-beta.solana.com',
    doc: 'Solana JSON-RPC (transaction fees)',
  },
  {
    name: 'DEXSCREENER_API_URL',
    kind: 'url',
    default: 'https://api.dexscreener.com',
    doc: 'DexScreener API (Solana pools and token launches)',
  },
  // search and language models
  {
    name: 'BRAVE_SEARCH_URL',
    kind: 'url',
    default: 'https://api.search.brave.com',
    doc: 'Brave Search API (web-search, fact-checker, ai-research-report, keyword-research)',
  },
  { name: 'BRAVE_SEARCH_API_KEY', kind: 'secret', doc: 'Brave Search subscription token' },
  {
    name: 'BRAVE_SUGGEST_API_KEY',
    kind: 'secret',
    doc: 'Brave Suggest subscription token for keyword-research (default: BRAVE_SEARCH_API_KEY)',
  },
  {
    name: 'LLM_API_URL',
    kind: 'url',
    default: 'https://api.openai.com/v1',
    doc: 'an OpenAI-compatible Chat Completions API (summaries, translation, classification, fact checks, research reports, keyword clustering)',
  },
  { name: 'LLM_API_KEY', kind: 'secret', doc: 'bearer key of that API' },
  { name: 'LLM_MODEL', kind: 'text', default: 'gpt-4o-mini', doc: 'the model those endpoints ask for' },
  // other providers
  {
    name: 'FRANKFURTER_URL',
    kind: 'url',
    default: 'https://api.frankfurter.dev/v1',
    doc: 'Frankfurter (ECB reference rates) for currency-converter',
  },
  {
    name: 'OPEN_METEO_URL',
    kind: 'url',
    default: 'https://api.open-meteo.com',
    doc: 'Open-Meteo forecast API (weather-api)',
  },
  {
    name: 'OPEN_METEO_GEOCODING_URL',
    kind: 'url',
    default: 'https://geocoding-api.open-meteo.com',
    doc: 'Open-Meteo geocoding API (weather-api by place name)',
  },
  {
    name: 'NOMINATIM_URL',
    kind: 'url',
    default: 'https://nominatim.openstreetmap.org',
    doc: 'Nominatim (OpenStreetMap) geocoder for address-validator-geocoder',
  },
  {
    name: 'NOMINATIM_CONTACT',
    kind: 'text',
    doc: "a contact e-mail or URL sent in the User-Agent, which Nominatim's usage policy requires",
  },
  {
    name: 'ALPHAVANTAGE_URL',
    kind: 'url',
    default: 'https://www.alphavantage.co',
    doc: 'Alpha Vantage (stock-price-quote)',
  },
  { name: 'ALPHAVANTAGE_API_KEY', kind: 'secret', doc: 'Alpha Vantage API key' },
  { name: 'HUNTER_API_URL', kind: 'url', default: 'https://api.hunter.io', doc: 'Hunter.io API (email-finder)' },
  { name: 'HUNTER_API_KEY', kind: 'secret', doc: 'Hunter.io API key' },
  {
    name: 'SMTP_URL',
    kind: 'secret',
    doc: 'the SMTP relay email-send uses, e.g. `smtps://user:pass@smtp.example.com:465`',
  },
  {
    name: 'EMAIL_FROM',
    kind: 'text',
    doc: 'the From address of every email-send message (buyers may set Reply-To only)',
  },
  { name: 'BITLY_API_URL', kind: 'url', default: 'https://api-ssl.bitly.com', doc: 'Bitly API v4 (url-shortener)' },
  { name: 'BITLY_TOKEN', kind: 'secret', doc: 'Bitly access token' },
  {
    name: 'X_API_URL',
    kind: 'url',
    default: 'https://api.x.com',
    doc: 'X (Twitter) API v2 (social-user-profile, social-timeline-scraper)',
  },
  { name: 'X_BEARER_TOKEN', kind: 'secret', doc: 'X API bearer token' },
  {
    name: 'PDL_API_URL',
    kind: 'url',
    default: 'https://api.peopledatalabs.com',
    doc: 'People Data Labs API (person-enrichment, company-enrichment)',
  },
  { name: 'PDL_API_KEY', kind: 'secret', doc: 'People Data Labs API key' },
]
