import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  http,
  parseEther,
  parseUnits,
  type Abi,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Devnet } from '../../src/chain/devnet.js'
import artifacts from '../fixtures/contracts/artifacts.json' with { type: 'json' }

const { abi, bytecode } = artifacts.contracts.AavePoolStandIn as { abi: Abi; bytecode: Hex }

export interface StandInAccount {
  collateralUsd: number
  debtUsd: number
  availableUsd: number
  /** basis points, e.g. 8250 = 82.5 % */
  liquidationThresholdBps?: number
  ltvBps?: number
  healthFactor?: number
}

export interface AavePoolStandIn {
  address: Address
  /** What getUserAccountData returns for `user` (USD with 8 decimals, health factor with 18). */
  setAccount(user: Address, a: StandInAccount): Promise<void>
  /** Emits the real LiquidationCall event with `user` as the liquidated wallet. */
  liquidate(user: Address, o?: { debtToCover?: bigint; collateral?: bigint; liquidator?: Address }): Promise<Hex>
  /** Moves the chain's clock forward and mines a block. */
  advanceDays(days: number): Promise<void>
}

/**
 * Deploys the test stand-in of the Aave v3 Pool (test/fixtures/contracts/AavePoolStandIn.sol)
 * from a fresh funded account, so it never races the devnet's own accounts for nonces.
 */
export async function deployAavePoolStandIn(devnet: Devnet): Promise<AavePoolStandIn> {
  const account = privateKeyToAccount(generatePrivateKey())
  const transport = http(devnet.rpcUrl)
  const test = createTestClient({ chain: devnet.chain, mode: 'anvil', transport })
  await test.setBalance({ address: account.address, value: parseEther('10') })
  const wallet = createWalletClient({ account, chain: devnet.chain, transport })
  const pub = createPublicClient({ chain: devnet.chain, transport })
  const deployed = await pub.waitForTransactionReceipt({ hash: await wallet.deployContract({ abi, bytecode }) })
  const address = deployed.contractAddress!
  const send = async (functionName: string, args: unknown[]) => {
    const hash = await wallet.writeContract({ address, abi, functionName, args })
    const receipt = await pub.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error(`${functionName} reverted`)
    return hash
  }
  return {
    address,
    async setAccount(user, a) {
      await send('setUserAccountData', [
        user,
        parseUnits(String(a.collateralUsd), 8),
        parseUnits(String(a.debtUsd), 8),
        parseUnits(String(a.availableUsd), 8),
        BigInt(a.liquidationThresholdBps ?? 8250),
        BigInt(a.ltvBps ?? 8000),
        parseUnits(String(a.healthFactor ?? 0), 18),
      ])
    },
    liquidate: (user, o = {}) =>
      send('emitLiquidation', [
        devnet.usdcAddress,
        '0x4200000000000000000000000000000000000006',
        user,
        o.debtToCover ?? 1_000_000n,
        o.collateral ?? 500_000_000_000_000n,
        o.liquidator ?? account.address,
        false,
      ]),
    async advanceDays(days) {
      await test.increaseTime({ seconds: Math.round(days * 86_400) })
      await test.mine({ blocks: 1 })
    },
  }
}
