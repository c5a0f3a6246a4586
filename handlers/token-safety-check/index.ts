import { minimalProxyTarget, proxySlots, pushedSelectors, slotAddress } from '../_shared/evm-bytecode.js'
import { addressSchema, chainClient, CHAIN_DATA_RPC_URL, parseAddress, upstreamError } from '../_shared/evm-client.js'
import { answeredWithoutValue, readTokenInfo } from '../_shared/evm-erc20.js'
import { defineHandler } from '../../src/pool/handler-contract.js'

interface Input {
  token: string
}

type Severity = 'info' | 'low' | 'medium' | 'high'
type Category = 'mint' | 'pause' | 'blacklist' | 'fee' | 'limits' | 'trading-switch' | 'upgrade' | 'ownership'

/** Admin functions looked for by selector, by what they let their controller do. */
const WATCHED: Array<{ category: Category; signatures: string[] }> = [
  {
    category: 'mint',
    signatures: [
      'mint(address,uint256)',
      'mint(uint256)',
      'mintTo(address,uint256)',
      'issue(uint256)',
      'configureMinter(address,uint256)',
    ],
  },
  { category: 'pause', signatures: ['pause()', 'unpause()', 'setPaused(bool)'] },
  {
    category: 'blacklist',
    signatures: [
      'blacklist(address)',
      'unBlacklist(address)',
      'addBlackList(address)',
      'addToBlacklist(address)',
      'setBlacklist(address,bool)',
      'blacklistAddress(address,bool)',
      'addToDenylist(address)',
      'denylist(address)',
      'destroyBlackFunds(address)',
      'freeze(address)',
    ],
  },
  {
    category: 'fee',
    signatures: [
      'setFee(uint256)',
      'setFees(uint256,uint256)',
      'setTax(uint256)',
      'setTaxFee(uint256)',
      'setTaxes(uint256,uint256)',
      'setBuyFee(uint256)',
      'setSellFee(uint256)',
      'setParams(uint256,uint256)',
    ],
  },
  {
    category: 'limits',
    signatures: [
      'setMaxTxAmount(uint256)',
      'setMaxWalletSize(uint256)',
      'setMaxWallet(uint256)',
      'excludeFromFee(address)',
    ],
  },
  { category: 'trading-switch', signatures: ['enableTrading()', 'openTrading()', 'setTradingEnabled(bool)'] },
  {
    category: 'upgrade',
    signatures: ['upgradeTo(address)', 'upgradeToAndCall(address,bytes)', 'changeAdmin(address)'],
  },
  { category: 'ownership', signatures: ['owner()', 'transferOwnership(address)', 'renounceOwnership()'] },
]

/** What a live controller of each category can do, and the severity while someone controls it. */
const POWER: Record<
  Exclude<Category, 'ownership' | 'upgrade'>,
  { what: string; live: Severity; renounced: Severity }
> = {
  mint: { what: 'create new tokens, diluting holders', live: 'high', renounced: 'medium' },
  blacklist: { what: 'block chosen addresses from moving their tokens', live: 'high', renounced: 'medium' },
  fee: { what: 'change a transfer fee or tax', live: 'high', renounced: 'medium' },
  pause: { what: 'stop all transfers', live: 'medium', renounced: 'low' },
  limits: { what: 'change per-transaction or per-wallet limits and fee exemptions', live: 'medium', renounced: 'low' },
  'trading-switch': { what: 'keep trading closed until it is switched on', live: 'medium', renounced: 'low' },
}

const DEAD = '0x000000000000000000000000000000000000dEaD'
const ownerAbi = [
  { type: 'function', name: 'owner', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] },
  { type: 'function', name: 'getOwner', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] },
] as const
const beaconAbi = [
  { type: 'function', name: 'implementation', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] },
] as const

