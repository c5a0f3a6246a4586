/**
 * The import graph of src/, checked by `npm run lint` (house style 19: layers point down, no
 * circles). Circles that exist today are listed in .ci/baseline/import-cycles.json, read with
 * --ignore-known: any other circle fails lint. When one of them is broken, shrink the list with
 * `npm run lint:baseline`.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import circle in src/ (type-only imports count: they tie the modules together just the same)',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
}
