/**
 * The import graph of src/, checked by `npm run lint` (house style 19: layers point down, no
 * circles). Circles and upward imports that exist today are listed in
 * .ci/baseline/import-cycles.json, read with --ignore-known: any other fails lint. When one of them
 * is fixed, shrink the list with `npm run lint:baseline`.
 *
 * The layers, lowest first (a module may import its own layer and the ones below, never above):
 * x402 wire format, chain, db and the process plumbing; the ledger; the seam (the contract between
 * proxy, schemes and transports, src/seam/types.ts); the schemes; the transports and the buyer's
 * client; the proxy; the services; the wiring (deps.ts); http; the roles (start) and the CLI.
 */
const LAYERS = [
  [
    'x402',
    'chain',
    'db',
    'net',
    'secrets',
    'limits',
    'queue',
    'pool',
    'config\\.ts',
    'config',
    'errors\\.ts',
    'error-render\\.ts',
    'logger\\.ts',
    'redis-client\\.ts',
    'redis-url\\.ts',
    'handler-providers\\.ts',
    'core-deps\\.ts',
  ],
  ['ledger'],
  ['seam'],
  ['schemes'],
  ['transports', 'client', 'client\\.ts'],
  ['proxy'],
  ['services', 'marketplace-client\\.ts'],
  ['deps\\.ts'],
  ['http'],
  ['start', 'cli'],
]
const pathOf = (names) => `^src/(${names.join('|')})($|/)`

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import circle in src/ (type-only imports count: they tie the modules together just the same)',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...LAYERS.slice(0, -1).map((layer, i) => ({
      name: 'no-upward-import',
      severity: 'error',
      comment: `${layer.join(', ')} import(s) a higher layer (${LAYERS.slice(i + 1)
        .flat()
        .join(', ')}): move the shared part down`,
      from: { path: pathOf(layer) },
      to: { path: pathOf(LAYERS.slice(i + 1).flat()) },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
}
