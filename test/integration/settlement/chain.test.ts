import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import {
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  hashDomain,
  http,
  parseEventLogs,
  parseSignature,
  serializeSignature,
  toHex,
  type Address,
  type Hex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import {
  DEMO_PAYER_USDC,
  DEVNET_USDC_ADDRESS,
  mintUsdc,
  setupDevnetContracts,
  startDevnet,
  type Devnet,
} from '../../../src/chain/devnet.js'
import { MULTICALL3_ADDRESS, multicall3Abi } from '../../../src/chain/multicall3-abi.js'
import { eip3009Types, usdcAbi } from '../../../src/chain/usdc-abi.js'
import { withDevnet } from '../../helpers/devnet.js'

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

const EIP712_DOMAIN = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
] as const

const randomNonce = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)))
const now = (): bigint => BigInt(Math.floor(Date.now() / 1000))

function clients(devnet: Devnet) {
  const transport = http(devnet.rpcUrl)
  const pub = createPublicClient({ chain: devnet.chain, transport, pollingInterval: 50 })
  const payer = privateKeyToAccount(devnet.accounts.demoPayer.privateKey)
  const relayer = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.relayer.privateKey),
    chain: devnet.chain,
    transport,
  })
  const payee = createWalletClient({
    account: privateKeyToAccount(devnet.accounts.receiver.privateKey),
    chain: devnet.chain,
    transport,
  })
  const domain = {
    name: 'USDC',
    version: '2',
    chainId: devnet.chainId,
    verifyingContract: DEVNET_USDC_ADDRESS,
  } as const
  const balanceOf = (who: Address) =>
    pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: usdcAbi, functionName: 'balanceOf', args: [who] })
  const authorizationState = (who: Address, nonce: Hex) =>
    pub.readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: usdcAbi,
      functionName: 'authorizationState',
      args: [who, nonce],
    })

  /** An EIP-3009 authorization from the demo payer, signed the way x402 clients do. */
  async function authorize(
    to: Address,
    value: bigint,
    over: Partial<{ validAfter: bigint; validBefore: bigint; nonce: Hex }> = {},
  ) {
    const message = {
      from: payer.address,
      to,
      value,
      validAfter: over.validAfter ?? 0n,
      validBefore: over.validBefore ?? now() + 3600n,
      nonce: over.nonce ?? randomNonce(),
    }
    const signature = await payer.signTypedData({
      domain,
      types: { TransferWithAuthorization: eip3009Types.TransferWithAuthorization },
      primaryType: 'TransferWithAuthorization',
      message,
    })
    return { message, signature }
  }

  type Auth = Awaited<ReturnType<typeof authorize>>
  const bytesArgs = ({ message: m }: Auth, signature: Hex) =>
    [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, signature] as const
  const vrsArgs = ({ message: m }: Auth, signature: Hex) => {
    const { r, s, v } = parseSignature(signature)
    return [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, Number(v), r, s] as const
  }

  async function submitBytes(auth: Auth, signature = auth.signature) {
    const hash = await relayer.writeContract({
      address: DEVNET_USDC_ADDRESS,
      abi: usdcAbi,
      functionName: 'transferWithAuthorization',
      args: bytesArgs(auth, signature),
    })
    return pub.waitForTransactionReceipt({ hash })
  }
  async function submitVrs(auth: Auth, signature = auth.signature) {
    const hash = await relayer.writeContract({
      address: DEVNET_USDC_ADDRESS,
      abi: usdcAbi,
      functionName: 'transferWithAuthorization',
      args: vrsArgs(auth, signature),
    })
    return pub.waitForTransactionReceipt({ hash })
  }

  return {
    pub,
    payer,
    relayer,
    payee,
    domain,
    balanceOf,
    authorizationState,
    authorize,
    bytesArgs,
    vrsArgs,
    submitBytes,
    submitVrs,
  }
}

/** The same signature with s replaced by n - s: still valid ECDSA, refused as malleable. */
function highS(signature: Hex): Hex {
  const { r, s, yParity } = parseSignature(signature)
  const flipped = SECP256K1_N - BigInt(s)
  return serializeSignature({ r, s: toHex(flipped, { size: 32 }), yParity: yParity === 0 ? 1 : 0 })
}

