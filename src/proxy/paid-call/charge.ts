/**
 * The actual charge of a usage-priced (`upto`) call, once its endpoint answered (< 400):
 *
 * - a hosted language-model handler (one that declares the `LLM_API_URL` provider): the tokens the
 *   provider reported (`usage.totalTokens` of its JSON answer, as the handlers copy llm-chat.ts's
 *   LlmReport into it, or `llm.usage.totalTokens`) at
 *   `config.upto.llmRatePer1kTokens` atomic units per 1,000 tokens, rounded up; no usage reported:
 *   the maximum;
 * - any other hosted handler: the maximum (its fixed price);
 * - a seller's upstream: the atomic units it reports in the `X-Tollgate-Charge` response header,
 *   which the proxy strips from the answer; no header: the maximum.
 *
 * A charge above the maximum (or a malformed header) is capped at the maximum: logged, and the
 * seller told through a `charge_capped` payment event. A failed call is never charged (it is voided
 * before this runs).
 */
import type { CallTarget } from './call.js'
import type { EndpointAnswer } from './dispatch.js'

/** The response header a seller's upstream reports an upto call's charge in (atomic units, decimal). */
export const CHARGE_HEADER = 'x-tollgate-charge'

export interface Charge {
  /** atomic units to settle, ≤ max */
  value: bigint
  /** the report was above the maximum or unreadable: `value` is the maximum */
  capped?: { reported: string }
}

const UINT = /^(0|[1-9][0-9]{0,77})$/

/** Reads the charge and strips the upstream's charge header from `answer` (mutated). */
export function chargeOf(target: CallTarget, answer: EndpointAnswer, max: bigint, llmRatePer1kTokens: bigint): Charge {
  if (target.kind === 'upstream') {
    const h = answer.headers?.[CHARGE_HEADER]
    if (answer.headers) delete answer.headers[CHARGE_HEADER]
    if (h === undefined) return { value: max }
    const text = Array.isArray(h) ? h.join(',') : h.trim()
    if (!UINT.test(text)) return { value: max, capped: { reported: text.slice(0, 100) } }
    const reported = BigInt(text)
    return reported > max ? { value: max, capped: { reported: text } } : { value: reported }
  }
  if (!target.handler.module.providers?.includes('LLM_API_URL')) return { value: max }
  const tokens = reportedTokens(answer.body)
  if (tokens === undefined) return { value: max }
  const value = (BigInt(tokens) * llmRatePer1kTokens + 999n) / 1000n
  return value > max ? { value: max, capped: { reported: value.toString() } } : { value }
}

/** `usage.totalTokens` (or `llm.usage.totalTokens`) of a hosted handler's JSON answer, when it is there. */
function reportedTokens(body: EndpointAnswer['body']): number | undefined {
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) return undefined
  try {
    type Usage = { usage?: { totalTokens?: unknown } | null }
    const json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8')) as Usage & { llm?: Usage }
    const n = json.usage?.totalTokens ?? json.llm?.usage?.totalTokens
    return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined
  } catch {
    return undefined
  }
}
