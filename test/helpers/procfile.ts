import { readFileSync } from 'node:fs'
import path from 'node:path'
import { repoRoot } from './child-process.js'

/**
 * The Procfile's command for `role`, as the node arguments that run it from source: its node flags
 * kept, `dist/src/start/<x>.js` replaced by `--import tsx src/start/<x>.ts` (tests run without a
 * build). Throws when the Procfile has no such role or its command is not `node … dist/….js`.
 *
 * @example procfileNodeArgs('proxy') // ['--v8-pool-size=1', '--heap-growing-percent=300', '--import', 'tsx', 'src/start/proxy.ts']
 */
export function procfileNodeArgs(role: string): string[] {
  const line = readFileSync(path.join(repoRoot, 'Procfile'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${role}:`))
  if (!line) throw new Error(`the Procfile has no ${role} role`)
  const [node, ...args] = line
    .slice(role.length + 1)
    .trim()
    .split(/\s+/)
  const entry = args.pop()
  const m = /^dist\/(src\/start\/[\w-]+)\.js$/.exec(entry ?? '')
  if (node !== 'node' || !m)
    throw new Error(`the Procfile's ${role} role is not "node <flags> dist/src/start/<x>.js": ${line}`)
  return [...args, '--import', 'tsx', `${m[1]}.ts`]
}
