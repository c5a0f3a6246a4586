import type { AppError } from '../../errors.js'
import type { ReasonCode, Refusal } from '../../x402/reasons.js'

/**
 * Why a paid call stops before its endpoint answers: the one refusal every stage returns, rendered
 * in one place by the transport (HTTP: a 402 with the challenge again, or the catalogue error).
 *
 * - `challenge`: no payment was sent: the buyer gets the challenge.
 * - `payment`: the payment itself is refused (an x402 reason): the buyer gets the challenge again
 *   with the reason and may sign a new payment.
 * - `error`: anything else (bad input, busy, not recorded, the endpoint failed): a catalogue error.
 */
export class CallRefusal {
  private constructor(
    readonly reason: ReasonCode | undefined,
    readonly message: string | undefined,
    readonly error: AppError | undefined,
    /**
     * a corrective 402 (`batch-settlement`'s stale cumulative amount): the challenge's requirement
     * of `scheme` carries these `extra` members too (channelState, voucherState)
     */
    readonly corrective?: { scheme: string; extra: Record<string, unknown> },
  ) {}

  /** no payment was sent: the plain challenge */
  static challenge(): CallRefusal {
    return new CallRefusal(undefined, undefined, undefined)
  }

  static payment(reason: ReasonCode, message?: string): CallRefusal {
    return new CallRefusal(reason, message, undefined)
  }

  /** an x402 module's refusal (decode, requirements) as a payment refusal */
  static fromX402(r: Refusal): CallRefusal {
    return new CallRefusal(r.reason, r.message, undefined)
  }

  /** a payment refusal whose challenge tells the buyer the state to resync from */
  static corrective(r: Refusal, scheme: string, extra: Record<string, unknown>): CallRefusal {
    return new CallRefusal(r.reason, r.message, undefined, { scheme, extra })
  }

  static error(error: AppError): CallRefusal {
    return new CallRefusal(undefined, undefined, error)
  }
}

export const isRefusal = (v: unknown): v is CallRefusal => v instanceof CallRefusal
