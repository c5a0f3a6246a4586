import { chatJson, LLM_PROVIDERS, llmReportSchema } from '../_shared/llm-chat.js'
import { defineHandler, HandlerInputError, HandlerUpstreamError } from '../../src/pool/handler-contract.js'

const MAX_TEXT = 20_000
const MAX_LABELS = 50

/** Labels used when the buyer gives none: broad topics of news and web content. */
export const DEFAULT_TOPICS = [
  'business',
  'finance',
  'technology',
  'science',
  'health',
  'politics',
  'sports',
  'entertainment',
  'education',
  'travel',
  'food',
  'environment',
  'law',
  'cryptocurrency',
] as const

interface Input {
  text: string
  labels?: string[]
  multiLabel: boolean
  threshold: number
}

/**
 * Zero-shot classification by a language model (an OpenAI-compatible Chat Completions API). The
 * model scores every label; the answer must score exactly the given labels, each once, or it is
 * refused (502). Scores are the model's own judgement, not calibrated probabilities.
 */
export default defineHandler<Input>({
  slug: 'text-classifier',
  description: `Classify a text into your own labels (single- or multi-label) with a language model, with a score per label; without labels it uses topic labels: ${DEFAULT_TOPICS.join(', ')}.`,
  providers: LLM_PROVIDERS,
  timeoutMs: 60_000,
  inputSchema: {
    type: 'object',
    required: ['text'],
    additionalProperties: false,
    properties: {
      text: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_TEXT,
        description: `the text to classify, at most ${MAX_TEXT.toLocaleString('en')} characters; it is treated as material, never as instructions`,
      },
      labels: {
        type: 'array',
        minItems: 2,
        maxItems: MAX_LABELS,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 60 },
        description: `2–${MAX_LABELS} candidate labels (each up to 60 characters, distinct ignoring case); omit for the default topic labels: ${DEFAULT_TOPICS.join(', ')}`,
      },
      multiLabel: {
        type: 'boolean',
        default: false,
        description:
          'false: exactly one label applies (the best one is returned); true: every label is judged on its own and all scoring at or above threshold are returned',
      },
      threshold: {
        type: 'number',
        minimum: 0,
        maximum: 1,
        default: 0.5,
        description: 'multi-label only: the score (0–1) a label needs to be assigned',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'label (the best label), labels (the assigned labels: the best one for single-label, all scoring ≥ threshold for multi-label, possibly none), ' +
      "scores[] {label, score 0–1} for every label, highest first (the model's judgement, not calibrated probabilities), multiLabel, threshold, " +
      `labelSet ("given" or "default-topics": ${DEFAULT_TOPICS.join(', ')}), model and usage (tokens) as reported by the API.`,
    schema: {
      type: 'object',
      properties: {
        label: { type: 'string' },
        labels: { type: 'array', items: { type: 'string' } },
        scores: {
          type: 'array',
          items: { type: 'object', properties: { label: { type: 'string' }, score: { type: 'number' } } },
        },
        multiLabel: { type: 'boolean' },
        threshold: { type: ['number', 'null'] },
        labelSet: { type: 'string', enum: ['given', 'default-topics'] },
        model: { type: 'string' },
        usage: llmReportSchema.properties.usage,
      },
    },
    example: {
      label: 'economy',
      labels: ['economy', 'technology'],
      scores: [
        { label: 'economy', score: 0.93 },
        { label: 'technology', score: 0.55 },
        { label: 'sports', score: 0.01 },
      ],
      multiLabel: true,
      threshold: 0.5,
      labelSet: 'given',
      model: 'gpt-4o-mini-2024-07-18',
      usage: { promptTokens: 321, completionTokens: 54, totalTokens: 375 },
    },
  },
  example: {
    text: 'The central bank raised interest rates by half a point, sending tech stocks lower.',
    labels: ['economy', 'sports', 'technology', 'weather'],
    multiLabel: true,
    threshold: 0.5,
  },
  async run(input, ctx) {
    if (input.text.trim() === '') throw new HandlerInputError('text', 'text must not be blank')
    const given = input.labels?.map((l) => l.trim())
    if (given) {
      if (given.some((l) => l === '')) throw new HandlerInputError('labels', 'labels must not be blank')
      const lower = new Set(given.map((l) => l.toLowerCase()))
      if (lower.size !== given.length) throw new HandlerInputError('labels', 'labels must be distinct (ignoring case)')
    }
    const labels: string[] = given ?? [...DEFAULT_TOPICS]

    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['scores'],
      properties: {
        scores: {
          type: 'array',
          minItems: labels.length,
          maxItems: labels.length,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['label', 'score'],
            properties: { label: { type: 'string', enum: labels }, score: { type: 'number', minimum: 0, maximum: 1 } },
          },
        },
      },
    }
    const task =
      'Classify the "text" of the data against every label in "labels". ' +
      (input.multiLabel
        ? 'Labels are independent: several, one or none may apply. Give each label a score from 0 to 1: how clearly that label applies to the text. '
        : 'Exactly one label applies. Give each label a score from 0 to 1: how likely it is to be the right one; the scores should add up to about 1. ') +
      'Score every label exactly once, spelled exactly as given, and no other label. Answer with JSON of the shape {"scores": [{"label": "...", "score": 0.0}, ...]}.'
    const { json, llm } = await chatJson<{ scores: Array<{ label: string; score: number }> }>(ctx, {
      task,
      data: { labels, text: input.text },
      schema,
      maxTokens: 200 + labels.length * 30,
      temperature: 0,
    })
    // the schema fixes the count and the spelling; each label exactly once is checked here
    const scoredLabels = new Set(json.scores.map((s) => s.label))
    if (scoredLabels.size !== labels.length)
      throw new HandlerUpstreamError('upstream_failed', 'the language model did not score every label exactly once')
    const order = new Map(labels.map((l, i) => [l, i]))
    const scores = json.scores
      .map((s) => ({ label: s.label, score: Math.round(s.score * 1000) / 1000 }))
      .sort((a, b) => b.score - a.score || order.get(a.label)! - order.get(b.label)!)
    const best = scores[0]!.label
    return {
      body: {
        label: best,
        labels: input.multiLabel ? scores.filter((s) => s.score >= input.threshold).map((s) => s.label) : [best],
        scores,
        multiLabel: input.multiLabel,
        threshold: input.multiLabel ? input.threshold : null,
        labelSet: given ? 'given' : 'default-topics',
        model: llm.model,
        usage: llm.usage,
      },
    }
  },
})
