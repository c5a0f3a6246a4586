import { defineHandler } from '../../src/pool/handler-contract.js'
import {
  clean,
  dec,
  EVM_ADDRESS_PATTERN,
  hyperliquidInfo,
  HYPERLIQUID_SETTING,
  malformed,
} from '../_shared/hyperliquid-info.js'

interface Input {
  vaultAddress: string
  user?: string
  topFollowers?: number
}

type Series = Array<[number, string]>
interface PortfolioPeriod {
  accountValueHistory?: Series
  pnlHistory?: Series
  vlm?: string
}

interface Follower {
  user: string
  vaultEquity?: string
  pnl?: string
  allTimePnl?: string
  daysFollowing?: number
  vaultEntryTime?: number
  lockupUntil?: number
}

/** Hyperliquid's vaultDetails lists followers up to this many (its largest depositors) */
const FOLLOWER_LIST_CAP = 100

/**
 * A Hyperliquid vault from the info endpoint's `vaultDetails`. By address only: the documented
 * list type (`vaultSummaries`) does not list the venue's vaults (it answers only very recent ones
 * or nothing), and the web app's vault list is an undocumented endpoint, so it is not used.
 * Docs: https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint#retrieve-details-for-a-vault
 */
export default defineHandler<Input>({
  slug: 'perpdex-vaults',
  description:
    'Details of a Hyperliquid vault by address: name, leader, TVL, APR, leader share and commission, depositors, and a performance summary (account value, PnL, volume) per day, week, month and all time.',
  providers: [HYPERLIQUID_SETTING],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['vaultAddress'],
    properties: {
      vaultAddress: {
        type: 'string',
        pattern: EVM_ADDRESS_PATTERN,
        description: 'The vault: a 0x-prefixed 20-byte hex address (as shown in the Hyperliquid vault page URL).',
      },
      user: {
        type: 'string',
        pattern: EVM_ADDRESS_PATTERN,
        description: "Optional depositor address: returns that wallet's position in the vault (followerState).",
      },
      topFollowers: {
        type: 'integer',
        minimum: 0,
        maximum: 20,
        default: 5,
        description: 'Largest depositors to list (0–20).',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ venue, found, vaultAddress, name, leader, description, isClosed, allowDeposits, tvlUsd (latest account value of the day series), apr (fraction, as Hyperliquid reports it), aprPercent, leaderFraction, leaderCommission, maxDistributableUsd, maxWithdrawableUsd, relationship, ' +
      'followersListed (Hyperliquid lists at most its 100 largest depositors), followersListCapped, topFollowers[]: { user, equityUsd, pnlUsd, allTimePnlUsd, daysFollowing, entryTime }, followerState (for user, else null), ' +
      'performance: { day|week|month|allTime: { from, to, accountValueStartUsd, accountValueEndUsd, pnlUsd (last point of the PnL series), volumeUsd, points } } }. found:false when the address is not a vault.',
    schema: {
      type: 'object',
      properties: {
        venue: { type: 'string' },
        found: { type: 'boolean' },
        vaultAddress: { type: 'string' },
        name: { type: 'string' },
        leader: { type: 'string' },
        description: { type: 'string' },
        isClosed: { type: 'boolean' },
        allowDeposits: { type: 'boolean' },
        tvlUsd: { type: ['null', 'number'] },
        apr: { type: 'number' },
        aprPercent: { type: 'number' },
        leaderFraction: { type: 'number' },
        leaderCommission: { type: 'number' },
        maxDistributableUsd: { type: 'number' },
        maxWithdrawableUsd: { type: 'number' },
        relationship: { type: 'string' },
        followersListed: { type: 'number' },
        followersListCapped: { type: 'boolean' },
        topFollowers: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              user: { type: 'string' },
              equityUsd: { type: 'number' },
              pnlUsd: { type: 'number' },
              allTimePnlUsd: { type: 'number' },
              daysFollowing: { type: 'number' },
              entryTime: { type: 'string' },
            },
            required: ['user', 'equityUsd', 'pnlUsd', 'allTimePnlUsd', 'daysFollowing', 'entryTime'],
          },
        },
        followerState: {
          type: ['null', 'object'],
          properties: {
            user: { type: 'string' },
            equityUsd: { type: 'number' },
            pnlUsd: { type: 'number' },
            allTimePnlUsd: { type: 'number' },
            daysFollowing: { type: 'number' },
            lockupUntil: { type: 'string' },
          },
          required: ['user', 'equityUsd', 'pnlUsd', 'allTimePnlUsd', 'daysFollowing', 'lockupUntil'],
        },
        performance: {
          type: 'object',
          properties: {
            day: {
              type: 'object',
              properties: {
                from: { type: ['null', 'string'] },
                to: { type: ['null', 'string'] },
                accountValueStartUsd: { type: 'number' },
                accountValueEndUsd: { type: ['null', 'number'] },
                pnlUsd: { type: ['null', 'number'] },
                volumeUsd: { type: 'number' },
                points: { type: 'number' },
              },
              required: ['from', 'to', 'accountValueStartUsd', 'accountValueEndUsd', 'pnlUsd', 'volumeUsd', 'points'],
            },
            week: {
              type: 'object',
              properties: {
                from: { type: 'string' },
                to: { type: 'string' },
                accountValueStartUsd: { type: 'number' },
                accountValueEndUsd: { type: 'number' },
                pnlUsd: { type: 'number' },
                volumeUsd: { type: 'number' },
                points: { type: 'number' },
              },
              required: ['from', 'to', 'accountValueStartUsd', 'accountValueEndUsd', 'pnlUsd', 'volumeUsd', 'points'],
            },
          },
          required: ['day'],
        },
        reason: { type: 'string' },
      },
      required: ['venue', 'found', 'vaultAddress'],
    },
    example: {
      venue: 'hyperliquid',
      found: true,
      vaultAddress: '0xdfc24b077bc1425ad1dea75bcb6f8158e10df303',
      name: 'Test Vault',
      leader: '0x677d831aef5328190852e24f13c46cac05f984e7',
      description: 'market making',
      isClosed: false,
      allowDeposits: true,
      tvlUsd: 1010000.5,
      apr: 0.3638712925909,
      aprPercent: 36.3871292591,
      leaderFraction: 0.1,
      leaderCommission: 0,
      maxDistributableUsd: 94856.16,
      maxWithdrawableUsd: 7425.68,
      relationship: 'normal',
      followersListed: 3,
      followersListCapped: false,
      topFollowers: [
        {
          user: '0x3333333333333333333333333333333333333333',
          equityUsd: 900000,
          pnlUsd: 9000,
          allTimePnlUsd: 20000,
          daysFollowing: 100,
          entryTime: '2024-09-03T10:40:00.000Z',
        },
        {
          user: '0x2222222222222222222222222222222222222222',
          equityUsd: 20000,
          pnlUsd: 10,
          allTimePnlUsd: 50,
          daysFollowing: 3,
          entryTime: '2024-12-12T10:40:00.000Z',
        },
        {
          user: '0x1111111111111111111111111111111111111111',
          equityUsd: 5000,
          pnlUsd: 120,
          allTimePnlUsd: 300,
          daysFollowing: 40,
          entryTime: '2024-11-02T10:40:00.000Z',
        },
      ],
      followerState: null,
      performance: {
        day: {
          from: '2024-12-12T10:40:00.000Z',
          to: '2024-12-12T22:40:00.000Z',
          accountValueStartUsd: 1000000,
          accountValueEndUsd: 1010000.5,
          pnlUsd: 10000.5,
          volumeUsd: 2500000,
          points: 2,
        },
        week: {
          from: '2024-12-06T10:40:00.000Z',
          to: '2024-12-12T22:40:00.000Z',
          accountValueStartUsd: 900000,
          accountValueEndUsd: 1010000.5,
          pnlUsd: -500.25,
          volumeUsd: 9000000,
          points: 2,
        },
      },
    },
  },
  example: { vaultAddress: '0xdfc24b077bc1425ad1dea75bcb6f8158e10df303' },
  async run(input, ctx) {
    const vaultAddress = input.vaultAddress.toLowerCase()
    const request: Record<string, unknown> = { type: 'vaultDetails', vaultAddress }
    if (input.user) request.user = input.user.toLowerCase()
    const v = await hyperliquidInfo<any>(ctx, request)
    // vaultDetails answers null for an address that is no vault (nktkas/hyperliquid src/api/info/_methods/vaultDetails.ts VaultDetailsResponse, tests/api/info/vaultDetails.test.ts)
    if (v === null)
      return {
        body: { venue: 'hyperliquid', found: false, vaultAddress, reason: 'Hyperliquid has no vault at this address' },
      }
    if (typeof v !== 'object' || !Array.isArray(v.portfolio)) throw malformed('vaultDetails')

    const periods = new Map<string, PortfolioPeriod>(
      v.portfolio
        .filter((p: unknown) => Array.isArray(p) && p.length === 2 && p[1] !== null && typeof p[1] === 'object')
        .map((p: [string, PortfolioPeriod]) => [p[0], p[1]]),
    )
    const performance: Record<string, unknown> = {}
    for (const name of ['day', 'week', 'month', 'allTime']) {
      const p = periods.get(name)
      if (!p) continue
      const values = Array.isArray(p.accountValueHistory) ? p.accountValueHistory : []
      const pnl = Array.isArray(p.pnlHistory) ? p.pnlHistory : []
      // a point is [ms, "decimal"]; anything else (or a time that is not a date) reads as null, never a crash
      const at = (xs: Series, i: number) => (Array.isArray(xs[i]) ? xs[i] : undefined)
      const iso = (ms: unknown) =>
        typeof ms === 'number' && Number.isFinite(new Date(ms).getTime()) ? new Date(ms).toISOString() : null
      const first = at(values, 0)
      const last = at(values, values.length - 1)
      const lastPnl = at(pnl, pnl.length - 1)
      performance[name] = {
        from: first ? iso(first[0]) : null,
        to: last ? iso(last[0]) : null,
        accountValueStartUsd: first ? dec(first[1]) : null,
        accountValueEndUsd: last ? dec(last[1]) : null,
        pnlUsd: lastPnl ? dec(lastPnl[1]) : null,
        volumeUsd: dec(p.vlm),
        points: values.length,
      }
    }
    const dayValues = periods.get('day')?.accountValueHistory ?? periods.get('allTime')?.accountValueHistory ?? []
    const followers: Follower[] = Array.isArray(v.followers)
      ? v.followers.filter((f: unknown) => f !== null && typeof f === 'object')
      : []
    const top = followers
      .map((f) => ({
        user: f.user,
        equityUsd: dec(f.vaultEquity),
        pnlUsd: dec(f.pnl),
        allTimePnlUsd: dec(f.allTimePnl),
        daysFollowing: typeof f.daysFollowing === 'number' ? f.daysFollowing : null,
        entryTime: typeof f.vaultEntryTime === 'number' ? new Date(f.vaultEntryTime).toISOString() : null,
      }))
      .sort((a, b) => (b.equityUsd ?? 0) - (a.equityUsd ?? 0))
      .slice(0, input.topFollowers ?? 5)
    const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : dec(x))
    const fs = v.followerState
    return {
      body: {
        venue: 'hyperliquid',
        found: true,
        vaultAddress: typeof v.vaultAddress === 'string' ? v.vaultAddress : vaultAddress,
        name: v.name ?? null,
        leader: v.leader ?? null,
        description: v.description ?? null,
        isClosed: typeof v.isClosed === 'boolean' ? v.isClosed : null,
        allowDeposits: typeof v.allowDeposits === 'boolean' ? v.allowDeposits : null,
        tvlUsd: Array.isArray(dayValues[dayValues.length - 1]) ? dec(dayValues[dayValues.length - 1]![1]) : null,
        apr: num(v.apr),
        aprPercent: num(v.apr) === null ? null : clean(num(v.apr)! * 100),
        leaderFraction: num(v.leaderFraction),
        leaderCommission: num(v.leaderCommission),
        maxDistributableUsd: num(v.maxDistributable),
        maxWithdrawableUsd: num(v.maxWithdrawable),
        relationship: v.relationship?.type ?? null,
        followersListed: followers.length,
        followersListCapped: followers.length >= FOLLOWER_LIST_CAP,
        topFollowers: top,
        followerState: fs
          ? {
              user: fs.user ?? null,
              equityUsd: dec(fs.vaultEquity),
              pnlUsd: dec(fs.pnl),
              allTimePnlUsd: dec(fs.allTimePnl),
              daysFollowing: fs.daysFollowing ?? null,
              lockupUntil: typeof fs.lockupUntil === 'number' ? new Date(fs.lockupUntil).toISOString() : null,
            }
          : null,
        performance,
      },
    }
  },
})
