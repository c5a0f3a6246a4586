import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { repoRoot } from './child-process.js'

/** `tollgate mcp` (with `args`) as an agent host runs it: a child process on stdio, the official MCP client. */
export async function mcpHost(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'src/cli/main.ts', 'mcp', ...args],
    cwd: repoRoot,
    // an empty home: the key and the API address come from the environment alone
    env: { PATH: process.env.PATH ?? '', HOME: mkdtempSync(path.join(os.tmpdir(), 'tg-mcp-')), ...env },
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (d: Buffer) => void (stderr += d.toString()))
  const client = new Client({ name: 'tollgate-test-host', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, stderr: () => stderr }
}
