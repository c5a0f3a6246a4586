/**
 * Permit2 and our x402 upto proxy on the dev chain (anvil), where the devnet installs them at their
 * canonical addresses: Permit2's domain separator is the canonical one, a payment signed by the
 * official `@x402/evm` upto client settles the actual amount (≤ permitted) through the proxy,
 * directly and through Multicall3 from the facilitator, and every wrong field is refused.
 */
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { x402UptoPermit2ProxyABI } from '@x402/evm'
import t from 'tap'
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  http,
  maxUint256,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_USDC_ADDRESS, mintUsdc, permit2DomainSeparator } from '../../../src/chain/devnet.js'
import { multicall3Abi, MULTICALL3_ADDRESS } from '../../../src/chain/multicall3-abi.js'
import { PERMIT2_ADDRESS, permit2Abi, UPTO_PROXY_ADDRESS } from '../../../src/chain/permit2.js'
import artifacts from '../../../src/chain/contracts/artifacts.json' with { type: 'json' }
import { withDevnet } from '../../helpers/devnet.js'

t.test('Permit2 and the upto proxy on the devnet', async (t) => {
  const devnet = await withDevnet(t)
  const pub = createPublicClient({ chain: devnet.chain, transport: http(devnet.rpcUrl), pollingInterval: 50 })
  const facilitator = privateKeyToAccount(devnet.accounts.relayer.privateKey)
  const other = privateKeyToAccount(devnet.accounts.relayers[1]!.privateKey)
  const seller = devnet.accounts.receiver.address
  const wallet = (account: typeof facilitator) =>
    createWalletClient({ chain: devnet.chain, transport: http(devnet.rpcUrl), account })

  t.equal(
    await pub.readContract({ address: PERMIT2_ADDRESS, abi: permit2Abi, functionName: 'DOMAIN_SEPARATOR' }),
    permit2DomainSeparator(devnet.chainId),
    "Permit2's DOMAIN_SEPARATOR() is the canonical-address one",
  )

  /** a funded buyer that approved Permit2 */
  async function buyer() {
    const account = privateKeyToAccount(generatePrivateKey())
    await mintUsdc(devnet.rpcUrl, account.address, 10_000_000n)
    const w = wallet(devnet.accounts.demoPayer as never)
    await pub.waitForTransactionReceipt({
      hash: await w.sendTransaction({
        account: devnet.accounts.demoPayer.address,
        to: account.address,
        value: 10n ** 17n,
      }),
    })
    await pub.waitForTransactionReceipt({
      hash: await wallet(account as never).writeContract({
        address: DEVNET_USDC_ADDRESS,
        abi: erc20Abi,
        functionName: 'approve',
        args: [PERMIT2_ADDRESS, maxUint256],
      }),
    })
    return account
  }

  /** a payload from the official client for `amount` to the seller */
  async function signed(account: ReturnType<typeof privateKeyToAccount>, amount: bigint, extra = {}) {
    const client = new UptoEvmScheme(account as never)
    const r = await client.createPaymentPayload(2, {
      scheme: 'upto',
      network: `eip155:${devnet.chainId}`,
      amount: amount.toString(),
      asset: DEVNET_USDC_ADDRESS,
      payTo: seller,
      maxTimeoutSeconds: 300,
      extra: { facilitatorAddress: facilitator.address, name: 'USDC', version: '2', ...extra },
    } as never)
    return r.payload as {
      signature: Hex
      permit2Authorization: {
        from: Address
        permitted: { token: Address; amount: string }
        nonce: string
        deadline: string
        witness: { to: Address; facilitator: Address; validAfter: string }
      }
    }
  }

  type Payload = Awaited<ReturnType<typeof signed>>
  const args = (p: Payload, amount: bigint, edit: (a: ReturnType<typeof plain>) => void = () => {}) => {
    const a = plain(p)
    edit(a)
    return [a.permit, amount, a.owner, a.witness, p.signature] as const
  }
  const plain = (p: Payload) => ({
    permit: {
      permitted: {
        token: p.permit2Authorization.permitted.token,
        amount: BigInt(p.permit2Authorization.permitted.amount),
      },
      nonce: BigInt(p.permit2Authorization.nonce),
      deadline: BigInt(p.permit2Authorization.deadline),
    },
    owner: p.permit2Authorization.from,
    witness: {
      to: p.permit2Authorization.witness.to,
      facilitator: p.permit2Authorization.witness.facilitator,
      validAfter: BigInt(p.permit2Authorization.witness.validAfter),
    },
  })
  const balance = (a: Address) =>
    pub.readContract({ address: DEVNET_USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [a] })

  async function refusal(call: () => Promise<unknown>): Promise<string> {
    try {
      await call()
    } catch (err) {
      const revert = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : null
      if (revert instanceof ContractFunctionRevertedError)
        return revert.data?.errorName ?? revert.signature ?? 'reverted'
      return (err as Error).message.slice(0, 200)
    }
    return 'no revert'
  }
  // the proxy's ABI with Permit2's errors, so that its reverts read by name
  const abi = [
    ...x402UptoPermit2ProxyABI,
    ...(artifacts.contracts.Permit2.abi as { type: string }[]).filter((e) => e.type === 'error'),
  ] as unknown as typeof x402UptoPermit2ProxyABI
  const simulate = (from: Address, a: ReturnType<typeof args>) =>
    pub.simulateContract({
      account: from,
      address: UPTO_PROXY_ADDRESS,
      abi,
      functionName: 'settle',
      args: a as never,
    })

  t.test('settles the actual amount, at most the permitted one', async (t) => {
    const b = await buyer()
    const p = await signed(b, 50_000n)
    const before = await balance(seller)
    const hash = await wallet(facilitator).writeContract({
      address: UPTO_PROXY_ADDRESS,
      abi: x402UptoPermit2ProxyABI,
      functionName: 'settle',
      args: args(p, 12_345n) as never,
    })
    t.equal((await pub.waitForTransactionReceipt({ hash })).status, 'success')
    t.equal((await balance(seller)) - before, 12_345n, 'the seller got the actual amount')
    t.equal(await balance(b.address), 10_000_000n - 12_345n, 'the buyer paid only that')
    t.equal(await refusal(() => simulate(facilitator.address, args(p, 1n))), 'InvalidNonce', 'the nonce is spent')
  })

  t.test('the facilitator settles through Multicall3 too; nobody else does', async (t) => {
    const b = await buyer()
    const p = await signed(b, 40_000n)
    const callData = encodeFunctionData({
      abi: x402UptoPermit2ProxyABI,
      functionName: 'settle',
      args: args(p, 40_000n) as never,
    })
    const calls = [{ target: UPTO_PROXY_ADDRESS, allowFailure: false, callData }] as const
    t.match(
      await refusal(() =>
        pub.simulateContract({
          account: other.address,
          address: MULTICALL3_ADDRESS,
          abi: multicall3Abi,
          functionName: 'aggregate3',
          args: [calls],
        }),
      ),
      /^(?!no revert)/,
      'another sender through Multicall3 is refused',
    )
    t.equal(await refusal(() => simulate(other.address, args(p, 1n))), 'UnauthorizedFacilitator')
    const before = await balance(seller)
    const hash = await wallet(facilitator).writeContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [calls],
    })
    t.equal((await pub.waitForTransactionReceipt({ hash })).status, 'success')
    t.equal((await balance(seller)) - before, 40_000n)
  })

  t.test('refuses a wrong amount, witness, spender, token or deadline', async (t) => {
    const b = await buyer()
    const p = await signed(b, 30_000n)
    const f = facilitator.address
    t.equal(await refusal(() => simulate(f, args(p, 30_001n))), 'AmountExceedsPermitted', 'over the permitted amount')
    t.equal(
      await refusal(() =>
        simulate(
          f,
          args(p, 1n, (a) => (a.witness.to = other.address)),
        ),
      ),
      'InvalidSigner',
      'another recipient breaks the signature',
    )
    t.equal(
      await refusal(() =>
        simulate(
          f,
          args(p, 1n, (a) => (a.witness.validAfter = 1n)),
        ),
      ),
      'InvalidSigner',
      'another validAfter breaks the signature',
    )
    t.equal(
      await refusal(() =>
        simulate(
          f,
          args(p, 1n, (a) => (a.permit.permitted.token = MULTICALL3_ADDRESS)),
        ),
      ),
      'InvalidSigner',
      'another token breaks the signature',
    )
    t.equal(
      await refusal(() =>
        simulate(
          f,
          args(p, 1n, (a) => (a.permit.permitted.amount = 60_000n)),
        ),
      ),
      'InvalidSigner',
      'a larger permitted amount breaks the signature',
    )
    t.equal(
      await refusal(() =>
        simulate(
          f,
          args(p, 1n, (a) => (a.permit.deadline = a.permit.deadline + 1n)),
        ),
      ),
      'InvalidSigner',
      'another deadline breaks the signature',
    )
    const late = await signed(b, 30_000n)
    late.permit2Authorization.deadline = '1'
    t.equal(await refusal(() => simulate(f, args(late, 1n))), 'SignatureExpired', 'a passed deadline is refused')
    // a signature for another spender (the exact proxy's address): Permit2 binds msg.sender as spender
    const client = privateKeyToAccount(generatePrivateKey())
    const foreign = await client.signTypedData({
      domain: { name: 'Permit2', chainId: devnet.chainId, verifyingContract: PERMIT2_ADDRESS },
      types: (await import('@x402/evm')).uptoPermit2WitnessTypes,
      primaryType: 'PermitWitnessTransferFrom',
      message: {
        ...plain(p).permit,
        spender: '0x402085c248EeA27D92E8b30b2C58ed07f9E20001',
        witness: plain(p).witness,
      },
    })
    t.equal(
      await refusal(() => simulate(f, [...args(p, 1n)].slice(0, 4).concat(foreign) as never)),
      'InvalidSigner',
      'a signature for another spender is refused',
    )
    t.equal(await balance(b.address), 10_000_000n, 'nothing moved')
  })
})
