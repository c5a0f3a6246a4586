import type { Deps } from '../src/deps.js'
import { sendPendingAlerts } from '../src/services/events/alert-mail.js'
import { createPoster, deliverDue } from '../src/services/events/deliver.js'
import { derivePaymentEvents } from '../src/services/events/derive-payments.js'
import type { JobModule } from './job.js'

/**
 * Webhooks and alerts (docs/api.md, "Webhooks"): derives payment events from the ledger, POSTs
 * the due deliveries of the durable outbox (signed; retried with backoff for 3 days), and emails
 * pending alerts. Runs on its own `webhooks` queue, so a slow receiver never delays settlement.
 * Everything it works from is in Postgres: a lost job or a flushed Redis loses no event.
 */
export const name = 'webhook-dispatch'
export type Payload = Record<string, never>

const posters = new WeakMap<Deps, ReturnType<typeof createPoster>>()

export const webhookDispatch: JobModule<Payload> = {
  name,
  defaultOptions: { attempts: 1, removeOnComplete: 20, removeOnFail: 20 },
  everyMs: (deps) => deps.config.webhooks.tickMs,
  async process({ deps, log }) {
    let poster = posters.get(deps)
    if (!poster) posters.set(deps, (poster = createPoster(deps.config)))
    const derived = await derivePaymentEvents(deps).catch((err: unknown) => {
      log.warn({ err }, 'webhooks: deriving payment events failed; retried next tick')
      return 0
    })
    let delivered = 0
    // a full batch: more may be due, go on within this tick
    for (let n = 50; n === 50 && delivered < 500; delivered += n) n = await deliverDue(deps, poster)
    const alerts = await sendPendingAlerts(deps).catch((err: unknown) => {
      log.warn({ err }, 'webhooks: sending alert emails failed; retried next tick')
      return 0
    })
    return { derived, delivered, alerts }
  },
}

/** Closes the HTTP agent of these deps' poster (the worker's close). */
export async function closeWebhookDispatch(deps: Deps): Promise<void> {
  await posters.get(deps)?.close()
  posters.delete(deps)
}
