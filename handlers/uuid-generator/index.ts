import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_COUNT = 100
const NAMESPACES = {
  dns: '6ba7b810-9dad-11d1-80b4-00c04fd430c8',
  url: '6ba7b811-9dad-11d1-80b4-00c04fd430c8',
  oid: '6ba7b812-9dad-11d1-80b4-00c04fd430c8',
  x500: '6ba7b814-9dad-11d1-80b4-00c04fd430c8',
} as const

interface Input {
  version: 'v1' | 'v3' | 'v4' | 'v5' | 'v6' | 'v7'
  count: number
  name?: string
  namespace: string
  uppercase: boolean
  format: 'standard' | 'compact' | 'urn'
}

export default defineHandler<Input>({
  slug: 'uuid-generator',
  description:
    'Generate RFC 9562 UUIDs: random v4, time-ordered v7 (sortable, monotonic within a batch), v1/v6 time-based, or name-based v3/v5 from a namespace and name; up to 100 at once.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      version: {
        type: 'string',
        enum: ['v1', 'v3', 'v4', 'v5', 'v6', 'v7'],
        default: 'v4',
        description:
          'UUID version. v7 is the recommended time-ordered id; v3 (MD5) and v5 (SHA-1) are deterministic from namespace + name.',
      },
      count: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_COUNT,
        default: 1,
        description: `How many to generate (1-${MAX_COUNT}); name-based versions give one.`,
      },
      name: {
        type: 'string',
        maxLength: 10_000,
        description: 'v3/v5 only (required there): the name to hash, at most 10,000 characters.',
      },
      namespace: {
        type: 'string',
        maxLength: 36,
        default: 'dns',
        description: 'v3/v5 only: dns, url, oid, x500 (the RFC 9562 namespaces) or any UUID.',
      },
      uppercase: { type: 'boolean', default: false, description: 'Upper-case hex digits.' },
      format: {
        type: 'string',
        enum: ['standard', 'compact', 'urn'],
        default: 'standard',
        description: 'standard 8-4-4-4-12, compact (32 hex digits, no hyphens), or urn:uuid:... form.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: '{ version, count, uuids: string[] }',
    schema: {
      type: 'object',
      properties: {
        version: { type: 'string' },
        count: { type: 'number' },
        uuids: { type: 'array', items: { type: 'string' } },
      },
      required: ['version', 'count', 'uuids'],
    },
    example: {
      version: 'v7',
      count: 3,
      uuids: [
        '01a22237-d8f6-77e5-bbfd-de4ead8f7726',
        '01a22237-d8f6-77e5-bbfd-e32ef787d0d8',
        '01a22237-d8f6-77e5-bbfd-e5a78bbfe7d5',
      ],
    },
  },
  example: { version: 'v7', count: 3, namespace: 'dns', uppercase: false, format: 'standard' },
  async run(input) {
    const uuid = await import('uuid')
    let ids: string[]
    if (input.version === 'v3' || input.version === 'v5') {
      if (input.name === undefined) throw new HandlerInputError('name', `name is required for ${input.version}`)
      if (input.count !== 1) throw new HandlerInputError('count', `${input.version} is deterministic: count must be 1`)
      const ns = NAMESPACES[input.namespace as keyof typeof NAMESPACES] ?? input.namespace
      if (!uuid.validate(ns))
        throw new HandlerInputError('namespace', 'namespace must be dns, url, oid, x500 or a UUID')
      ids = [input.version === 'v3' ? uuid.v3(input.name, ns) : uuid.v5(input.name, ns)]
    } else {
      const make: () => string = { v1: () => uuid.v1(), v4: () => uuid.v4(), v6: () => uuid.v6(), v7: () => uuid.v7() }[
        input.version
      ]
      // uuid keeps per-process state for v1/v6/v7, so ids made in one loop are strictly increasing.
      ids = Array.from({ length: input.count }, () => make())
    }
    const uuids = ids.map((id) => {
      const cased = input.uppercase ? id.toUpperCase() : id
      return input.format === 'compact' ? cased.replace(/-/g, '') : input.format === 'urn' ? `urn:uuid:${cased}` : cased
    })
    return { body: { version: input.version, count: uuids.length, uuids } }
  },
})
