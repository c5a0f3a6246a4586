import { readFileSync } from 'node:fs'
import t from 'tap'
import { COMMANDS, runCli } from '../../src/cli/main.js'

// docs/cli.md and the commands must not drift apart: each command has its section, and its help
t.test('docs/cli.md documents every command, and every command has --help', async (t) => {
  const doc = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8')
  const sections = new Set([...doc.matchAll(/^### tollgate ([a-z0-9-]+)/gm)].map((m) => m[1]!))
  for (const name of Object.keys(COMMANDS)) {
    t.ok(sections.has(name), `docs/cli.md has "### tollgate ${name}"`)
    const out: string[] = []
    const code = await runCli([name, '--help'], {
      stdout: (c) => void out.push(String(c)),
      stderr: () => {},
      env: {},
      home: '/nonexistent',
    })
    t.equal(code, 0, `${name} --help`)
    t.match(out.join(''), /usage: tollgate/, `${name} --help prints its usage`)
  }
  t.equal(sections.size, Object.keys(COMMANDS).length, 'no section for a command that does not exist')
})
