import { randomBytes } from 'node:crypto'
import t from 'tap'
import { getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { randomNonce, signTransferAuth } from '../../../src/chain/sign-transfer-auth.js'
import { eip3009Types } from '../../../src/chain/usdc-abi.js'

const types = { TransferWithAuthorization: eip3009Types.TransferWithAuthorization }

t.test('native signature equals viem signTypedData on random inputs', async (t) => {
  for (let i = 0; i < 50; i++) {
    const pk = generatePrivateKey()
    const account = privateKeyToAccount(pk)
    const domain = {
      name: i % 2 ? 'USDC' : 'USD Coin',
      version: i % 3 ? '2' : '1',
      chainId: [84532, 8453, 31337][i % 3]!,
      verifyingContract: getAddress(`0x${randomBytes(20).toString('hex')}`),
    }
    const message = {
      from: account.address,
      to: getAddress(`0x${randomBytes(20).toString('hex')}`),
      value: i === 0 ? (1n << 200n) + 7n : BigInt(`0x${randomBytes(6).toString('hex')}`),
      validAfter: BigInt(1_700_000_000 + i),
      validBefore: BigInt(1_700_000_600 + i),
      nonce: randomNonce(),
    }
    const ours = signTransferAuth(Buffer.from(pk.slice(2), 'hex'), domain, {
      ...message,
      from: message.from.toLowerCase(),
      to: message.to.toLowerCase(),
    })
    const viem = await account.signTypedData({
      domain,
      types,
      primaryType: 'TransferWithAuthorization',
      message: { ...message, nonce: message.nonce },
    })
    if (ours !== viem) {
      t.equal(ours, viem, `case ${i}`)
      return
    }
  }
  t.pass('50 random cases agree (addresses in any case, values past 64 bits)')
})

t.test('nonces are 32 random bytes and never repeat', async (t) => {
  const seen = new Set<string>()
  for (let i = 0; i < 2000; i++) seen.add(randomNonce())
  t.equal(seen.size, 2000)
  for (const n of seen) if (!/^0x[0-9a-f]{64}$/.test(n)) t.fail(n)
})
