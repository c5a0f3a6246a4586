import t from 'tap'
import type { Address } from 'viem'
import { facilitatorFor } from '../../../src/schemes/upto/facilitator.js'

const relayers: Address[] = [
  '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
  '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
  '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
]

t.test(
  'each endpoint names one relayer as its upto facilitator, the same every time, spread over the relayers',
  async (t) => {
    const urls = Array.from({ length: 60 }, (_, i) => `https://tollgate.example/ns/svc/endpoint-${i}`)
    const picks = urls.map((u) => facilitatorFor(u, relayers))
    t.same(
      urls.map((u) => facilitatorFor(u, relayers)),
      picks,
      'stable: the challenge is built once, and again after a restart',
    )
    t.ok(
      picks.every((p) => relayers.includes(p)),
      'always one of ours',
    )
    const counts = relayers.map((r) => picks.filter((p) => p === r).length)
    t.ok(
      counts.every((c) => c >= 10),
      `every relayer gets a share of 60 endpoints (${counts.join(', ')})`,
    )
    t.equal(facilitatorFor(urls[0]!, [relayers[1]!]), relayers[1], 'one relayer: always it')
  },
)
