import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_DIM = 4_096
const MAX_ITEMS = 10_000
/** items × dimension: bounds the work (and the JSON body) of one call. */
const MAX_VALUES = 2_000_000

interface Item {
  id: string | number
  vector: number[]
  metadata?: Record<string, unknown>
}

interface Input {
  query: number[]
  items: Item[]
  metric: 'cosine' | 'dot' | 'euclidean'
  topK: number
  threshold?: number
}

export default defineHandler<Input>({
  slug: 'vector-similarity-search',
  description:
    'Rank supplied vectors against a query vector by cosine similarity, dot product or Euclidean distance and return the top k ids with scores (exact brute-force search, no index to keep).',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['query', 'items'],
    properties: {
      query: {
        type: 'array',
        items: { type: 'number' },
        minItems: 1,
        maxItems: MAX_DIM,
        description: `Query vector, 1-${MAX_DIM} numbers.`,
      },
      items: {
        type: 'array',
        maxItems: MAX_ITEMS,
        description: `Candidates (at most ${MAX_ITEMS}, and at most ${MAX_VALUES} numbers in all: 413 beyond), each with the query's dimension.`,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['id', 'vector'],
          properties: {
            id: { type: ['string', 'number'], maxLength: 200, description: 'Your identifier, echoed back.' },
            vector: {
              type: 'array',
              items: { type: 'number' },
              maxItems: MAX_DIM,
              description: 'Embedding, same length as query.',
            },
            metadata: { type: 'object', description: 'Optional object echoed back with the result.' },
          },
        },
      },
      metric: {
        type: 'string',
        enum: ['cosine', 'dot', 'euclidean'],
        default: 'cosine',
        description: 'cosine and dot: higher is closer; euclidean: the score is the distance, lower is closer.',
      },
      topK: {
        type: 'integer',
        minimum: 1,
        maximum: 1_000,
        default: 10,
        description: 'How many results to return (1-1000).',
      },
      threshold: {
        type: 'number',
        description: 'Optional cut-off: minimum score for cosine/dot, maximum distance for euclidean.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description: '{ metric, dimension, results: [{ rank, id, score, metadata? }] } best first; ties keep input order',
    schema: {
      type: 'object',
      properties: {
        metric: { type: 'string' },
        dimension: { type: 'number' },
        results: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              rank: { type: 'number' },
              id: { type: ['number', 'string'] },
              score: { type: 'number' },
              metadata: { type: 'object', description: "the item's own metadata, as given" },
            },
            required: ['rank', 'id', 'score'],
          },
        },
      },
      required: ['metric', 'dimension', 'results'],
    },
    example: {
      metric: 'cosine',
      dimension: 3,
      results: [
        { rank: 1, id: 'a', score: 1 },
        { rank: 2, id: 'b', score: 0.7071067811865476 },
      ],
    },
  },
  example: {
    query: [1, 0, 0],
    items: [
      { id: 'a', vector: [1, 0, 0] },
      { id: 'b', vector: [0.7, 0.7, 0] },
      { id: 'c', vector: [0, 0, 1] },
    ],
    metric: 'cosine',
    topK: 2,
  },
  run(input) {
    const dim = input.query.length
    if (dim * input.items.length > MAX_VALUES) {
      throw new HandlerInputError(
        'items',
        `items hold ${dim * input.items.length} numbers; the limit is ${MAX_VALUES}`,
        413,
      )
    }
    input.items.forEach((item, i) => {
      if (item.vector.length !== dim)
        throw new HandlerInputError(
          `items.${i}.vector`,
          `items.${i}.vector has ${item.vector.length} dimensions; query has ${dim}`,
        )
    })

    const queryNorm = norm(input.query)
    if (input.metric === 'cosine' && queryNorm === 0)
      throw new HandlerInputError('query', 'query is a zero vector: cosine similarity is undefined')
    const scored = input.items.map((item, i) => {
      const v = item.vector
      let score: number
      if (input.metric === 'euclidean') {
        let sum = 0
        for (let k = 0; k < dim; k++) sum += (v[k] - input.query[k]) ** 2
        score = Math.sqrt(sum)
      } else {
        const d = dot(input.query, v)
        if (input.metric === 'dot') score = d
        else {
          const n = norm(v)
          if (n === 0)
            throw new HandlerInputError(
              `items.${i}.vector`,
              `items.${i}.vector is a zero vector: cosine similarity is undefined`,
            )
          score = d / (queryNorm * n)
        }
      }
      return { index: i, score }
    })

    const lowerIsBetter = input.metric === 'euclidean'
    const kept =
      input.threshold === undefined
        ? scored
        : scored.filter((s) => (lowerIsBetter ? s.score <= input.threshold! : s.score >= input.threshold!))
    kept.sort((a, b) => (lowerIsBetter ? a.score - b.score : b.score - a.score) || a.index - b.index)
    const results = kept.slice(0, input.topK).map((s, r) => {
      const item = input.items[s.index]
      return { rank: r + 1, id: item.id, score: s.score, ...(item.metadata ? { metadata: item.metadata } : {}) }
    })
    return { body: { metric: input.metric, dimension: dim, results } }
  },
})

function dot(a: number[], b: number[]): number {
  let s = 0
  for (let i = 0; i < a.length; i++) s += a[i] * b[i]
  return s
}

function norm(a: number[]): number {
  return Math.sqrt(dot(a, a))
}
