/**
 * Where the dev chain installs DeferredPaymentEscrow (src/chain/devnet.ts), and so the sandbox
 * default of DEFERRED_ESCROW_ADDRESS (src/config.ts). It has no canonical address: the reference
 * deployment is a different contract, so ours sits at one that reads as ours, "defe55ed ... 402".
 */
export const DEVNET_DEFERRED_ESCROW_ADDRESS = '0xdEfE55ed00000000000000000000000000000402' as const
