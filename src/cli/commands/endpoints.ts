/** `tollgate endpoints test`: calls a published upstream endpoint's origin once, unpaid, signed. */
import type { Api } from '../api-client.js'
import { parseOptions, type Command } from '../command.js'
import { UsageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import type { Output } from '../output.js'

export const ENDPOINTS_HELP = `usage: tollgate endpoints test <namespace>/<service>/<slug> [--method M] [--json]

Has the platform call the endpoint's upstream once (unpaid, with its forwarded headers and the
X-Tollgate-Signature, plus X-Tollgate-Test: 1) and reports the status and latency. The endpoint may
also be named by its URL on the proxy. Exit 0 when the upstream answered below 500, 3 when it
answered 500 or more, 1 when it could not be reached. Uses the API key.
`

export interface UpstreamTest {
  object: 'upstream_test'
  ok: boolean
  status: number | null
  latency_ms: number
  error: string | null
}

/** `ns/svc/slug`, or a proxy URL ending in them. */
export function endpointPath(ref: string): [string, string, string] {
  let p = ref
  try {
    p = new URL(ref).pathname
  } catch {
    // not a URL: the path itself
  }
  const parts = p.split('/').filter(Boolean)
  if (parts.length < 3) throw new UsageError(`expected <namespace>/<service>/<slug>, got "${ref}"`)
  return parts.slice(-3) as [string, string, string]
}

/** Runs the platform's upstream test with progress; answers the result and its exit code. */
export async function testEndpoint(
  api: Api,
  out: Output,
  [ns, svc, slug]: [string, string, string],
  method?: string,
): Promise<{ test: UpstreamTest; exit: number }> {
  const progress = out.progress(`testing ${ns}/${svc}/${slug}`)
  let test: UpstreamTest
  try {
    test = await api.user<UpstreamTest>('POST', `/v1/sellers/${ns}/services/${svc}/endpoints/${slug}/test`, {
      body: method ? { method } : {},
    })
  } finally {
    progress.done()
  }
  return { test, exit: test.ok ? EXIT.ok : test.status === null ? EXIT.error : EXIT.http }
}

export function testLine(t: UpstreamTest): string {
  return t.status === null
    ? `upstream test failed: ${t.error} (${t.latency_ms} ms)`
    : `upstream answered ${t.status} in ${t.latency_ms} ms${t.ok ? '' : ' (an error: paid calls would fail)'}`
}

export async function endpointsCommand(args: string[], cmd: Command): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parseOptions(rest, { method: { type: 'string' } }, ENDPOINTS_HELP, {
    positionals: true,
  })
  if (v.help || sub === '--help' || sub === '-h') {
    cmd.io.stdout(ENDPOINTS_HELP)
    return EXIT.ok
  }
  if (sub !== 'test' || positionals.length !== 1) throw new UsageError(ENDPOINTS_HELP)
  const { test, exit } = await testEndpoint(cmd.api(), cmd.out, endpointPath(positionals[0]!), v.method?.toUpperCase())
  cmd.out.result(test, testLine(test))
  return exit
}
