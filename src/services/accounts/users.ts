import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { appError } from '../../errors.js'
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from './password.js'
import { hashSecret, newSecret } from '../../secrets/secret-token.js'

export interface User {
  id: string
  email: string
  created_at: Date
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const MIN_PASSWORD_LENGTH = 10
/** Dashboard sessions last 14 days. */
export const SESSION_TTL_MS = 14 * 24 * 3600 * 1000

export function validateEmail(email: string): string {
  const e = email.trim()
  if (!EMAIL.test(e) || e.length > 254)
    throw appError(
      'invalid_parameter',
      { param: 'email', detail: 'expected an email address' },
      { details: { param: 'email' } },
    )
  return e
}

export function validatePassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
    throw appError(
      'invalid_parameter',
      { param: 'password', detail: `expected ${MIN_PASSWORD_LENGTH} to 1024 characters` },
      { details: { param: 'password' } },
    )
  }
}

/** Users and their dashboard login sessions. */
export function createUsers({ db }: { db: Kysely<Database> }) {
  return {
    /** Creates a user; 409 when the email is taken (case-insensitive). */
    async create(email: string, password: string): Promise<User> {
      const e = validateEmail(email)
      validatePassword(password)
      const password_hash = await hashPassword(password)
      const row = await db
        .insertInto('users')
        .values({ email: e, password_hash })
        .onConflict((oc) => oc.expression(sql`lower(email)`).doNothing())
        .returning(['id', 'email', 'created_at'])
        .executeTakeFirst()
      if (!row) throw appError('conflict', { detail: 'a user with this email already exists' })
      return row
    },

    async findByEmail(email: string): Promise<(User & { password_hash: string }) | undefined> {
      return db
        .selectFrom('users')
        .select(['id', 'email', 'created_at', 'password_hash'])
        .where((eb) => eb(eb.fn('lower', [eb.ref('email')]), '=', email.trim().toLowerCase()))
        .executeTakeFirst()
    },

    async get(id: string): Promise<User | undefined> {
      return db.selectFrom('users').select(['id', 'email', 'created_at']).where('id', '=', id).executeTakeFirst()
    },

    async setPassword(userId: string, password: string): Promise<void> {
      validatePassword(password)
      await db
        .updateTable('users')
        .set({ password_hash: await hashPassword(password), updated_at: new Date() })
        .where('id', '=', userId)
        .execute()
    },

    /** Email + password → user, or 401 invalid_credentials (same time and answer for unknown email and wrong password). */
    async authenticate(email: string, password: string): Promise<User> {
      const user = await this.findByEmail(email)
      const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH)
      if (!user || !ok) throw appError('invalid_credentials')
      return { id: user.id, email: user.email, created_at: user.created_at }
    },

    /** A new login session; the token goes into an httpOnly cookie, only its hash is stored. */
    async createSession(userId: string): Promise<{ token: string; expiresAt: Date }> {
      const { secret, hash } = newSecret('ses_')
      const expiresAt = new Date(Date.now() + SESSION_TTL_MS)
      await db
        .insertInto('user_sessions')
        .values({ user_id: userId, token_hash: hash, expires_at: expiresAt })
        .execute()
      return { token: secret, expiresAt }
    },

    /** The session's user, looked up on every request so logout is immediate everywhere. */
    async sessionUser(token: string): Promise<{ user: User; sessionId: string } | undefined> {
      const row = await db
        .selectFrom('user_sessions as s')
        .innerJoin('users as u', 'u.id', 's.user_id')
        .select(['s.id as session_id', 'u.id', 'u.email', 'u.created_at'])
        .where('s.token_hash', '=', hashSecret(token))
        .where('s.revoked_at', 'is', null)
        .where('s.expires_at', '>', new Date())
        .executeTakeFirst()
      return row
        ? { user: { id: row.id, email: row.email, created_at: row.created_at }, sessionId: row.session_id }
        : undefined
    },

    async endSession(token: string): Promise<void> {
      await db
        .updateTable('user_sessions')
        .set({ revoked_at: new Date() })
        .where('token_hash', '=', hashSecret(token))
        .where('revoked_at', 'is', null)
        .execute()
    },
  }
}

export type UsersService = ReturnType<typeof createUsers>
