import t from 'tap'
import artifacts from '../../../../src/chain/contracts/artifacts.json' with { type: 'json' }
import { deferredEscrowAbi } from '../../../../src/schemes/deferred/escrow-abi.js'

/** the compiler's ABI without `internalType`, which viem does not need */
function strip(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(strip)
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => k !== 'internalType')
        .map(([k, x]) => [k, strip(x)]),
    )
  return v
}
const key = (e: { type: string; name?: string }) => `${e.type} ${e.name ?? ''}`

t.test("the typed ABI is the compiled contract's, entry for entry", async (t) => {
  const compiled = (strip(artifacts.contracts.DeferredPaymentEscrow.abi) as { type: string; name?: string }[]).sort(
    (a, b) => key(a).localeCompare(key(b)),
  )
  const typed = [...deferredEscrowAbi].sort((a, b) => key(a).localeCompare(key(b)))
  t.same(typed, compiled)
})

t.test("it has every function of the escrow text's interface", async (t) => {
  const names = new Set(deferredEscrowAbi.filter((e) => e.type === 'function').map((e) => (e as { name: string }).name))
  for (const name of [
    'deposit',
    'depositTo',
    'depositMany',
    'depositWithAuthorization',
    'thaw',
    'cancelThaw',
    'withdraw',
    'flushWithAuthorization',
    'flushAllWithAuthorization',
    'collect',
    'collectMany',
    'getAccount',
    'getAccountDetails',
    'getVoucherCollected',
    'getOutstandingAndCollectableAmount',
    'isVoucherSignatureValid',
    'isDepositAuthorizationValid',
    'isFlushAuthorizationValid',
    'isFlushAllAuthorizationValid',
    'THAWING_PERIOD',
    'MAX_THAWING_PERIOD',
    'DOMAIN_SEPARATOR',
  ])
    t.ok(names.has(name), name)
})
