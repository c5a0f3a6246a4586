import { buildChallenge, type ChallengeInput } from '../../../src/x402/challenge.js'

export const BASE_SEPOLIA = {
  chainId: 84532,
  network: 'base-sepolia',
  caip2: 'eip155:84532',
  usdc: { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2' },
} as const satisfies ChallengeInput['chain']

export const PAY_TO = '0x209693bc6afc0c5328ba36faf03c514ef312287c'
export const PAY_TO_CHECKSUM = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'

export const WEATHER_INPUT = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'city name' },
    units: { type: 'string', enum: ['metric', 'imperial'] },
  },
  required: ['city'],
} as const

export function sampleInput(overrides: Partial<ChallengeInput> = {}): ChallengeInput {
  return {
    resourceUrl: 'http://127.0.0.1:4021/acme/weather/current',
    description: 'Current weather for a city',
    mimeType: 'application/json',
    payTo: PAY_TO,
    amount: 10_000n,
    maxTimeoutSeconds: 60,
    chain: BASE_SEPOLIA,
    method: 'GET',
    inputSchema: { ...WEATHER_INPUT },
    outputDescription: { type: 'object', properties: { tempC: { type: 'number' } } },
    ...overrides,
  }
}

export function sampleChallenge(overrides: Partial<ChallengeInput> = {}) {
  return buildChallenge(sampleInput(overrides))
}
