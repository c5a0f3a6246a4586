/**
 * `tollgate users create --email <e> --password <p>`: creates a user (the first one of a fresh
 * deployment). The password may also come from TOLLGATE_USER_PASSWORD, to keep it out of the
 * shell history. Reads the environment like every role, connects, creates, exits.
 */
import { parseArgs } from 'node:util'
import { loadConfig, type Config } from '../../config.js'
import { createDb } from '../../db/create-db.js'
import { createUsers } from '../../services/accounts/users.js'
import { ensureFundingWallet } from '../../services/wallets/funding-wallet.js'
import { wantsHelp, type Command } from '../command.js'
import { EXIT } from '../exit-codes.js'

const USAGE = 'usage: tollgate users create --email <email> [--password <password> | env TOLLGATE_USER_PASSWORD]'

export interface CliIo {
  out(line: string): void
  err(line: string): void
  env: Record<string, string | undefined>
  config?: Readonly<Config>
}

/** Runs `users <subcommand>`; returns the exit code. */
export async function createUserCli(
  argv: string[],
  io: CliIo = {
    out: (l) => process.stdout.write(l + '\n'),
    err: (l) => process.stderr.write(l + '\n'),
    env: process.env,
  },
): Promise<number> {
  const [sub, ...rest] = argv
  if (sub !== 'create') {
    io.err(USAGE)
    return 2
  }
  let values: { email?: string; password?: string }
  try {
    ;({ values } = parseArgs({
      args: rest,
      options: { email: { type: 'string' }, password: { type: 'string' } },
      strict: true,
    }))
  } catch (err) {
    io.err(`${(err as Error).message}\n${USAGE}`)
    return 2
  }
  const password = values.password ?? io.env.TOLLGATE_USER_PASSWORD
  if (!values.email || !password) {
    io.err(USAGE)
    return 2
  }
  const config = io.config ?? loadConfig(io.env)
  const db = createDb({ databaseUrl: config.databaseUrl, schema: config.databaseSchema, max: 1 })
  try {
    const user = await createUsers({ db }).create(values.email, password)
    if (config.masterKey) await ensureFundingWallet(db, config.masterKey, user.id)
    io.out(`created user ${user.email} (${user.id})`)
    return 0
  } catch (err) {
    io.err(`could not create the user: ${(err as Error).message}`)
    return 1
  } finally {
    await db.destroy()
  }
}

/** `tollgate users …` as main.ts runs it: the exit codes of the other commands (usage is 1). */
export async function usersCommand(args: string[], cmd: Command): Promise<number> {
  if (wantsHelp(args)) {
    cmd.io.stdout(USAGE + '\n')
    return EXIT.ok
  }
  const code = await createUserCli(args, {
    out: (l) => cmd.io.stdout(l + '\n'),
    err: (l) => cmd.io.stderr(l + '\n'),
    env: cmd.io.env,
  })
  return code === 2 ? EXIT.usage : code
}