const RISK_METHOD =
  'riskLevel is the highest severity among the findings (info counts as low); it measures how much an admin can change or restrict the token, not whether the team is honest. ' +
  'Severities: upgradeable proxy (the code can be replaced) high; mint, blacklist/denylist and fee/tax setters high while an owner exists or no owner() is found (access may be role-based), medium when owner() returns the zero or 0x…dEaD address ' +
  '(renouncing disables only owner-gated functions); pause, limits and trading switches medium, low when renounced; a live owner with no other power low; no contract code: riskLevel null. ' +
  'Functions are found by their 4-byte selector pushed (PUSH4) in the runtime bytecode of the token and, for a proxy, of its implementation: this is how Solidity dispatchers are built, ' +
  'but a selector can also appear as data, and compilers that dispatch differently (some Vyper versions) or functions with other names are missed. No transfer or sell is simulated, so no honeypot verdict is given.'

/**
 * Static safety check of an ERC-20 on the configured chain (Base in production): code, metadata,
 * proxy slots, owner, and admin functions found by selector, each with its evidence.
 */
export default defineHandler<Input>({
  slug: 'token-safety-check',
  description:
    'Checks an ERC-20 contract for admin control: code and metadata, EIP-1967/EIP-1822/EIP-1167 proxy and its admin, owner() and whether it is renounced, and mint, pause, blacklist, fee and upgrade functions found in the bytecode, each finding with its evidence and a documented risk level.',
  providers: [CHAIN_DATA_RPC_URL],
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['token'],
    properties: {
      token: addressSchema(
        'The ERC-20 token contract: a 0x-prefixed 20-byte hex address (mixed case must be a valid EIP-55 checksum).',
      ),
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ token, chainId, blockNumber, contract { exists, codeSize, codeHash }, erc20 { name, symbol, decimals, totalSupply, isErc20 } (null where the contract does not answer), ' +
      'proxy { isProxy, standard (eip1967 | eip1967-beacon | eip1822 | eip1167 | null), implementation, admin, beacon, implementationCodeSize }, ' +
      'owner { function, address, renounced, isContract } | null (no owner()/getOwner()), functions[] { signature, selector, category, foundIn (token | implementation) }, ' +
      'findings[] { id, severity, title, evidence }, riskLevel (low | medium | high | null when there is no contract), riskMethod, honeypotCheck: "not performed" }.',
    schema: {
      type: 'object',
      properties: {
        token: { type: 'string' },
        chainId: { type: 'integer' },
        blockNumber: { type: 'string' },
        contract: { type: 'object' },
        erc20: { type: ['object', 'null'] },
        proxy: { type: ['object', 'null'] },
        owner: { type: ['object', 'null'] },
        functions: { type: 'array' },
        findings: { type: 'array' },
        riskLevel: { type: ['string', 'null'], enum: ['low', 'medium', 'high', null] },
        riskMethod: { type: 'string' },
      },
    },
    example: {
      token: '0x7caDe833B83314F2103709De1856DFA4c0915C18',
      chainId: 84532,
      blockNumber: '4',
      honeypotCheck: 'not performed: no transfer or sell was simulated',
      riskMethod:
        'riskLevel is the highest severity among the findings (info counts as low); it measures how much an admin can change or restrict the token, not whether the team is honest. Severities: upgradeable proxy…',
      contract: {
        exists: true,
        codeSize: 1910,
        codeHash: '0xa410224b0484fdc1822344214590f33ecc31929b6fcf55958788565cf280d272',
      },
      erc20: {
        name: 'Plain',
        symbol: 'PLN',
        decimals: 6,
        totalSupply: '1000000000000',
        totalSupplyFormatted: '1000000',
        isErc20: true,
      },
      proxy: {
        isProxy: false,
        standard: null,
        implementation: null,
        admin: null,
        beacon: null,
        implementationCodeSize: null,
      },
      owner: null,
      functions: [],
      findings: [],
      riskLevel: 'low',
    },
  },
  // USDC on Base
  example: { token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
  timeoutMs: 20_000,
  async run(input, ctx) {
    const c = await chainClient(ctx, { what: 'token-safety-check' })
    const { viem, client, read } = c
    const token = parseAddress(viem, input.token, 'token')
    const blockNumber = await read('the latest block', () => client.getBlockNumber())
    const [chainId, code] = await Promise.all([
      read('the chain id', () => client.getChainId()),
      read('the token code', () => client.getCode({ address: token, blockNumber })),
    ])
    const base = {
      token,
      chainId,
      blockNumber: blockNumber.toString(),
      honeypotCheck: 'not performed: no transfer or sell was simulated',
      riskMethod: RISK_METHOD,
    }
    if (!code || code === '0x') {
      return {
        body: {
          ...base,
          contract: { exists: false, codeSize: 0, codeHash: null },
          erc20: null,
          proxy: null,
          owner: null,
          functions: [],
          findings: [
            {
              id: 'no-contract',
              severity: 'info',
              title: 'No contract at this address',
              evidence: `eth_getCode returned empty code at block ${blockNumber}: an account without code (or not on this chain, id ${chainId})`,
            },
          ],
          riskLevel: null,
        },
      }
    }
    const findings: Array<{ id: string; severity: Severity; title: string; evidence: string }> = []

    // proxies: storage slots, and the EIP-1167 clone pattern
    const slots = proxySlots(viem)
    const [implWord, adminWord, beaconWord, proxiableWord] = await Promise.all(
      [slots.eip1967Implementation, slots.eip1967Admin, slots.eip1967Beacon, slots.eip1822Proxiable].map((slot) =>
        read('a proxy storage slot', () =>
          client.getStorageAt({ address: token, slot: slot as `0x${string}`, blockNumber }),
        ),
      ),
    )
    let standard: string | null = null
    let implementation: `0x${string}` | null = null
    const admin = slotAddress(viem, adminWord)
    const beacon = slotAddress(viem, beaconWord)
    let slotUsed = ''
    if (slotAddress(viem, implWord)) {
      standard = 'eip1967'
      implementation = slotAddress(viem, implWord)
      slotUsed = slots.eip1967Implementation
    } else if (beacon) {
      standard = 'eip1967-beacon'
      slotUsed = slots.eip1967Beacon
      try {
        implementation = await client.readContract({
          address: beacon,
          abi: beaconAbi,
          functionName: 'implementation',
          blockNumber,
        })
      } catch (err) {
        if (!answeredWithoutValue(c, err)) throw upstreamError(viem, err, 'the beacon implementation')
      }
    } else if (slotAddress(viem, proxiableWord)) {
      standard = 'eip1822'
      implementation = slotAddress(viem, proxiableWord)
      slotUsed = slots.eip1822Proxiable
    } else if (minimalProxyTarget(code)) {
      standard = 'eip1167'
      implementation = minimalProxyTarget(code)
    }
    const implCode = implementation
      ? await read('the implementation code', () => client.getCode({ address: implementation!, blockNumber }))
      : undefined
    if (standard === 'eip1167') {
      findings.push({
        id: 'minimal-proxy',
        severity: 'info',
        title: 'EIP-1167 minimal proxy (clone)',
        evidence: `the runtime code is the EIP-1167 clone of ${implementation}; a clone cannot be upgraded`,
      })
    } else if (standard) {
      findings.push({
        id: 'upgradeable-proxy',
        severity: 'high',
        title: `Upgradeable proxy (${standard}): its code can be replaced`,
        evidence: `${standard === 'eip1967-beacon' ? `beacon slot ${slotUsed} holds ${beacon}, whose implementation() is ${implementation ?? 'not readable'}` : `storage slot ${slotUsed} holds the implementation ${implementation}`}${admin ? `; admin slot ${slots.eip1967Admin} holds ${admin}` : ''}`,
      })
    }

    // functions by selector
    const tokenSelectors = pushedSelectors(code)
    const implSelectors = implCode && implCode !== '0x' ? pushedSelectors(implCode) : new Set<string>()
    const functions: Array<{
      signature: string
      selector: string
      category: Category
      foundIn: 'token' | 'implementation'
    }> = []
    for (const { category, signatures } of WATCHED) {
      for (const signature of signatures) {
        const selector = viem.toFunctionSelector(signature)
        if (tokenSelectors.has(selector)) functions.push({ signature, selector, category, foundIn: 'token' })
        else if (implSelectors.has(selector))
          functions.push({ signature, selector, category, foundIn: 'implementation' })
      }
    }

    // owner
    let owner: { function: string; address: `0x${string}`; renounced: boolean; isContract: boolean } | null = null
    for (const fn of ['owner', 'getOwner'] as const) {
      try {
        const address = await client.readContract({ address: token, abi: ownerAbi, functionName: fn, blockNumber })
        const renounced = address === viem.zeroAddress || address.toLowerCase() === DEAD.toLowerCase()
        const ownerCode = renounced
          ? undefined
          : await read('the owner code', () => client.getCode({ address, blockNumber }))
        owner = { function: `${fn}()`, address, renounced, isContract: !!ownerCode && ownerCode !== '0x' }
        break
      } catch (err) {
        if (!answeredWithoutValue(c, err)) throw upstreamError(viem, err, `${fn}()`)
      }
    }
    if (owner) {
      findings.push(
        owner.renounced
          ? {
              id: 'owner-renounced',
              severity: 'info',
              title: 'Ownership renounced',
              evidence: `${owner.function} returns ${owner.address}`,
            }
          : {
              id: 'owner-live',
              severity: 'low',
              title: `An owner controls the contract${owner.isContract ? ' (a contract: multisig, timelock or other)' : ' (an externally owned account)'}`,
              evidence: `${owner.function} returns ${owner.address}`,
            },
      )
    }

    for (const [category, p] of Object.entries(POWER) as Array<
      [keyof typeof POWER, (typeof POWER)[keyof typeof POWER]]
    >) {
      const found = functions.filter((f) => f.category === category)
      if (found.length === 0) continue
      const severity = owner?.renounced ? p.renounced : p.live
      const who = owner
        ? owner.renounced
          ? 'the owner is renounced, which disables these only if they are owner-gated'
          : `the owner ${owner.address} can likely call them`
        : 'no owner() found: access control unknown (possibly role-based)'
      findings.push({
        id: `can-${category}`,
        severity,
        title: `Admin can ${p.what}`,
        evidence: `${found.map((f) => `${f.signature} (${f.selector}) in the ${f.foundIn} bytecode`).join(', ')}; ${who}`,
      })
    }
    const upgradeFns = functions.filter((f) => f.category === 'upgrade')
    if (upgradeFns.length && !standard) {
      findings.push({
        id: 'upgrade-function',
        severity: 'medium',
        title: 'Upgrade functions present but no proxy slot set',
        evidence: upgradeFns.map((f) => `${f.signature} (${f.selector}) in the ${f.foundIn} bytecode`).join(', '),
      })
    }

    const info = await readTokenInfo(c, token, blockNumber)
    const isErc20 = info.decimals !== null && info.totalSupply !== null
    if (!isErc20)
      findings.push({
        id: 'not-erc20',
        severity: 'medium',
        title: 'Does not answer the ERC-20 views',
        evidence: `decimals() ${info.decimals === null ? 'failed' : 'answered'}, totalSupply() ${info.totalSupply === null ? 'failed' : 'answered'}`,
      })

    const order: Severity[] = ['info', 'low', 'medium', 'high']
    const top = findings.reduce((m, f) => Math.max(m, order.indexOf(f.severity)), 0)
    return {
      body: {
        ...base,
        contract: { exists: true, codeSize: (code.length - 2) / 2, codeHash: viem.keccak256(code) },
        erc20: {
          name: info.name,
          symbol: info.symbol,
          decimals: info.decimals,
          totalSupply: info.totalSupply?.toString() ?? null,
          totalSupplyFormatted:
            info.totalSupply !== null && info.decimals !== null
              ? viem.formatUnits(info.totalSupply, info.decimals)
              : null,
          isErc20,
        },
        proxy: {
          isProxy: standard !== null,
          standard,
          implementation,
          admin,
          beacon,
          implementationCodeSize: implCode ? (implCode.length - 2) / 2 : null,
        },
        owner,
        functions,
        findings: findings.sort((a, b) => order.indexOf(b.severity) - order.indexOf(a.severity)),
        riskLevel: top >= 3 ? 'high' : top === 2 ? 'medium' : 'low',
      },
    }
  },
})
