import type { Devnet } from '../chain/devnet.js'
import type { Deps } from '../deps.js'
import { loadHandlerRegistry } from '../pool/handler-registry.js'
import { DEMO_PAYER_AGENT, ensureDemoAccount, ensureDemoPayerAgent } from '../services/accounts/demo-account.js'
import { HOSTED_NAMESPACE, seedHostedServices } from '../services/hosted-seed.js'
import { syncCatalog } from '../services/marketplace/sync-catalog.js'

/**
 * Dev-mode seed and demo data: what `npm start` creates on top of the migrations, and the lines it
 * prints about it. Idempotent: runs on every start.
 */
export async function startDevExtras(
  deps: Deps,
  devnet: Devnet | undefined,
  devFile = './.tollgate/dev.json',
): Promise<{ info: Record<string, unknown>; lines: string[] }> {
  const lines: string[] = []
  const info: Record<string, unknown> = {}
  const { published, waiting } = await seedHostedServices(deps, await loadHandlerRegistry())
  lines.push(
    `hosted endpoints        ${published} under ${deps.config.proxyUrl}/${HOSTED_NAMESPACE}/<service>/<slug> (toolbox, wallet-score)`,
  )
  if (waiting.length)
    lines.push(
      `                        ${waiting.length} of them answer 503 until their provider keys are set (docs/hosted-services.md, "Provider settings")`,
    )
  const catalog = await syncCatalog(deps)
  lines.push(
    `marketplace catalog     ${catalog.inserted.length + catalog.updated.length + catalog.unchanged} curated entries`,
  )
  const demo = await ensureDemoAccount(deps)
  info.demoUser = { email: demo.email, password: demo.password }
  info.apiKey = demo.apiKey
  lines.push(`demo user               ${demo.email} (password and API key in dev.json)`)
  if (devnet) {
    const agent = await ensureDemoPayerAgent(deps, demo.userId, devnet.accounts.demoPayer)
    lines.push(
      `demo payer              ${devnet.accounts.demoPayer.address} (test USDC; key in dev.json${agent ? `; the demo user's agent "${DEMO_PAYER_AGENT}"` : ''})`,
    )
  }
  lines.push('')
  lines.push('Try:')
  lines.push(
    `  curl -i ${deps.config.proxyUrl}/${HOSTED_NAMESPACE}/toolbox/hash-generator?text=hello     # the 402 challenge`,
  )
  lines.push(
    `  curl ${deps.config.baseUrl}/api/v1/agents/marketplace                                 # the marketplace`,
  )
  lines.push(
    `  curl -H "Authorization: Bearer $(node -p "require('${devFile}').apiKey")" ${deps.config.baseUrl}/v1/agents`,
  )
  return { info, lines }
}
