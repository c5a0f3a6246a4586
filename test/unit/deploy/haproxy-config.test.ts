import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { repoRoot } from '../../helpers/child-process.js'

// deploy/haproxy (docs/scaling.md): the load balancer's own answers are whole HTTP responses whose
// body is the platform's error shape, and the configuration is valid as shipped.
const dir = path.join(repoRoot, 'deploy/haproxy')

for (const status of [502, 503, 504]) {
  t.test(`the load balancer's ${status} is a JSON error with a code and a reason`, async (t) => {
    const raw = readFileSync(path.join(dir, 'errors', `${status}.http`), 'utf8')
    const [head, body] = raw.split('\r\n\r\n')
    t.match(head, new RegExp(`^HTTP/1\\.[01] ${status} `), 'a status line')
    t.match(head, /\r\nContent-Type: application\/json(\r\n|$)/i)
    t.match(head, /\r\nConnection: close(\r\n|$)/i)
    const json = JSON.parse(body!) as Record<string, unknown>
    t.equal(json.statusCode, status)
    t.match(json, { code: /^[a-z_]+$/, error: String, message: String })
  })
}

const haproxyMissing = spawnSync('haproxy', ['-v']).error !== undefined

t.test(
  'haproxy -c accepts the configuration',
  { skip: haproxyMissing ? 'haproxy is not installed (apt-get install haproxy; .ci/run installs it)' : false },
  async (t) => {
    const check = spawnSync('haproxy', ['-c', '-f', path.join(dir, 'haproxy.cfg')], {
      env: {
        ...process.env,
        TOLLGATE_LB_PROXY_BIND: '127.0.0.1:1',
        TOLLGATE_LB_WEB_BIND: '127.0.0.1:2',
        TOLLGATE_PROXY_1: '127.0.0.1:3',
        TOLLGATE_PROXY_2: '127.0.0.1:4',
        TOLLGATE_WEB_1: '127.0.0.1:5',
        TOLLGATE_WEB_2: '127.0.0.1:6',
        TOLLGATE_LB_ERRORS: path.join(dir, 'errors'),
      },
      encoding: 'utf8',
    })
    t.equal(check.status, 0, check.stdout + check.stderr)
  },
)
