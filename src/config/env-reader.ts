import { isIP } from 'node:net'
import { redactUrl } from './redact-url.js'

export type Env = Record<string, string | undefined>

/** Reads one variable at a time and remembers every problem it meets (a bad value reads as its fallback). */
export class EnvReader {
  readonly problems: string[] = []

  constructor(private readonly env: Env) {}

  private raw(name: string): string | undefined {
    const v = this.env[name]
    return v === undefined || v.trim() === '' ? undefined : v.trim()
  }

  str(name: string, fallback?: string): string {
    return this.raw(name) ?? fallback ?? ''
  }

  optional(name: string): string | undefined {
    return this.raw(name)
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    const v = this.raw(name)
    if (v === undefined) return fallback
    if (!(values as readonly string[]).includes(v)) {
      this.problems.push(`${name}: expected one of ${values.join(' | ')}, got "${v}"`)
      return fallback
    }
    return v as T
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name)
    if (v === undefined) return fallback
    const n = Number(v)
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name}: expected an integer from ${min} to ${max}, got "${v}"`)
      return fallback
    }
    return n
  }

  /** A non-negative integer amount of up to 30 digits (atomic units, wei); `what` names the unit in the problem. */
  amount(name: string, fallback: string, what: string): bigint {
    const v = this.str(name, fallback)
    if (/^\d{1,30}$/.test(v)) return BigInt(v)
    this.problems.push(`${name}: expected an integer amount of ${what}`)
    return BigInt(fallback)
  }

  url(name: string, fallback: string | undefined, protocols: string[], hint = ''): string | undefined {
    const v = this.raw(name) ?? fallback
    if (v === undefined) return undefined
    try {
      const u = new URL(v)
      if (!protocols.includes(u.protocol)) throw new Error('protocol')
      return v.replace(/\/+$/, '')
    } catch {
      this.problems.push(`${name}: expected a ${protocols.join(' or ')} URL, got "${redactUrl(v)}"${hint}`)
      return fallback
    }
  }

  privateKeys(name: string): `0x${string}`[] {
    const v = this.raw(name)
    if (v === undefined) return []
    const keys = v
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean)
    const bad = keys.findIndex((k) => !/^0x[0-9a-fA-F]{64}$/.test(k))
    if (bad >= 0) {
      this.problems.push(
        `${name}: expected comma-separated 0x-prefixed 32-byte hex private keys (entry ${bad + 1} is not one)`,
      )
      return []
    }
    return keys as `0x${string}`[]
  }

  address(name: string): `0x${string}` | undefined {
    const v = this.raw(name)
    if (v === undefined) return undefined
    if (!/^0x[0-9a-fA-F]{40}$/.test(v)) {
      this.problems.push(`${name}: expected a 0x-prefixed 20-byte hex address, got "${v}"`)
      return undefined
    }
    return v as `0x${string}`
  }

  /** `true`/`false`, or comma-separated addresses, CIDRs and proxy-addr's names (loopback, linklocal, uniquelocal) */
  trustProxy(name: string): boolean | string[] {
    const v = this.raw(name)
    if (v === undefined || v === 'false') return false
    if (v === 'true') return true
    if (/^\d+$/.test(v)) {
      // Fastify 5.12.1 made a hop count trust nothing (it cannot check the peer is a proxy): refuse rather than ignore it
      this.problems.push(
        `${name}: a hop count ("${v}") is not supported by Fastify since 5.12.1; name the load balancers' addresses or CIDRs (or true)`,
      )
      return false
    }
    const list = v
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)
    if (list.length === 0 || !list.every(isTrustedProxyEntry)) {
      this.problems.push(`${name}: expected true, false, or comma-separated IP addresses or CIDRs, got "${v}"`)
      return false
    }
    return list
  }

  key32(name: string): Buffer | undefined {
    const v = this.raw(name)
    if (v === undefined) return undefined
    const buf = /^(0x)?[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v.replace(/^0x/, ''), 'hex') : Buffer.from(v, 'base64')
    if (buf.length !== 32) {
      this.problems.push(`${name}: expected 32 bytes as 64 hex characters or base64`)
      return undefined
    }
    return buf
  }
}

/** One entry of TRUST_PROXY: an IP address, a CIDR, or one of proxy-addr's names. */
function isTrustedProxyEntry(x: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(x)) return true
  const [addr, bits, extra] = x.split('/')
  if (extra !== undefined || !isIP(addr!)) return false
  if (bits === undefined) return true
  const max = isIP(addr!) === 4 ? 32 : 128
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max
}
