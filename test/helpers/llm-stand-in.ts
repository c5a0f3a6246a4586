import type { Received } from './provider-stand-in.js'

export { providerStandIn, type Answer, type Received } from './provider-stand-in.js'

/**
 * A chat.completion object as the OpenAI Chat Completions API documents it
 * (https://platform.openai.com/docs/api-reference/chat/object); `content` objects are sent as
 * their JSON text, the way a model in JSON mode answers.
 */
export function chatCompletion(
  content: unknown,
  o: {
    model?: string
    finishReason?: string
    usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null
    refusal?: string
  } = {},
) {
  return {
    id: 'chatcmpl-standin123',
    object: 'chat.completion',
    created: 1_763_900_000,
    model: o.model ?? 'gpt-4o-mini-2024-07-18',
    system_fingerprint: 'fp_standin',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: o.refusal ? null : typeof content === 'string' ? content : JSON.stringify(content),
          refusal: o.refusal ?? null,
        },
        logprobs: null,
        finish_reason: o.finishReason ?? 'stop',
      },
    ],
    ...(o.usage === null ? {} : { usage: o.usage ?? { prompt_tokens: 321, completion_tokens: 54, total_tokens: 375 } }),
  }
}

/** The buyer data the handler put between BEGIN_DATA and END_DATA in its user message. */
export function sentData(req: Received): any {
  const user = (req.json?.messages ?? []).find((m: { role: string }) => m.role === 'user')?.content as string
  const m = /^BEGIN_DATA\n([\s\S]*)\nEND_DATA$/.exec(user ?? '')
  return m ? JSON.parse(m[1]!) : undefined
}

/** The system prompt the handler sent. */
export function sentSystem(req: Received): string {
  return (req.json?.messages ?? []).find((m: { role: string }) => m.role === 'system')?.content ?? ''
}

/** Provider settings pointing the language-model endpoints at a stand-in. */
export const llmSettings = (url: string) => ({ LLM_API_URL: `${url}/v1`, LLM_API_KEY: 'sk-test-llm-key' })
