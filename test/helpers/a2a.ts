/** The official A2A client's messages and calls, as the A2A tests (and the bench) make them. */
import { Role, type Message, type Task } from '@a2a-js/sdk'
import type { Client } from '@a2a-js/sdk/client'

export const X402_A2A_EXTENSION = 'https://github.com/google-a2a/a2a-x402/v0.1'

/** A user message in the SDK's shape: the skill in metadata, its input as a data part. */
export function userMessage(opts: {
  skill?: string
  input?: Record<string, unknown>
  taskId?: string
  metadata?: Record<string, unknown>
}): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: opts.taskId ?? '',
    role: Role.ROLE_USER,
    parts: opts.input
      ? [
          {
            content: { $case: 'data', value: opts.input },
            metadata: undefined,
            filename: '',
            mediaType: 'application/json',
          },
        ]
      : [
          {
            content: { $case: 'text', value: 'Here is the payment.' },
            metadata: undefined,
            filename: '',
            mediaType: '',
          },
        ],
    metadata: { ...(opts.skill ? { skill: opts.skill } : {}), ...opts.metadata },
    extensions: [],
    referenceTaskIds: [],
  }
}

const withX402 = { serviceParameters: { 'A2A-Extensions': X402_A2A_EXTENSION } }
export const send = async (client: Client, message: Message): Promise<Task> => {
  const r = await client.sendMessage({ tenant: '', message, configuration: undefined, metadata: undefined }, withX402)
  if (!('status' in r)) throw new Error(`expected a task, got a message: ${JSON.stringify(r)}`)
  return r
}
