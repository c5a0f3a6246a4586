/**
 * The x402 `batch-settlement` scheme's canonical contract addresses (the same on every EVM chain;
 * the official `@x402/evm` constants, checked equal in test/integration/batch-settlement). On Base and
 * Base Sepolia the audited canonical deployment lives there; the embedded dev chain installs
 * Tollgate's own build of the contracts at the same addresses (src/chain/devnet.ts).
 */
export const BATCH_SETTLEMENT_ADDRESS = '0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003' as const
export const ERC3009_DEPOSIT_COLLECTOR_ADDRESS = '0x4020806089470a89826cB9fB1f4059150b550004' as const
export const PERMIT2_DEPOSIT_COLLECTOR_ADDRESS = '0x4020425FAf3B746C082C2f942b4E5159887B0005' as const

/** The contract's EIP-712 domain name and version (chain id and verifying contract complete it). */
export const BATCH_SETTLEMENT_DOMAIN_NAME = 'x402 Batch Settlement'
export const BATCH_SETTLEMENT_DOMAIN_VERSION = '1'
