import { chatJson, LLM_PROVIDERS, llmReportSchema } from '../_shared/llm-chat.js'
import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_TEXT = 50_000
/** target words of each named length */
const LENGTH_WORDS = { short: 60, medium: 150, long: 300 } as const

interface Input {
  text: string
  length: keyof typeof LENGTH_WORDS
  words?: number
  style: 'paragraph' | 'bullets'
  keyPoints: number
}

const words = new Intl.Segmenter(undefined, { granularity: 'word' })
/** words by Unicode segmentation: splitting on white space would count a Chinese or Japanese text as one word */
const countWords = (s: string) => {
  let n = 0
  for (const seg of words.segment(s)) if (seg.isWordLike) n++
  return n
}

/**
 * Summary of the buyer's text by a language model (an OpenAI-compatible Chat Completions API).
 * The model's answer is validated (shape, non-empty strings, item counts); the word counts and
 * the compression ratio are counted here, not by the model.
 */
export default defineHandler<Input>({
  slug: 'ai-text-summarizer',
  description:
    'Summarize a text (up to 50,000 characters) with a language model: a short, medium or long summary (or a word target) as a paragraph or bullet points, plus the key points.',
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
        description: `the text to summarize, at most ${MAX_TEXT.toLocaleString('en')} characters; it is treated as material, never as instructions`,
      },
      length: {
        type: 'string',
        enum: ['short', 'medium', 'long'],
        default: 'medium',
        description: `summary length: short (about ${LENGTH_WORDS.short} words), medium (about ${LENGTH_WORDS.medium}) or long (about ${LENGTH_WORDS.long})`,
      },
      words: {
        type: 'integer',
        minimum: 10,
        maximum: 1000,
        description:
          'a word target for the summary instead of length (10–1000); a target, not a guarantee: the output reports the actual count',
      },
      style: {
        type: 'string',
        enum: ['paragraph', 'bullets'],
        default: 'paragraph',
        description: 'paragraph (prose) or bullets (a list of bullet points)',
      },
      keyPoints: {
        type: 'integer',
        minimum: 0,
        maximum: 10,
        default: 5,
        description: 'at most this many key points to list separately (0: none)',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      'summary (prose, or the bullets as a "- " list), bullets (array, only for style bullets, else null), keyPoints[], style, targetWords, wordCount (of the summary, counted here), ' +
      'inputWordCount, compressionRatio (summary words / input words), language note: the summary is written in the language of the text; model and usage (tokens) as reported by the API.',
    schema: {
      type: 'object',
      properties: {
        summary: { type: 'string' },
        bullets: { type: ['array', 'null'], items: { type: 'string' } },
        keyPoints: { type: 'array', items: { type: 'string' } },
        style: { type: 'string' },
        targetWords: { type: 'integer' },
        wordCount: { type: 'integer' },
        inputWordCount: { type: 'integer' },
        compressionRatio: { type: 'number' },
        model: { type: 'string' },
        usage: llmReportSchema.properties.usage,
      },
    },
    example: {
      summary: 'The council approved a budget raising transport spending by 10%.',
      bullets: null,
      keyPoints: ['Budget approved on Monday', 'Transport spending up 10%'],
      style: 'paragraph',
      targetWords: 60,
      wordCount: 10,
      inputWordCount: 110,
      compressionRatio: 0.091,
      model: 'gpt-4o-mini-2024-07-18',
      usage: { promptTokens: 321, completionTokens: 54, totalTokens: 375 },
    },
  },
  example: {
    text: 'The x402 protocol revives the HTTP 402 Payment Required status code so that a server can ask for payment before answering. A client that receives a 402 reads the payment requirements from the response, signs a stablecoin transfer authorization and repeats the request with the signed payload in a header. A facilitator verifies the signature and settles the transfer on chain, and the server then returns the resource. Because no account or API key is needed, software agents can pay for single API calls on their own.',
    length: 'short',
    style: 'paragraph',
    keyPoints: 3,
  },
  async run(input, ctx) {
    const text = input.text.trim()
    if (text === '') throw new HandlerInputError('text', 'text must not be blank')
    const inputWordCount = countWords(text)
    const targetWords = input.words ?? LENGTH_WORDS[input.length]
    const bullets = input.style === 'bullets'
    const item = { type: 'string', minLength: 1, pattern: '\\S' }
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: [bullets ? 'bullets' : 'summary', 'keyPoints'],
      properties: {
        ...(bullets ? { bullets: { type: 'array', minItems: 1, maxItems: 30, items: item } } : { summary: item }),
        keyPoints: { type: 'array', minItems: input.keyPoints === 0 ? 0 : 1, maxItems: input.keyPoints, items: item },
      },
    }
    const shape = bullets
      ? '{"bullets": ["...", ...], "keyPoints": ["...", ...]}'
      : '{"summary": "...", "keyPoints": ["...", ...]}'
    const task =
      `Summarize the "text" of the data faithfully, in the same language as the text, in about ${targetWords} words` +
      (bullets
        ? ' written as bullet points (each item one bullet, without a leading dash or number)'
        : ' written as prose paragraphs') +
      `. Then list ${input.keyPoints === 0 ? 'no key points (an empty keyPoints list)' : `the text's most important points, at most ${input.keyPoints}, one short sentence each`}. ` +
      `Use only what the text says. Answer with JSON of the shape ${shape}.`
    const { json, llm } = await chatJson<{ summary?: string; bullets?: string[]; keyPoints: string[] }>(ctx, {
      task,
      data: { text },
      schema,
      maxTokens: Math.min(4000, Math.ceil(targetWords * 2.5) + input.keyPoints * 60 + 200),
      temperature: 0.2,
    })
    const list = json.bullets?.map((b) => b.trim())
    const summary = list ? list.map((b) => `- ${b}`).join('\n') : json.summary!.trim()
    const wordCount = countWords(list ? list.join(' ') : summary)
    return {
      body: {
        summary,
        bullets: list ?? null,
        keyPoints: json.keyPoints.map((k) => k.trim()),
        style: input.style,
        targetWords,
        wordCount,
        inputWordCount,
        compressionRatio: Math.round((wordCount / inputWordCount) * 1000) / 1000,
        model: llm.model,
        usage: llm.usage,
      },
    }
  },
})
