import pg from 'pg'

/**
 * Creates the database named in `databaseUrl` if it does not exist (dev mode only: a fresh machine
 * has the server but not our database). Connects to the server's `postgres` database to do it.
 */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl)
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''))
  if (!name) return
  const probe = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 })
  try {
    await probe.connect()
    return
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err // 3D000: database does not exist
  } finally {
    await probe.end().catch(() => {})
  }
  url.pathname = '/postgres'
  const admin = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5000 })
  await admin.connect()
  try {
    await admin.query(`create database "${name.replace(/"/g, '""')}"`)
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err // already created by a concurrent start
  } finally {
    await admin.end()
  }
}
