import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { decryptSecret, encryptSecret } from '../../secrets/wallet-crypto.js'

/** What binds a wallet ciphertext to its row; rotation must use the same string. */
export function walletAad(kind: 'agent' | 'funding', address: string): string {
  return `${kind}-wallet:${address.toLowerCase()}`
}

/** A fresh EOA whose private key leaves this function only encrypted. */
export function createCustodialWallet(
  masterKey: Buffer,
  kind: 'agent' | 'funding',
): { address: `0x${string}`; encryptedKey: string } {
  const privateKey = generatePrivateKey()
  const { address } = privateKeyToAccount(privateKey)
  return { address, encryptedKey: encryptSecret(masterKey, privateKey, walletAad(kind, address)) }
}

/** The signing account of a custodial wallet (for top-ups and agent payments; never serialise it). */
export function custodialAccount(
  masterKeys: readonly Buffer[],
  kind: 'agent' | 'funding',
  address: string,
  encryptedKey: string,
): LocalAccount {
  const account = privateKeyToAccount(
    decryptSecret(masterKeys, encryptedKey, walletAad(kind, address)) as `0x${string}`,
  )
  if (account.address.toLowerCase() !== address.toLowerCase())
    throw new Error('custodial key does not match its address')
  return account
}
