import t from 'tap'
import { handlerProcessEnv } from '../../../src/pool/handler-process-env.js'

t.test("a handler process's environment keeps the system's settings and none of the platform's", async (t) => {
  const env = handlerProcessEnv({
    PATH: '/usr/bin',
    HOME: '/home/app',
    NODE_OPTIONS: '--enable-source-maps',
    TZ: 'UTC',
    LANG: 'C.UTF-8',
    TOLLGATE_MASTER_KEY: 'a'.repeat(64),
    TOLLGATE_OPERATOR_TOKEN: 'op',
    RELAYER_PRIVATE_KEYS: '0x1',
    DATABASE_URL: 'postgres://u:p@h/d',
    REDIS_URL: 'redis://:p@h',
    RPC_URL: 'https://base.example/v2/KEY',
    HANDLERS_URL: 'unix:/x.sock',
    BRAVE_SEARCH_API_KEY: 'b',
    COINGECKO_API_URL: 'https://api.example',
    AWS_SECRET_ACCESS_KEY: 's',
    GITHUB_TOKEN: 't',
    PGPASSWORD: 'p',
  })
  t.same(Object.keys(env).sort(), ['HOME', 'LANG', 'NODE_OPTIONS', 'PATH', 'TZ'])
})
