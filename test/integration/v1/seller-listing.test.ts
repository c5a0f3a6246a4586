import t from 'tap'
import type { CuratedAgentDTO } from '../../../src/services/marketplace/types.js'
import { until } from '../../helpers/until.js'
import { accountsApp, userWithKey } from '../../helpers/accounts.js'

const PAY_TO = '0x1111111111111111111111111111111111111111'

t.test(
  "a seller describes its marketplace entry: category, tags, links, and the namespace's platform agent",
  async (t) => {
    const { deps, app } = await accountsApp(t)
    const me = await userWithKey(deps)
    const other = await userWithKey(deps)
    const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown, auth = me.auth) =>
      app.inject({ method, url, headers: auth, ...(payload === undefined ? {} : { payload: payload as object }) })
    const agent = (await call('POST', '/v1/agents', { name: 'acme bot' })).json()
    const foreign = (await call('POST', '/v1/agents', { name: 'not mine' }, other.auth)).json()
    t.match(agent.address, /^0x[0-9a-fA-F]{40}$/)

    t.equal((await call('POST', '/v1/sellers', { namespace: 'acme-listing' })).statusCode, 201)
    t.equal((await call('GET', '/v1/sellers/acme-listing')).json().agent_address, null, 'no agent linked at first')

    // the namespace's agent: only one of the owner's own agents, in any letter case
    for (const [bad, why] of [
      [foreign.address, "another user's agent"],
      ['0x' + '22'.repeat(20), 'no such agent'],
      ['acme', 'not an address'],
      [42, 'a number'],
    ] as const) {
      const r = await call('PATCH', '/v1/sellers/acme-listing', { agent_address: bad })
      t.equal(r.statusCode, 400, why)
      t.equal(r.json().param, 'agent_address', why)
    }
    const linked = await call('PATCH', '/v1/sellers/acme-listing', {
      agent_address: agent.address.toLowerCase(),
      display_name: 'Acme Data',
    })
    t.equal(linked.statusCode, 200)
    t.match(
      linked.json(),
      { namespace: 'acme-listing', display_name: 'Acme Data', agent_address: agent.address },
      'stored as the agent address (checksummed)',
    )
    t.equal((await call('GET', '/v1/sellers')).json().data[0].agent_address, agent.address, 'listed with the link')
    t.equal(
      (await call('PATCH', '/v1/sellers/acme-listing', { agent_address: agent.address }, other.auth)).statusCode,
      404,
      'another user cannot touch the namespace',
    )

    // the service's listing fields, checked like a public submission
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ category: '<script>x</script>' }, 'category'],
      [{ category: '' }, 'category'],
      [{ tags: { a: 1 } }, 'tags'],
      [{ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
      [{ tags: ['ok', 'a'.repeat(41)] }, 'tags[1]'],
      [{ website_url: 'javascript:alert(1)' }, 'website_url'],
      [{ docs_url: 'http://127.0.0.1/docs' }, 'docs_url'],
      [{ logo_url: 'not a url' }, 'logo_url'],
    ]
    for (const [fields, param] of refusals) {
      const r = await call('POST', '/v1/sellers/acme-listing/services', { name: 'prices', pay_to: PAY_TO, ...fields })
      t.equal(r.statusCode, 400, `create refuses ${JSON.stringify(fields).slice(0, 60)}`)
      t.equal(r.json().param, param, JSON.stringify(r.json()))
    }
    t.equal(
      (await call('GET', '/v1/sellers/acme-listing/services')).json().data.length,
      0,
      'nothing was created by a refused body',
    )

    const created = await call('POST', '/v1/sellers/acme-listing/services', {
      name: 'prices',
      pay_to: PAY_TO,
      description: 'Spot prices',
      category: 'Crypto',
      tags: ['prices', 'base', 'prices'],
      website_url: 'https://acme.example',
      docs_url: 'https://acme.example/docs',
    })
    t.equal(created.statusCode, 201)
    t.match(
      created.json(),
      {
        category: 'Crypto',
        tags: ['prices', 'base'],
        website_url: 'https://acme.example',
        docs_url: 'https://acme.example/docs',
        logo_url: null,
      },
      'duplicate tags dropped',
    )
    t.equal(
      (await call('POST', '/v1/sellers/acme-listing/services', { name: 'plain', pay_to: PAY_TO })).json().category,
      'Other',
      'category defaults to Other',
    )
    t.equal(
      (
        await call('POST', '/v1/sellers/acme-listing/services/prices/endpoints', {
          slug: 'spot',
          methods: ['GET'],
          price: '1000',
          handler: 'hash-generator',
        })
      ).statusCode,
      201,
    )

    const entry = async (query: string) => {
      const r = await app.inject({ method: 'GET', url: `/api/v1/agents/marketplace?${query}` })
      return (r.json() as CuratedAgentDTO[]).find((a) =>
        a.endpoints.some((e) => e.url.includes('/acme-listing/prices/')),
      )
    }
    let listed = await until('the entry in the marketplace', () => entry('source=platform&category=Crypto&search=base'))
    t.match(listed, {
      name: 'prices',
      category: 'Crypto',
      tags: ['prices', 'base'],
      url: 'https://acme.example',
      docs_url: 'https://acme.example/docs',
      logo_url: null,
      platform_agent_address: agent.address,
    })

    // edits reach the marketplace: new category, tags cleared, a link removed, the agent unlinked
    const patched = await call('PATCH', '/v1/sellers/acme-listing/services/prices', {
      category: 'Data',
      tags: null,
      docs_url: null,
      logo_url: 'https://acme.example/logo.png',
    })
    t.equal(patched.statusCode, 200)
    t.match(
      patched.json(),
      {
        category: 'Data',
        tags: [],
        docs_url: null,
        logo_url: 'https://acme.example/logo.png',
        website_url: 'https://acme.example',
      },
      'fields not sent are kept',
    )
    t.equal(
      (await call('PATCH', '/v1/sellers/acme-listing/services/prices', { website_url: 'ftp://acme.example' })).json()
        .param,
      'website_url',
      'update checks too',
    )
    t.equal(
      (await call('PATCH', '/v1/sellers/acme-listing', { agent_address: null })).json().agent_address,
      null,
      'unlinked',
    )
    listed = await until('the edits in the marketplace', async () => {
      const e = await entry('source=platform&category=Data')
      return e && e.platform_agent_address === null ? e : undefined
    })
    t.match(listed, {
      category: 'Data',
      tags: [],
      docs_url: null,
      logo_url: 'https://acme.example/logo.png',
      platform_agent_address: null,
    })
    t.notOk(await entry('source=platform&category=Crypto'), 'no longer under its old category')
  },
)