t.test('devnet token and EIP-3009', async (t) => {
  const devnet = await withDevnet(t)
  const c = clients(devnet)
  const { payer } = c
  const receiver = devnet.accounts.receiver.address

  t.test('token metadata at the canonical address', async (t) => {
    t.equal(devnet.chainId, 84532)
    t.equal(devnet.usdcAddress, '0x036CbD53842c5426634e7929541eC2318f3dCF7e')
    const read = <F extends 'name' | 'symbol' | 'version' | 'decimals'>(functionName: F) =>
      c.pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: usdcAbi, functionName })
    t.equal(await read('name'), 'USDC')
    t.equal(await read('symbol'), 'USDC')
    t.equal(await read('version'), '2')
    t.equal(await read('decimals'), 6)
    t.equal(await c.balanceOf(payer.address), DEMO_PAYER_USDC, 'demo payer starts with 1,000 USDC')
  })

  t.test('DOMAIN_SEPARATOR and eip712Domain match viem', async (t) => {
    const domain = { name: 'USDC', version: '2', chainId: 84532n, verifyingContract: DEVNET_USDC_ADDRESS } as const
    const expected = hashDomain({ domain, types: { EIP712Domain: EIP712_DOMAIN } })
    const onChain = await c.pub.readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: usdcAbi,
      functionName: 'DOMAIN_SEPARATOR',
    })
    t.equal(onChain, expected)
    const [fields, name, version, chainId, verifyingContract] = await c.pub.readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: usdcAbi,
      functionName: 'eip712Domain',
    })
    t.same([fields, name, version, chainId, verifyingContract], ['0x0f', 'USDC', '2', 84532n, DEVNET_USDC_ADDRESS])
  })

  t.test('transferWithAuthorization, v,r,s overload', async (t) => {
    const before = [await c.balanceOf(payer.address), await c.balanceOf(receiver)]
    const auth = await c.authorize(receiver, 1_500_000n)
    t.equal(await c.authorizationState(payer.address, auth.message.nonce), false)
    const receipt = await c.submitVrs(auth)
    t.equal(receipt.status, 'success')
    t.equal(await c.balanceOf(payer.address), before[0]! - 1_500_000n)
    t.equal(await c.balanceOf(receiver), before[1]! + 1_500_000n)
    t.equal(await c.authorizationState(payer.address, auth.message.nonce), true)
    const events = parseEventLogs({ abi: usdcAbi, logs: receipt.logs })
    t.same(
      events.map((e) => e.eventName),
      ['AuthorizationUsed', 'Transfer'],
    )
    await t.rejects(c.submitVrs(auth), /authorization is used or canceled/, 'replay reverts')
  })

  t.test('transferWithAuthorization, bytes overload', async (t) => {
    const before = await c.balanceOf(receiver)
    const auth = await c.authorize(receiver, 250_000n)
    t.equal((await c.submitBytes(auth)).status, 'success')
    t.equal(await c.balanceOf(receiver), before + 250_000n)
    t.equal(await c.authorizationState(payer.address, auth.message.nonce), true)
    await t.rejects(c.submitBytes(auth), /authorization is used or canceled/, 'replay reverts')
    await t.rejects(c.submitVrs(auth), /authorization is used or canceled/, 'replay through the other overload reverts')
  })

  t.test('validity window is enforced', async (t) => {
    const expired = await c.authorize(receiver, 1n, { validBefore: now() - 10n })
    await t.rejects(c.submitBytes(expired), /authorization is expired/)
    const early = await c.authorize(receiver, 1n, { validAfter: now() + 3600n })
    await t.rejects(c.submitBytes(early), /authorization is not yet valid/)
  })

  t.test('a tampered or foreign signature is rejected', async (t) => {
    const auth = await c.authorize(receiver, 1_000n)
    const tampered = { ...auth, message: { ...auth.message, value: 2_000n } }
    await t.rejects(c.submitBytes(tampered, auth.signature), /invalid signature/)
  })

  t.test('high-s signatures are rejected in both overloads', async (t) => {
    const auth = await c.authorize(receiver, 10_000n)
    const malleable = highS(auth.signature)
    t.not(malleable, auth.signature)
    await t.rejects(c.submitBytes(auth, malleable), /invalid signature/)
    await t.rejects(c.submitVrs(auth, malleable), /invalid signature/)
    t.equal(await c.authorizationState(payer.address, auth.message.nonce), false, 'nonce still unused')
    t.equal((await c.submitBytes(auth)).status, 'success', 'the low-s original still works')
  })

  t.test('cancelAuthorization (bytes and v,r,s) blocks a later transfer', async (t) => {
    for (const form of ['bytes', 'vrs'] as const) {
      const auth = await c.authorize(receiver, 5_000n)
      const cancelSig = await payer.signTypedData({
        domain: c.domain,
        types: { CancelAuthorization: eip3009Types.CancelAuthorization },
        primaryType: 'CancelAuthorization',
        message: { authorizer: payer.address, nonce: auth.message.nonce },
      })
      const { r, s, v } = parseSignature(cancelSig)
      const hash =
        form === 'bytes'
          ? await c.relayer.writeContract({
              address: DEVNET_USDC_ADDRESS,
              abi: usdcAbi,
              functionName: 'cancelAuthorization',
              args: [payer.address, auth.message.nonce, cancelSig],
            })
          : await c.relayer.writeContract({
              address: DEVNET_USDC_ADDRESS,
              abi: usdcAbi,
              functionName: 'cancelAuthorization',
              args: [payer.address, auth.message.nonce, Number(v), r, s],
            })
      const receipt = await c.pub.waitForTransactionReceipt({ hash })
      t.same(
        parseEventLogs({ abi: usdcAbi, logs: receipt.logs }).map((e) => e.eventName),
        ['AuthorizationCanceled'],
        `${form}: AuthorizationCanceled emitted`,
      )
      t.equal(await c.authorizationState(payer.address, auth.message.nonce), true)
      await t.rejects(
        c.submitBytes(auth),
        /authorization is used or canceled/,
        `${form}: transfer after cancel reverts`,
      )
    }
  })

  t.test('receiveWithAuthorization only from the payee', async (t) => {
    const nonce = randomNonce()
    const message = {
      from: payer.address,
      to: receiver,
      value: 7_000n,
      validAfter: 0n,
      validBefore: now() + 600n,
      nonce,
    }
    const signature = await payer.signTypedData({
      domain: c.domain,
      types: { ReceiveWithAuthorization: eip3009Types.ReceiveWithAuthorization },
      primaryType: 'ReceiveWithAuthorization',
      message,
    })
    const args = [
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      nonce,
      signature,
    ] as const
    await t.rejects(
      c.relayer.writeContract({
        address: DEVNET_USDC_ADDRESS,
        abi: usdcAbi,
        functionName: 'receiveWithAuthorization',
        args,
      }),
      /caller must be the payee/,
    )
    const before = await c.balanceOf(receiver)
    const hash = await c.payee.writeContract({
      address: DEVNET_USDC_ADDRESS,
      abi: usdcAbi,
      functionName: 'receiveWithAuthorization',
      args,
    })
    t.equal((await c.pub.waitForTransactionReceipt({ hash })).status, 'success')
    t.equal(await c.balanceOf(receiver), before + 7_000n)
  })

  t.test('Multicall3 aggregate3: one failing transfer does not sink the other', async (t) => {
    const good = await c.authorize(receiver, 100_000n)
    const bad = await c.authorize(receiver, 200_000n)
    const calls = [
      {
        target: DEVNET_USDC_ADDRESS,
        allowFailure: true,
        callData: encodeFunctionData({
          abi: usdcAbi,
          functionName: 'transferWithAuthorization',
          args: c.bytesArgs(good, good.signature),
        }),
      },
      {
        target: DEVNET_USDC_ADDRESS,
        allowFailure: true,
        // bad's message with good's signature: fails signature recovery
        callData: encodeFunctionData({
          abi: usdcAbi,
          functionName: 'transferWithAuthorization',
          args: c.bytesArgs(bad, good.signature),
        }),
      },
    ] as const
    const { result } = await c.pub.simulateContract({
      account: c.relayer.account,
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [calls],
    })
    t.same(
      result.map((r) => r.success),
      [true, false],
      'simulation reports per-call outcome',
    )
    const before = [await c.balanceOf(payer.address), await c.balanceOf(receiver)]
    const hash = await c.relayer.writeContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [calls],
    })
    t.equal((await c.pub.waitForTransactionReceipt({ hash })).status, 'success')
    t.equal(await c.balanceOf(payer.address), before[0]! - 100_000n)
    t.equal(await c.balanceOf(receiver), before[1]! + 100_000n)
    t.equal(await c.authorizationState(payer.address, good.message.nonce), true)
    t.equal(await c.authorizationState(payer.address, bad.message.nonce), false)

    // viem's own multicall finds Multicall3 through the devnet chain definition.
    const reads = await c.pub.multicall({
      contracts: [
        { address: DEVNET_USDC_ADDRESS, abi: usdcAbi, functionName: 'balanceOf', args: [receiver] },
        { address: MULTICALL3_ADDRESS, abi: multicall3Abi, functionName: 'getEthBalance', args: [receiver] },
      ],
      allowFailure: false,
    })
    t.equal(reads[0], before[1]! + 100_000n)
    t.ok(reads[1] > 0n)
  })

  t.test('Multicall3 aggregate3 without allowFailure reverts the batch', async (t) => {
    const auth = await c.authorize(receiver, 1n)
    const callData = encodeFunctionData({
      abi: usdcAbi,
      functionName: 'transferWithAuthorization',
      args: c.bytesArgs(auth, highS(auth.signature)),
    })
    await t.rejects(
      c.pub.simulateContract({
        account: c.relayer.account,
        address: MULTICALL3_ADDRESS,
        abi: multicall3Abi,
        functionName: 'aggregate3',
        args: [[{ target: DEVNET_USDC_ADDRESS, allowFailure: false, callData }]],
      }),
      /invalid signature/,
      "the callee's revert reason comes through",
    )
  })

  t.test('mintUsdc and setupDevnetContracts are safe to repeat', async (t) => {
    const fresh = privateKeyToAccount(('0x' + '11'.repeat(32)) as Hex).address
    await Promise.all([mintUsdc(devnet.rpcUrl, fresh, 1n), mintUsdc(devnet.rpcUrl, fresh, 2n)])
    t.equal(await c.balanceOf(fresh), 3n, 'concurrent mints both land')
    await setupDevnetContracts(devnet.rpcUrl)
    await setupDevnetContracts(devnet.rpcUrl)
    t.equal(await c.balanceOf(payer.address), DEMO_PAYER_USDC, 'demo payer topped up to exactly 1,000 USDC')
  })
})

