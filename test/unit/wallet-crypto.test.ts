import { randomBytes } from 'node:crypto'
import t from 'tap'
import { createCustodialWallet, custodialAccount } from '../../src/services/wallets/custodial-wallet.js'
import {
  decryptSecret,
  encryptSecret,
  envelopeKeyId,
  masterKeyId,
  reencryptSecret,
} from '../../src/secrets/wallet-crypto.js'
import { hashSecret, isWellFormed, newSecret, randomBase62 } from '../../src/secrets/secret-token.js'
import { hashPassword, verifyPassword } from '../../src/services/accounts/password.js'
import { isPrivateAddress } from '../../src/net/ssrf-guard.js'

const k1 = randomBytes(32)
const k2 = randomBytes(32)

t.test('AES-256-GCM envelope round trip, bound to its AAD and key', async (t) => {
  const box = encryptSecret(k1, 'secret value', 'agent-wallet:0xabc')
  t.match(box, /^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/)
  t.notOk(box.includes('secret value'))
  t.not(encryptSecret(k1, 'secret value', 'x'), encryptSecret(k1, 'secret value', 'x'), 'random IV each time')
  t.equal(decryptSecret([k1], box, 'agent-wallet:0xabc'), 'secret value')
  t.throws(() => decryptSecret([k1], box, 'agent-wallet:0xdef'), 'another AAD fails')
  t.throws(() => decryptSecret([k2], box, 'agent-wallet:0xabc'), /no master key/)
  const tampered = box.slice(0, -2) + (box.endsWith('A') ? 'B' : 'A') + box.slice(-1)
  t.throws(() => decryptSecret([k1], tampered, 'agent-wallet:0xabc'), 'tampering fails')
})

t.test('rotation by re-encryption', async (t) => {
  const box = encryptSecret(k1, 'pk', 'a')
  const rotated = reencryptSecret([k1], k2, box, 'a')
  t.equal(envelopeKeyId(rotated), masterKeyId(k2))
  t.equal(decryptSecret([k2], rotated, 'a'), 'pk')
  t.equal(reencryptSecret([k1], k2, rotated, 'a'), rotated, 'already rotated: unchanged')
  t.equal(decryptSecret([k2, k1], box, 'a'), 'pk', 'during a rotation both keys decrypt')
})

t.test('custodial wallets', async (t) => {
  const w = createCustodialWallet(k1, 'agent')
  t.equal(custodialAccount([k1], 'agent', w.address, w.encryptedKey).address, w.address)
  t.throws(() => custodialAccount([k1], 'funding', w.address, w.encryptedKey), 'kind is part of the binding')
})

t.test('secrets and passwords', async (t) => {
  t.equal(randomBase62().length, 43)
  const s = newSecret('sk_test_')
  t.ok(isWellFormed(s.secret, 'sk_test_'))
  t.notOk(isWellFormed(s.secret, 'sk_live_'))
  t.equal(s.hash, hashSecret(s.secret))
  t.equal(s.prefix, s.secret.slice(0, 12))
  const h = await hashPassword('hunter2hunter2')
  t.ok(await verifyPassword('hunter2hunter2', h))
  t.notOk(await verifyPassword('hunter2hunter3', h))
})

t.test('SSRF guard ranges', async (t) => {
  for (const ip of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '192.0.2.2',
    '198.51.100.7',
    '203.0.113.9',
    '::ffff:192.0.2.2',
    '2001:db8::1',
    // IPv6 forms carrying or relaying to an IPv4 address (IPv4-compatible, 6to4, Teredo), and site-local
    '::7f00:1',
    '::127.0.0.1',
    '::a00:1',
    '2002:7f00:1::1',
    '2002:a00:1::',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    'fec0::1',
  ])
    t.ok(isPrivateAddress(ip), ip)
  for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001::1'])
    t.notOk(isPrivateAddress(ip), ip)
})
