import { sql, type Kysely } from 'kysely'

// A tool of a seller's upstream MCP server, published as an endpoint: `upstream_url` is the MCP
// server (Streamable HTTP) and `mcp_tool` the tool's name there (a slug cannot hold every tool name).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table endpoints add column mcp_tool text`.execute(db)
  await sql`alter table endpoints add constraint endpoints_mcp_tool_upstream check (mcp_tool is null or (upstream_url is not null and length(mcp_tool) between 1 and 128))`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table endpoints drop column mcp_tool`.execute(db)
}
