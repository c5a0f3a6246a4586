import type { Devnet } from '../chain/devnet.js'
import type { Deps } from '../deps.js'

/**
 * Dev-mode seed and demo data: what `npm start` creates on top of the migrations, and the lines it
 * prints about it. Idempotent: runs on every start.
 */
export async function startDevExtras(deps: Deps, devnet: Devnet | undefined): Promise<{ info: Record<string, unknown>; lines: string[] }> {
  const lines: string[] = []
  if (devnet) lines.push(`demo payer              ${devnet.accounts.demoPayer.address} (test USDC; key in dev.json)`)
  void deps
  return { info: {}, lines }
}
