import { sql, type Kysely } from 'kysely'
import type { RedisClient } from '../../redis-client.js'
import { hashTypedData, type PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { randomNonce, signTransferAuth } from '../../chain/sign-transfer-auth.js'
import type { ParsedChallenge, Requirement } from '../../client/challenge.js'
import { signDeferred } from '../../client/sign-deferred.js'
import { signUpto } from '../../client/sign-upto.js'
import { paymentHeader } from '../../client/sign-exact.js'
import { signInHeader, signInOffer, type SignInOffer } from '../../client/sign-in.js'
import type { Config } from '../../config.js'
import type { Database } from '../../db/database.js'
import { appError, AppError } from '../../errors.js'
import { paymentVerdict } from '../../proxy/payment-verdict.js'
import { isValidPaymentId } from '../../x402/payment-identifier.js'
import { DEFERRED_NO_EXPIRY } from '../../schemes/deferred/deferred-scheme.js'
import { voucherTypedData } from '../../schemes/deferred/typed-data.js'
import type { HexString } from '../../x402/types.js'
import { AgentAuth, type AgentRow } from '../accounts/agent-auth.js'
import { createCapEvents } from '../events/cap-events.js'
import { createAgentPaymentsSweep } from './agent-payments-sweep.js'
import { createAgentEscrow } from './agent-escrow.js'
import { createAgentVouchers } from './agent-vouchers.js'
import { chooseRequirement, withinPerTransactionCap, type Choice, type PayBody } from './choose-requirement.js'
import { createChainCancel, type CancelResult } from './chain-cancel.js'
import { createCollectionProofs, proofReason, type CollectionProof } from './collection-proof.js'
import { createPlatformTerms } from './platform-terms.js'
import { createSeenChallenges } from './seen-challenges.js'
import { CustodialKeys } from './custodial-keys.js'
import { createReservationWriter } from './insert-batcher.js'
import { balanceError, capError, headroom, quote, type Headroom, type PaymentQuote } from './spend-answers.js'
import { createAgentPermit2 } from './agent-permit2.js'
import { heldOf, lowerToCharge, releaseEarly, releaseSuperseded, settledReleaseAt } from './spend-release.js'
import { createVoucherLock } from './voucher-lock.js'
import { createSpendWindows, spendWindowTotals, windowsAt, type Unsettled, type Windows } from './spend-windows.js'
import { openWithdrawalAuthorizations } from '../withdrawals/wallet-reservation.js'
import type { AgentPaymentStatus } from '../../db/agent-payments-tables.js'
import { WalletBalances } from './wallet-balances.js'
import {
  createApprovals,
  type ApprovalPending,
  type ApprovalTerms,
  type ApprovalsService,
} from '../approvals/approvals.js'

export type { AgentRow } from '../accounts/agent-auth.js'
export type { PayBody } from './choose-requirement.js'
export type { Headroom, PaymentQuote } from './spend-answers.js'

export interface AgentPaymentsDeps {
  db: Kysely<Database>
  redis: RedisClient
  key(...parts: string[]): string
  config: Pick<
    Readonly<Config>,
    | 'chain'
    | 'masterKey'
    | 'proxyUrl'
    | 'deployment'
    | 'databaseUrl'
    | 'x402'
    | 'deferredEscrowAddress'
    | 'relayerKeys'
    | 'settlement'
    | 'upto'
    | 'allowPrivateUpstreams'
    | 'agentPayments'
    | 'baseUrl'
  >
  chain: PublicClient
  /** injectable for tests of the UTC day/month boundaries */
  now?: () => Date
  /** how long a read on-chain balance is trusted (default 1000 ms) */
  balanceTtlMs?: number
  /** cache agent-key look-ups while LISTENing for changes (default true) */
  cacheAuth?: boolean
  onError?(err: unknown): void
}

export interface SignedPayment extends PaymentQuote {
  object: 'agent_payment'
  payment_id: string
  header: 'X-PAYMENT' | 'PAYMENT-SIGNATURE'
  value: string
  payer: string
  /** the authorization's nonce (deferred: the voucher's EIP-712 digest): with `payer`, how the seller's record is found without its id */
  nonce: string
  /** deferred: the ledger's "never" (a voucher has no expiry) */
  valid_before: string
  /** the x402 `payment-identifier` the header carries (asked for, and declared by the challenge) */
  payment_identifier?: string
  headroom: Headroom
  /** deferred: the voucher signed (what this call adds is `amount`; caps count that, not the aggregate) */
  voucher?: { id: string; nonce: string; value_aggregate: string }
  /** deferred: what the payment deposits from the agent's wallet into the escrow (not spending: it stays the agent's until vouchers are collected) */
  deposit?: string
}

export interface DryRun {
  object: 'agent_payment_preview'
  would_pay: PaymentQuote | null
  /** headroom after the payment (or now, when it would be refused) */
  headroom: Headroom
  spent: { daily: string; monthly: string }
  balance: string | null
  refusal: { code: string; message: string; [k: string]: unknown } | null
}

/**
 * The buyer side: an agent hands over the 402 challenge it received; the platform picks a
 * requirement it may pay (choose-requirement.ts), reserves the amount against the agent's caps
 * atomically (spend-windows.ts), signs the EIP-3009 authorization with the agent's custodial key
 * (custodial-keys.ts) and records the reservation. Agent keys are checked by accounts/agent-auth.ts;
 * what the agent's reports cannot decide, the sweep does (agent-payments-sweep.ts).
 *
 * @example
 *   const p = await agentPayments.pay(agentId, { url, challenge: res.headers.get('payment-required') })
 *   await fetch(url, { headers: { [p.header]: p.value } })
 */
export function createAgentPayments(deps: AgentPaymentsDeps) {
  const { db, config } = deps
  const now = deps.now ?? (() => new Date())
  const windows = createSpendWindows(deps.redis, deps.key)
  const balances = new WalletBalances(deps.chain, config.chain.usdc.address, deps.balanceTtlMs ?? 1000)
  const keys = new CustodialKeys(config.masterKey)
  const auth = new AgentAuth(deps)
  const proxyOrigin = safeOrigin(config.proxyUrl)
  const escrow = config.deferredEscrowAddress
  const terms = {
    chainId: config.chain.chainId,
    network: config.chain.network,
    caip2: config.chain.caip2,
    usdc: config.chain.usdc.address.toLowerCase(),
    proxyOrigin,
    escrow: escrow?.toLowerCase(),
  }
  const vouchers = escrow
    ? createAgentVouchers({ db, chain: deps.chain, escrow, chainId: config.chain.chainId })
    : undefined
  const escrows = escrow
    ? createAgentEscrow({
        db,
        redis: deps.redis,
        key: deps.key,
        chain: deps.chain,
        escrow,
        chainId: config.chain.chainId,
        relayerKeys: config.relayerKeys,
        maxFeePerGasWei: config.settlement.maxFeePerGasWei,
      })
    : undefined
  const noEscrow = () =>
    appError('service_unavailable', { detail: 'this deployment has no deferred escrow (DEFERRED_ESCROW_ADDRESS)' })
  const permit2 = createAgentPermit2({
    redis: deps.redis,
    key: deps.key,
    chain: deps.chain,
    chainId: config.chain.chainId,
    relayerKeys: config.relayerKeys,
    maxFeePerGasWei: config.settlement.maxFeePerGasWei,
  })
  const writer = createReservationWriter(db)
  const voucherLock = createVoucherLock(deps.redis, deps.key)
  const proofs = createCollectionProofs({ ...deps, proxyOrigin, now })
  const platform = createPlatformTerms({ db, config })
  const approvals: ApprovalsService = createApprovals({
    db,
    config: { masterKey: config.masterKey, baseUrl: config.baseUrl },
    now,
  })
  const seenChallenges = createSeenChallenges({ allowPrivate: config.allowPrivateUpstreams })
  const cancels = createChainCancel({
    redis: deps.redis,
    key: deps.key,
    chain: deps.chain,
    chainId: config.chain.chainId,
    relayerKeys: config.relayerKeys,
    maxFeePerGasWei: config.settlement.maxFeePerGasWei,
    usdc: config.chain.usdc,
  })
  /** The validity the platform signs: the challenge's timeout, at most AGENT_PAYMENT_MAX_VALID_SECONDS. */
  const validFor = (req: Requirement) => Math.min(req.maxTimeoutSeconds, config.agentPayments.maxValidForSeconds)

  /**
   * The chosen requirements the platform checked itself: for its own proxy, those equal to the
   * registry's (platform-terms.ts); for a seller elsewhere allowed by a `host` entry only, those
   * whose payee the host itself asks for (seen-challenges.ts). Throws when none is left.
   */
  async function checked(c: Choice): Promise<Requirement[]> {
    if (c.url.origin === proxyOrigin) return platform.matching(c.url, c.payable)
    if (c.hostOnly.size === 0) return c.payable
    let payees: ReadonlySet<string> | undefined
    try {
      payees = (await seenChallenges.seen(c.url, c.method)).payTo
    } catch {
      payees = undefined
    }
    const ok = c.payable.filter((r) => !c.hostOnly.has(r) || payees?.has(r.payTo.toLowerCase()))
    if (ok.length > 0) return ok
    const r = c.payable[0]!
    throw appError(
      'seller_not_allowed',
      {
        detail: payees
          ? `payTo ${r.payTo} is not a payee ${c.url.host} asks for itself (the platform fetched its 402 challenge); only its host entry allows it`
          : `the platform could not fetch ${c.url.host}'s own 402 challenge to confirm the payee ${r.payTo}; add a pay_to entry for it, or retry`,
      },
      { details: { pay_to: r.payTo, host: c.url.hostname, namespace: null } },
    )
  }
  const sweep = createAgentPaymentsSweep({ db, chain: deps.chain, config, windows, now, balanceTtlMs: balances.ttlMs })
  const releaseAt = () => settledReleaseAt(now().getTime(), balances.ttlMs)

  const windowTotals = (agentId: string, w: Windows) => spendWindowTotals(db, agentId, w)
  // agent.cap_near / agent.cap_reached webhooks and alerts, written beside the payment (not awaited)
  const capEvents = createCapEvents(db, (err) => deps.onError?.(err))

  /** Caps and balance check plus reservation in one Redis call (rebuilding counters from Postgres when missing). */
  async function reserve(
    agent: AgentRow,
    w: Windows,
    amount: bigint,
    o: { peek?: boolean; balance: bigint | undefined; pay?: Unsettled; nowSeconds: number },
  ) {
    const caps = {
      daily: agent.cap_daily === null ? null : BigInt(agent.cap_daily),
      monthly: agent.cap_monthly === null ? null : BigInt(agent.cap_monthly),
    }
    const opts = {
      ...o,
      pay: o.pay ?? { payer: agent.address.toLowerCase(), nonce: `0x${'0'.repeat(64)}`, amount: 0n, validBefore: 0n },
    }
    let init: { day: bigint; month: bigint } | undefined
    for (let attempt = 0; ; attempt++) {
      const r = await windows.reserve(agent.id, w, amount, caps, { ...opts, init })
      if (attempt >= 3 || (r.kind !== 'init' && r.kind !== 'init-unsettled')) {
        capEvents.observe(agent, w, amount, r)
        return r
      }
      if (r.kind === 'init') init = await windowTotals(agent.id, w)
      else await windows.rebuildUnsettled(opts.pay.payer, await openAuthorizations(opts.pay.payer, o.nowSeconds))
    }
  }

  /** What the chain may still move from this wallet: signed, not refused, not known settled, not expired. */
  async function openAuthorizations(payer: string, nowSeconds: number): Promise<Unsettled[]> {
    const rows = await db
      .selectFrom('agent_payments')
      .select(['nonce', 'amount', 'max_amount', 'valid_before'])
      .where('payer', '=', payer)
      .where('scheme', 'in', ['exact', 'upto']) // a voucher moves nothing from the wallet
      .where('status', 'in', ['reserved', 'accepted'])
      .where('tx_hash', 'is', null)
      .where('valid_before', '>', String(nowSeconds))
      .execute()
    // a pending withdrawal from the wallet is an unsettled authorization too
    return [
      ...rows.map((r) => ({ ...heldOf({ ...r, payer }), validBefore: BigInt(r.valid_before) })),
      ...(await openWithdrawalAuthorizations(db, payer, nowSeconds)),
    ]
  }

  return {
    authenticate: (bearer: string) => auth.authenticate(bearer),
    /** human approval of held payments: the owner's decisions and the agent's polling (services/approvals) */
    approvals,
    sweep,
    /** Stops LISTENing and forgets cached look-ups and decrypted keys. */
    async close(): Promise<void> {
      await auth.close()
      await seenChallenges.close()
      keys.clear()
    },
    /**
     * An x402 `sign-in-with-x` proof for the challenge from the agent wallet, instead of a payment,
     * where the seller offers one bound to the URL's origin and the agent may pay that seller (the
     * same checks as `pay`: its allowlist, this deployment's network, the payee checked by the
     * platform), and the seller itself offers that sign-in: this platform's registry says the
     * endpoint sells access, or the host's own 402 (fetched by the platform) declares the same
     * domain, uri and statement. Nothing is reserved or spent.
     */
    async signIn(who: string | AgentRow, body: PayBody) {
      const agent = typeof who === 'string' ? await auth.load(who) : who
      const choice = chooseRequirement(agent, body, terms)
      const { ch, url } = choice
      await checked(choice)
      const offer = signInOffer([{ parsed: ch }], url.toString())
      if (!offer)
        throw appError(
          'invalid_parameter',
          {
            param: 'challenge',
            detail: "the challenge declares no sign-in-with-x for an EVM chain bound to the url's origin",
          },
          { details: { param: 'challenge' } },
        )
      await confirmSignIn(url, choice.method, offer)
      const account = privateKeyToAccount(`0x${keys.privateKeyOf(agent).toString('hex')}`)
      const value = await signInHeader(offer, account.address, (message) => account.signMessage({ message }))
      return {
        object: 'agent_sign_in' as const,
        header: 'SIGN-IN-WITH-X' as const,
        value,
        payer: account.address,
        uri: offer.uri,
      }
    },
    /** Signs a payment for the challenge, or (dry_run) says what would be paid and the headroom. */
    async pay(who: string | AgentRow, body: PayBody): Promise<SignedPayment | DryRun | ApprovalPending> {
      if (body.dry_run !== undefined && typeof body.dry_run !== 'boolean')
        throw appError(
          'invalid_parameter',
          { param: 'dry_run', detail: 'expected true or false' },
          { details: { param: 'dry_run' } },
        )
      const agent = typeof who === 'string' ? await auth.load(who) : who
      const at = now()
      const w = windowsAt(at)
      if (body.dry_run) return preview(agent, body, w)
      if (body.payment_identifier !== undefined && !isValidPaymentId(body.payment_identifier)) {
        throw appError(
          'invalid_parameter',
          {
            param: 'payment_identifier',
            detail: 'expected 16-128 characters of letters, digits, - and _ (x402 payment-identifier)',
          },
          { details: { param: 'payment_identifier' } },
        )
      }
      const choice = chooseRequirement(agent, body, terms)
      const { ch, url, method } = choice
      const req = withinPerTransactionCap(agent, await checked(choice))
      const c = { ch, url, method, req }
      const sign = () => signChosen(agent, body, c, w, at)
      const held: ApprovalTerms = {
        url: url.href,
        method,
        payTo: req.payTo,
        amount: req.amount,
        scheme: req.scheme,
        network: req.network,
      }
      // human approval (services/approvals): a retry with the approval id signs once; else the policy may hold it
      if (body.approval_id !== undefined) return approvals.useApproved(agent, body.approval_id, held, sign)
      return (await approvals.hold(agent, held)) ?? sign()
    },

    /**
     * The agent reports what the seller answered. The report is kept (an event), but it never lowers
     * the agent's spend by itself: a signature stays counted until it is provably unusable on chain.
     * For an `exact` payment reported `rejected` or `error` that the platform's proxy did not record
     * (or voided), or that went to a seller elsewhere, the platform cancels the authorization on chain
     * (chain-cancel.ts) and releases it on the receipt. Otherwise it stays `reserved` until
     * settlement or the chain decides after validBefore (the sweep); a voucher until the platform's
     * next voucher to the seller supersedes it. An `accepted` report counts it for good.
     */
    async outcome(agentId: string, id: string, body: { status?: unknown; payment_response?: unknown }) {
      if (!['accepted', 'rejected', 'error'].includes(body.status as string))
        throw appError(
          'invalid_parameter',
          { param: 'status', detail: 'expected accepted | rejected | error' },
          { details: { param: 'status' } },
        )
      const response =
        body.payment_response === undefined || body.payment_response === null ? null : body.payment_response
      if (
        response !== null &&
        (typeof response !== 'object' || Array.isArray(response) || JSON.stringify(response).length > 4096)
      ) {
        throw appError(
          'invalid_parameter',
          { param: 'payment_response', detail: 'expected the decoded payment response object (at most 4 KB)' },
          { details: { param: 'payment_response' } },
        )
      }
      const row = await find(agentId, id)
      const reported = body.status as 'accepted' | 'rejected' | 'error'
      const tx =
        response &&
        typeof (response as Record<string, unknown>).transaction === 'string' &&
        /^0x[0-9a-fA-F]{64}$/.test((response as { transaction: string }).transaction)
          ? (response as { transaction: string }).transaction
          : null
      const data = response === null ? null : JSON.stringify(response)
      await db.insertInto('agent_payment_events').values({ agent_payment_id: row.id, type: reported, data }).execute()
      let proof: CollectionProof | undefined
      let cancel: CancelResult | undefined
      if (row.status === 'reserved' && row.scheme === 'upto' && safeOrigin(row.url) === proxyOrigin) {
        // only our relayer (the witness's facilitator, checked against the registry when signed) can
        // settle it, and it never settles what the proxy voided: the ledger is the proof, whatever was reported
        proof = await proofs.check(row, { takeNonce: false })
        if (proof.proven && proof.reason === 'voided')
          await releaseEarly(db, windows, row, { kind: 'voided', seller_payment_id: proof.seller!.id })
      }
      if (row.status === 'reserved' && proof?.proven) {
        // released above
      } else if (row.status === 'reserved' && reported === 'accepted') {
        const updated = await db
          .updateTable('agent_payments')
          .set({ status: 'accepted', payment_response: data, tx_hash: tx, updated_at: sql`now()` })
          .where('id', '=', row.id)
          .where('status', '=', 'reserved')
          .returning(['id'])
          .executeTakeFirst()
        if (updated && tx) await windows.releaseUnsettled(heldOf(row), releaseAt())
      } else if (row.status === 'reserved' && row.scheme === 'exact') {
        // the proxy's own record decides whether a cancellation could leave one of our sellers unpaid:
        // only what it never recorded (its nonce now taken, so it never will) or voided is cancelled
        proof = await proofs.check(row, { takeNonce: true })
        if (proof.proven || proof.reason === 'other_seller') {
          cancel = await cancels.cancel(keys.privateKeyOf(await auth.load(agentId)), row.payer, row.nonce)
          if (cancel.kind === 'cancelled')
            await releaseEarly(db, windows, row, {
              kind: 'cancelled',
              hash: cancel.hash,
              seller_payment_id: proof.seller?.id ?? null,
            })
        }
      }
      // upto: the charge the platform's own proxy recorded (never the agent's word) replaces the maximum
      if (row.scheme === 'upto' && !proof?.proven) {
        const seller = await db
          .selectFrom('payments')
          .select(['value', 'status'])
          .where('payer', '=', row.payer)
          .where('nonce', '=', row.nonce)
          .executeTakeFirst()
        if (seller && ['served', 'settling', 'settled'].includes(seller.status))
          await lowerToCharge(db, windows, row, BigInt(seller.value))
      }
      const payment = await this.get(agentId, id)
      return { ...payment, reason: outcomeReason(payment.status, row.scheme, proof, cancel) }
    },

    /**
     * What the agent may still spend, for an agent that budgets itself: its caps, what it spent in
     * the current UTC day and month, the headroom left, its wallet's USDC balance (cached as for
     * payments), what is signed but not settled yet, and its allowlist. The same counters `pay` uses.
     */
    async status(agent: AgentRow) {
      const at = now()
      let balance: bigint | null = null
      let balanceError: string | null = null
      try {
        balance = await balances.balanceOf(agent.address)
      } catch {
        balanceError = 'the chain RPC did not answer; the balance is unavailable, retry later'
      }
      const r = await reserve(agent, windowsAt(at), 0n, {
        peek: true,
        balance: balance ?? 0n,
        nowSeconds: Math.floor(at.getTime() / 1000),
      })
      const [day, month, unsettled] = 'day' in r ? [r.day, r.month, r.unsettled] : [0n, 0n, 0n]
      return {
        object: 'agent_status' as const,
        address: agent.address,
        spend_caps: { per_transaction: agent.cap_per_transaction, daily: agent.cap_daily, monthly: agent.cap_monthly },
        spent: { daily: day.toString(), monthly: month.toString() },
        headroom: headroom(agent, day, month),
        balance: balance?.toString() ?? null,
        unsettled: unsettled.toString(),
        available: balance === null ? null : (balance > unsettled ? balance - unsettled : 0n).toString(),
        balance_error: balanceError,
        allowlist: agent.allowlist,
      }
    },

    /** The agent wallet's escrow accounts (deferred): balance, thawing, outstanding vouchers per seller. */
    async escrow(agent: AgentRow) {
      if (!escrows) throw noEscrow()
      return escrows.overview(agent.address)
    },

    /** Withdraws what finished thawing in the agent's escrow account with `seller` and starts thawing the rest (gasless). */
    async flushEscrow(agent: AgentRow, body: { seller?: unknown }) {
      if (!escrows) throw noEscrow()
      if (typeof body.seller !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(body.seller))
        throw appError(
          'invalid_parameter',
          { param: 'seller', detail: 'expected the seller address (payTo)' },
          { details: { param: 'seller' } },
        )
      return escrows.flush(agent.address, keys.privateKeyOf(agent), body.seller, config.chain.usdc.address)
    },

    /**
     * Deposits from the agent wallet into its escrow account with `seller` (gasless). Not spending
     * (the caps do not count it); the wallet must cover it beside what is signed and not settled.
     */
    async depositEscrow(agent: AgentRow, body: { seller?: unknown; amount?: unknown }) {
      if (!escrows) throw noEscrow()
      if (typeof body.seller !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(body.seller))
        throw appError(
          'invalid_parameter',
          { param: 'seller', detail: 'expected the seller address (payTo)' },
          { details: { param: 'seller' } },
        )
      if (typeof body.amount !== 'string' || !/^[1-9][0-9]{0,15}$/.test(body.amount))
        throw appError(
          'invalid_parameter',
          { param: 'amount', detail: 'expected a positive decimal integer string of atomic USDC' },
          { details: { param: 'amount' } },
        )
      const amount = BigInt(body.amount)
      const payer = agent.address.toLowerCase()
      const nowSeconds = Math.floor(now().getTime() / 1000)
      const balance = await balances.balanceOf(agent.address)
      const held: Unsettled = { payer, nonce: randomNonce(), amount, validBefore: BigInt(nowSeconds + 3600) }
      let r = await windows.reserveUnsettled(held, balance, nowSeconds)
      if (r.kind === 'init-unsettled') {
        await windows.rebuildUnsettled(payer, await openAuthorizations(payer, nowSeconds))
        r = await windows.reserveUnsettled(held, balance, nowSeconds)
      }
      if (r.kind !== 'ok') throw balanceError(balance, r.unsettled, amount)
      try {
        return await escrows.deposit(agent.address, keys.privateKeyOf(agent), body.seller, config.chain.usdc, amount)
      } finally {
        // executed or never sent: the wallet balance read next says which; counted until every process re-read it
        await windows.releaseUnsettled(held, releaseAt()).catch(() => {})
      }
    },

    async get(agentId: string, id: string) {
      const row = await find(agentId, id)
      // payments to this platform's own proxy: the seller-side record knows the settlement
      const seller = await proofs.sellerRecord(row.payer, row.nonce.toLowerCase())
      const counted = row.status === 'reserved' || row.status === 'accepted'
      return {
        object: 'agent_payment' as const,
        id: row.id,
        status: row.status,
        /** whether the amount counts against the caps now */
        counted,
        /** `reserved`: until the seller settles it (counted for good) or its authorization expires unused (released) */
        counted_until: row.status === 'reserved' ? ('settlement or expiry' as const) : null,
        url: row.url,
        method: row.method,
        amount: row.amount,
        /** upto: the maximum signed; `amount` is the actual charge once the proxy recorded it */
        max_amount: row.max_amount,
        pay_to: row.pay_to,
        payer: row.payer,
        network: row.network,
        x402_version: row.x402_version,
        scheme: row.scheme,
        valid_before: row.valid_before,
        transaction: row.tx_hash ?? seller?.tx_hash ?? null,
        settlement: seller ? { payment_id: seller.id, status: seller.status, ...paymentVerdict(seller) } : null,
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
      }
    },
  }

  /** Signs the chosen requirement in its scheme (caps, balance and reservation first). */
  async function signChosen(
    agent: AgentRow,
    body: PayBody,
    c: { ch: ParsedChallenge; url: URL; method: string; req: Requirement },
    w: Windows,
    at: Date,
  ): Promise<SignedPayment> {
    if (c.req.scheme === 'deferred') return payDeferred(agent, body, c, w, at)
    if (c.req.scheme === 'upto') return payUpto(agent, body, c, w, at)
    return payExact(agent, body, c, w, at)
  }

  /** exact: an EIP-3009 transferWithAuthorization from the custodial key. */
  async function payExact(
    agent: AgentRow,
    body: PayBody,
    c: { ch: ParsedChallenge; url: URL; method: string; req: Requirement },
    w: Windows,
    at: Date,
  ): Promise<SignedPayment> {
    const { ch, url, method, req } = c
    const balance = await balances.balanceOf(agent.address)
    if (balance < req.amount) throw balanceError(balance, 0n, req.amount)
    const nowSeconds = Math.floor(at.getTime() / 1000)
    // as the official clients: valid from 10 minutes ago until the requirement's timeout (bounded)
    const a = {
      from: agent.address as HexString,
      to: req.payTo as HexString,
      value: req.amount.toString(),
      validAfter: String(nowSeconds - 600),
      validBefore: String(nowSeconds + validFor(req)),
      nonce: randomNonce() as HexString,
    }
    const pay: Unsettled = {
      payer: agent.address.toLowerCase(),
      nonce: a.nonce,
      amount: req.amount,
      validBefore: BigInt(a.validBefore),
    }
    const r = await reserve(agent, w, req.amount, { balance, pay, nowSeconds })
    if (r.kind === 'balance') throw balanceError(balance, r.unsettled, req.amount)
    if (r.kind === 'over') throw capError(agent, r.cap, req.amount, r.day, r.month)
    if (r.kind !== 'ok') throw new Error(`unexpected spend reservation result ${r.kind}`)
    try {
      const token = req.extra ?? { name: config.chain.usdc.name, version: config.chain.usdc.version }
      const signature = signTransferAuth(
        keys.privateKeyOf(agent),
        { name: token.name, version: token.version, chainId: config.chain.chainId, verifyingContract: req.asset },
        {
          from: a.from,
          to: a.to,
          value: req.amount,
          validAfter: BigInt(a.validAfter),
          validBefore: BigInt(a.validBefore),
          nonce: a.nonce,
        },
      )
      const payload = { signature, authorization: a }
      const id = await writer.write({
        ...requirementColumns(agent, req.version, url, method, req),
        nonce: a.nonce,
        valid_after: a.validAfter,
        valid_before: a.validBefore,
        day_window: w.day,
        month_window: w.month,
        scheme: 'exact',
      })
      const { header, value, paymentId } = paymentHeader(
        ch,
        req,
        payload,
        body.payment_identifier as string | undefined,
      )
      return {
        object: 'agent_payment',
        payment_id: id,
        header,
        value,
        ...quote(req),
        payer: agent.address,
        nonce: a.nonce,
        valid_before: a.validBefore,
        ...(paymentId ? { payment_identifier: paymentId } : {}),
        headroom: headroom(agent, r.day, r.month),
      }
    } catch (err) {
      await Promise.all([windows.adjust(agent.id, agent.address, w, -req.amount), windows.releaseUnsettled(pay)]).catch(
        () => {},
      )
      throw err
    }
  }

  /** Refuses a sign-in the seller at `url` does not offer itself (`seller_not_allowed`). */
  async function confirmSignIn(url: URL, method: string, offer: SignInOffer): Promise<void> {
    const refuse = (why: string) =>
      appError(
        'seller_not_allowed',
        { detail: `the agent signs in only where the seller itself offers it: ${why}` },
        { details: { pay_to: null, host: url.hostname, namespace: null } },
      )
    if (url.origin === proxyOrigin) {
      const e = await platform.endpointAt(url)
      if (!e?.access) throw refuse(`${url.pathname} on this platform sells no paid access`)
      const statement = `Sign in with the wallet that paid for access to ${e.path}`
      if (offer.info.statement !== statement || offer.uri !== e.resourceUrl)
        throw refuse(`the sign-in is not the one ${e.path} offers (its uri or statement differ)`)
      return
    }
    const seen = await seenChallenges.seen(url, method).catch(() => undefined)
    if (!seen) throw refuse(`the platform could not fetch ${url.host}'s own 402 challenge`)
    const theirs = signInOffer(seen.offered, url.toString())
    if (
      !theirs ||
      theirs.info.domain !== offer.info.domain ||
      theirs.uri !== offer.uri ||
      theirs.info.statement !== offer.info.statement
    )
      throw refuse(`${url.host}'s own 402 challenge offers no such sign-in (domain, uri and statement must match)`)
  }

  /** The outcome answer's `reason`: what the report changed, in one sentence. */
  function outcomeReason(
    status: AgentPaymentStatus,
    scheme: string,
    proof: CollectionProof | undefined,
    cancel: CancelResult | undefined,
  ): string {
    if (cancel?.kind === 'cancelled' && status === 'expired')
      return `released: the platform cancelled the authorization on chain (${cancel.hash}), so it can never be collected`
    if (status === 'reserved') {
      if (cancel?.kind === 'not_cancelled')
        return `still counted: the platform could not cancel the authorization on chain (${cancel.reason}); settlement or expiry decides`
      if (proof && (proof.reason !== 'other_seller' || scheme === 'exact')) return proofReason(proof)
      if (scheme === 'deferred')
        return "still counted: a voucher has no expiry; it stops counting once the platform's next voucher to this seller supersedes it"
      if (scheme === 'upto')
        return 'still counted until settlement, or until its Permit2 deadline passes unused (the sweep reads the chain)'
      return 'still counted until settlement or expiry decides'
    }
    if (status === 'rejected')
      return proof?.proven ? proofReason(proof) : 'released earlier: the platform proved it will never be collected'
    if (status === 'expired') return 'released: its authorization can no longer be used on chain'
    return 'counted: the payment was accepted'
  }

  /**
   * A voucher from the custodial key. The caps count this call's price (the increment), never the
   * aggregate; the wallet balance is checked only for a deposit, which the payment carries when
   * the escrow balance for the seller is short (`deposit_amount`, default 100 x the price).
   */
  async function payDeferred(
    agent: AgentRow,
    body: PayBody,
    c: { ch: ParsedChallenge; url: URL; method: string; req: Requirement },
    w: Windows,
    at: Date,
  ): Promise<SignedPayment> {
    // one at a time per (wallet, seller): each voucher is planned on what the previous one left
    return voucherLock.hold(agent.address, c.req.payTo, () => signVoucher(agent, body, c, w, at))
  }

  async function signVoucher(
    agent: AgentRow,
    body: PayBody,
    c: { ch: ParsedChallenge; url: URL; method: string; req: Requirement },
    w: Windows,
    at: Date,
  ): Promise<SignedPayment> {
    const { req } = c
    const nowSeconds = Math.floor(at.getTime() / 1000)
    const want = depositAmountOf(body, req.amount)
    const plan = await vouchers!.plan(agent.address as HexString, req)
    const deposit =
      plan.balance >= plan.owed ? undefined : want > plan.owed - plan.balance ? want : plan.owed - plan.balance
    const payer = agent.address.toLowerCase()
    let held: Unsettled | undefined
    if (deposit !== undefined) {
      // the deposit authorization can move wallet funds until it expires: counted as unsettled, like a transfer
      const balance = await balances.balanceOf(agent.address)
      held = { payer, nonce: randomNonce(), amount: deposit, validBefore: BigInt(nowSeconds + 3600) }
      let r = await windows.reserveUnsettled(held, balance, nowSeconds)
      if (r.kind === 'init-unsettled') {
        await windows.rebuildUnsettled(payer, await openAuthorizations(payer, nowSeconds))
        r = await windows.reserveUnsettled(held, balance, nowSeconds)
      }
      if (r.kind !== 'ok') throw balanceError(balance, r.unsettled, deposit)
    }
    const r = await reserve(agent, w, req.amount, { balance: undefined, nowSeconds })
    const undo = async () => {
      if (held) await windows.releaseUnsettled(held).catch(() => {})
    }
    if (r.kind !== 'ok') {
      await undo()
      if (r.kind === 'over') throw capError(agent, r.cap, req.amount, r.day, r.month)
      throw new Error(`unexpected spend reservation result ${r.kind}`)
    }
    try {
      const account = privateKeyToAccount(`0x${keys.privateKeyOf(agent).toString('hex')}`)
      // a later timestamp than this wallet's last voucher to the seller: two vouchers on one head in the
      // same second would otherwise be the same voucher (same digest), recorded once
      const last = await db
        .selectFrom('agent_payments')
        .select(sql<string | null>`max(valid_after)`.as('t'))
        .where('payer', '=', payer)
        .where('pay_to', '=', req.payTo.toLowerCase())
        .where('scheme', '=', 'deferred')
        .executeTakeFirst()
      const at = Math.max(nowSeconds, last?.t ? Number(last.t) + 1 : 0)
      const signed = await signDeferred(account, plan.terms, { deposit, nowSeconds: at })
      const digest = hashTypedData(voucherTypedData(signed.voucher)).toLowerCase()
      const id = await writer.write({
        ...requirementColumns(agent, 2, c.url, c.method, req),
        nonce: digest,
        valid_after: String(signed.voucher.timestamp),
        valid_before: String(DEFERRED_NO_EXPIRY),
        day_window: w.day,
        month_window: w.month,
        scheme: 'deferred',
      })
      const v = signed.voucher
      await db
        .updateTable('agent_payments')
        .set({ voucher_id: v.id.toLowerCase(), value_aggregate: v.valueAggregate.toString() })
        .where('id', '=', id)
        .execute()
      // what this voucher makes uncollectable beyond itself stops counting (never what it builds on)
      await releaseSuperseded(db, windows, {
        rowId: id,
        payer,
        payTo: req.payTo.toLowerCase(),
        voucherId: v.id.toLowerCase(),
        base: v.valueAggregate - req.amount,
        aggregate: v.valueAggregate,
      })
      const { header, value } = paymentHeader(c.ch, req, signed.payload)
      return {
        object: 'agent_payment',
        payment_id: id,
        header,
        value,
        ...quote(req),
        payer: agent.address,
        nonce: digest,
        valid_before: String(DEFERRED_NO_EXPIRY),
        headroom: headroom(agent, r.day, r.month),
        voucher: { id: v.id, nonce: v.nonce.toString(), value_aggregate: v.valueAggregate.toString() },
        ...(deposit !== undefined ? { deposit: deposit.toString() } : {}),
      }
    } catch (err) {
      await Promise.all([windows.adjust(agent.id, agent.address, w, -req.amount), undo()]).catch(() => {})
      throw err
    }
  }

  /**
   * upto (usage-based price): a Permit2 authorization for the requirement's maximum from the
   * custodial key, the wallet's Permit2 approval sent first when missing (agent-permit2.ts). The
   * caps and the wallet's unsettled total reserve the maximum; the outcome (or the sweep) lowers
   * the caps' count to the charge the proxy recorded, and a failed call releases it all.
   */
  async function payUpto(
    agent: AgentRow,
    body: PayBody,
    c: { ch: ParsedChallenge; url: URL; method: string; req: Requirement },
    w: Windows,
    at: Date,
  ): Promise<SignedPayment> {
    const { req } = c
    const balance = await balances.balanceOf(agent.address)
    if (balance < req.amount) throw balanceError(balance, 0n, req.amount)
    const key = keys.privateKeyOf(agent)
    const token = req.extra ?? { name: config.chain.usdc.name, version: config.chain.usdc.version }
    await permit2.ensure(agent.address, key, { address: req.asset, ...token })
    const nowSeconds = Math.floor(at.getTime() / 1000)
    const signed = await signUpto(
      privateKeyToAccount(`0x${key.toString('hex')}`),
      { ...req, maxTimeoutSeconds: validFor(req) },
      nowSeconds,
    )
    const payer = agent.address.toLowerCase()
    const pay: Unsettled = { payer, nonce: signed.nonce, amount: req.amount, validBefore: signed.deadline }
    const r = await reserve(agent, w, req.amount, { balance, pay, nowSeconds })
    if (r.kind === 'balance') throw balanceError(balance, r.unsettled, req.amount)
    if (r.kind === 'over') throw capError(agent, r.cap, req.amount, r.day, r.month)
    if (r.kind !== 'ok') throw new Error(`unexpected spend reservation result ${r.kind}`)
    try {
      const id = await writer.write({
        ...requirementColumns(agent, 2, c.url, c.method, req),
        max_amount: req.amount.toString(),
        nonce: signed.nonce,
        valid_after: signed.validAfter.toString(),
        valid_before: signed.deadline.toString(),
        day_window: w.day,
        month_window: w.month,
        scheme: 'upto',
      })
      const { header, value, paymentId } = paymentHeader(
        c.ch,
        req,
        signed.payload,
        body.payment_identifier as string | undefined,
      )
      return {
        object: 'agent_payment',
        payment_id: id,
        header,
        value,
        ...quote(req),
        payer: agent.address,
        nonce: signed.nonce,
        valid_before: signed.deadline.toString(),
        ...(paymentId ? { payment_identifier: paymentId } : {}),
        headroom: headroom(agent, r.day, r.month),
      }
    } catch (err) {
      await Promise.all([windows.adjust(agent.id, agent.address, w, -req.amount), windows.releaseUnsettled(pay)]).catch(
        () => {},
      )
      throw err
    }
  }

  async function preview(agent: AgentRow, body: PayBody, w: Windows): Promise<DryRun> {
    let amount = 0n
    let wouldPay: PaymentQuote | null = null
    let refusal: DryRun['refusal'] = null
    let balance: bigint | null = null
    try {
      const req = withinPerTransactionCap(agent, await checked(chooseRequirement(agent, body, terms)))
      amount = req.amount
      wouldPay = quote(req)
      balance = await balances.balanceOf(agent.address)
    } catch (err) {
      if (
        !(err instanceof AppError) ||
        ![
          'seller_not_allowed',
          'spend_cap_exceeded',
          'insufficient_balance',
          'unsupported_requirements',
          'requirement_mismatch',
        ].includes(err.code)
      )
        throw err
      refusal = { code: err.code, message: err.message, ...err.details }
    }
    const r = await reserve(agent, w, amount, {
      peek: true,
      balance: balance ?? 0n,
      nowSeconds: Math.floor(now().getTime() / 1000),
    })
    const day = 'day' in r ? r.day : 0n
    const month = 'month' in r ? r.month : 0n
    const unsettled = 'unsettled' in r ? r.unsettled : 0n
    // a voucher draws on the escrow, not the wallet: the wallet pays only a deposit (shown, not checked here)
    if (!refusal && wouldPay?.scheme === 'deferred') {
      const plan = await checked(chooseRequirement(agent, body, terms))
        .then((payable) => vouchers!.plan(agent.address as HexString, withinPerTransactionCap(agent, payable)))
        .catch(() => undefined)
      if (plan && plan.balance < plan.owed) {
        const want = depositAmountOf(body, amount)
        wouldPay = {
          ...wouldPay,
          deposit: (want > plan.owed - plan.balance ? want : plan.owed - plan.balance).toString(),
        }
      }
    } else if (!refusal && wouldPay && balance !== null && balance - unsettled < amount) {
      const e = balanceError(balance, unsettled, amount)
      refusal = { code: e.code, message: e.message, ...e.details }
    }
    if (!refusal && wouldPay) {
      const over =
        (agent.cap_daily !== null && day + amount > BigInt(agent.cap_daily) && 'daily') ||
        (agent.cap_monthly !== null && month + amount > BigInt(agent.cap_monthly) && 'monthly')
      if (over) {
        const e = capError(agent, over, amount, day, month)
        refusal = { code: e.code, message: e.message, ...e.details }
      }
    }
    const after = refusal ? 0n : amount
    return {
      object: 'agent_payment_preview',
      would_pay: refusal ? null : wouldPay,
      headroom: headroom(agent, day + after, month + after),
      spent: { daily: day.toString(), monthly: month.toString() },
      balance: balance?.toString() ?? null,
      refusal,
    }
  }

  async function find(agentId: string, id: string) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id))
      throw appError('not_found', { what: 'payment' })
    const row = await db
      .selectFrom('agent_payments')
      .selectAll()
      .where('id', '=', id)
      .where('agent_id', '=', agentId)
      .executeTakeFirst()
    if (!row) throw appError('not_found', { what: 'payment' })
    return row
  }
}

/** `deposit_amount` (a decimal string of atomic units, at least the price), default 100 x the price. */
/** The columns of an agent payment row that come from the requirement it pays, whatever the scheme. */
function requirementColumns(agent: AgentRow, x402Version: number, url: URL, method: string, req: Requirement) {
  return {
    agent_id: agent.id,
    x402_version: x402Version,
    url: url.href,
    method,
    network: req.network,
    asset: req.asset.toLowerCase(),
    payer: agent.address.toLowerCase(),
    pay_to: req.payTo.toLowerCase(),
    amount: req.amount.toString(),
  }
}

function depositAmountOf(body: PayBody, price: bigint): bigint {
  if (body.deposit_amount === undefined) return 100n * price
  const v = body.deposit_amount
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,15}$/.test(v) || BigInt(v) < price) {
    throw appError(
      'invalid_parameter',
      {
        param: 'deposit_amount',
        detail: `expected a decimal integer string of atomic USDC, at least the price ${price}`,
      },
      { details: { param: 'deposit_amount' } },
    )
  }
  return BigInt(v)
}

function safeOrigin(u: string): string | undefined {
  try {
    return new URL(u).origin
  } catch {
    return undefined
  }
}

export type AgentPaymentsService = ReturnType<typeof createAgentPayments>
