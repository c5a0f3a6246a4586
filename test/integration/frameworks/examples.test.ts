import t from 'tap'
import { spawnNode } from '../../helpers/child-process.js'
import { frameworkPlatform } from './platform.js'

// each example, as a user runs it (no OPENAI_API_KEY: its scripted model), pays the platform once
t.test('examples/<framework>/index.ts pay a hosted endpoint and print the cost', async (t) => {
  const { p, echo, agentPayments } = await frameworkPlatform(t)
  const agent = await p.agent({ fund: 1_000_000n })
  for (const [i, framework] of ['ai-sdk', 'langchain', 'openai-agents'].entries()) {
    const c = spawnNode(
      t,
      `examples/${framework}/index.ts`,
      {
        TOLLGATE_URL: p.webUrl,
        TOLLGATE_AGENT_KEY: agent.key,
        TOLLGATE_PAID_URL: echo(framework),
        OPENAI_API_KEY: undefined,
      },
      { stdout: 'pipe' },
    )
    const { code } = await c.exited
    t.equal(code, 0, `${framework}: ${c.stderr()}`)
    const out = c.stdout()
    t.match(out, /no OPENAI_API_KEY: using a scripted model/, `${framework} says the model is scripted`)
    const paid = await agentPayments(agent.id)
    t.equal(paid.length, i + 1, `${framework}: one payment`)
    t.match(out, new RegExp(`${paid.at(-1)!.id}`), `${framework} prints the payment id`)
    t.match(out, /0\.001 USDC/, `${framework} prints the cost`)
  }
})