t.test('the domain follows chain id and address (code placed with setCode)', async (t) => {
  const devnet = await withDevnet(t, { chainId: 31337 })
  const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl) })
  const domain = { name: 'USDC', version: '2', chainId: 31337n, verifyingContract: DEVNET_USDC_ADDRESS } as const
  t.equal(
    await pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: usdcAbi, functionName: 'DOMAIN_SEPARATOR' }),
    hashDomain({ domain, types: { EIP712Domain: EIP712_DOMAIN } }),
  )
})

/** Whether a process id is alive (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('two devnets at once, and stop() leaves no anvil behind', async (t) => {
  const [a, b] = await Promise.all([startDevnet({ port: 0 }), startDevnet({ port: 0 })])
  t.teardown(() => Promise.all([a.stop(), b.stop()]))
  t.not(a.rpcUrl, b.rpcUrl)
  const blockA = await createPublicClient({ transport: http(a.rpcUrl) }).getBlockNumber()
  const blockB = await createPublicClient({ transport: http(b.rpcUrl) }).getBlockNumber()
  t.ok(blockA >= 0n && blockB >= 0n, 'both answer')
  t.ok(a.pid && alive(a.pid) && b.pid && alive(b.pid), 'both anvil processes run')
  await Promise.all([a.stop(), b.stop()])
  t.notOk(alive(a.pid!), 'first anvil gone')
  t.notOk(alive(b.pid!), 'second anvil gone')
  await a.stop() // idempotent
})

t.test('state survives a restart with stateFile', async (t) => {
  const dir = t.testdir({})
  const stateFile = join(dir, 'state.json')
  const holder = privateKeyToAccount(('0x' + '22'.repeat(32)) as Hex).address
  const first = await startDevnet({ stateFile })
  await mintUsdc(first.rpcUrl, holder, 42n)
  await first.stop()
  t.ok(existsSync(stateFile) && readFileSync(stateFile, 'utf8').length > 0, 'state written at stop')
  const second = await withDevnet(t, { stateFile })
  const pub = createPublicClient({ transport: http(second.rpcUrl) })
  t.equal(
    await pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: usdcAbi, functionName: 'balanceOf', args: [holder] }),
    42n,
  )
})

t.test('a failed start says why, with anvil stderr', async (t) => {
  const running = await withDevnet(t)
  const port = Number(new URL(running.rpcUrl).port)
  const error = await startDevnet({ port }).then(
    () => undefined,
    (e: Error) => e,
  )
  t.match(error?.message, /anvil exited before it was ready/)
  t.match(error?.message, /anvil stderr:\n.*\S/, 'includes what anvil printed')
})
