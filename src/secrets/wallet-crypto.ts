import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { appError } from '../errors.js'

/**
 * AES-256-GCM envelope for secrets at rest (custodial wallet keys, upstream header values,
 * signing secrets). Format: `v1.<keyId>.<iv>.<tag>.<ciphertext>` (base64url parts), where keyId
 * names the master key (first 8 hex chars of its SHA-256), so a rotation can tell which rows it
 * has already re-encrypted. `aad` binds a ciphertext to its place (e.g. the wallet address), so a
 * ciphertext copied to another row does not decrypt.
 *
 * @example
 *   const box = encryptSecret(masterKey, privateKey, `agent:${address}`)
 *   decryptSecret([masterKey], box, `agent:${address}`) // === privateKey
 */
export function encryptSecret(masterKey: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv)
  cipher.setAAD(Buffer.from(aad, 'utf8'))
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return ['v1', masterKeyId(masterKey), b64(iv), b64(cipher.getAuthTag()), b64(ct)].join('.')
}

/** A stored secret is under a master key this process was not given (lost or changed key). */
export class MasterKeyUnavailableError extends Error {
  constructor(readonly keyId: string) {
    super(`no master key with id ${keyId} is configured`)
    this.name = 'MasterKeyUnavailableError'
  }
}

/** Decrypts with whichever of `masterKeys` the envelope names (current first, then old ones during a rotation). */
export function decryptSecret(masterKeys: readonly Buffer[], box: string, aad: string): string {
  const parts = box.split('.')
  if (parts.length !== 5 || parts[0] !== 'v1') throw new Error('not a v1 secret envelope')
  const key = masterKeys.find((k) => masterKeyId(k) === parts[1])
  if (!key) throw new MasterKeyUnavailableError(parts[1]!)
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(parts[2]!, 'base64url'))
  decipher.setAAD(Buffer.from(aad, 'utf8'))
  decipher.setAuthTag(Buffer.from(parts[3]!, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(parts[4]!, 'base64url')), decipher.final()]).toString('utf8')
}

/** Re-encrypts under `newKey`; returns the input unchanged when it already uses it. */
export function reencryptSecret(oldKeys: readonly Buffer[], newKey: Buffer, box: string, aad: string): string {
  if (envelopeKeyId(box) === masterKeyId(newKey)) return box
  return encryptSecret(newKey, decryptSecret([newKey, ...oldKeys], box, aad), aad)
}

export function masterKeyId(masterKey: Buffer): string {
  return createHash('sha256').update(masterKey).digest('hex').slice(0, 8)
}

export function envelopeKeyId(box: string): string | undefined {
  return box.split('.')[1]
}

/** The configured master key, or a 503 that says what is missing (never which value). */
export function requireMasterKey(config: { masterKey: Buffer | undefined }): Buffer {
  if (!config.masterKey)
    throw appError('service_unavailable', {
      detail: 'TOLLGATE_MASTER_KEY is not configured; custodial wallets and stored secrets are unavailable',
    })
  return config.masterKey
}

function b64(b: Buffer): string {
  return b.toString('base64url')
}
