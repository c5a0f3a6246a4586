import { Task } from '@a2a-js/sdk'
import type { TaskStore } from '@a2a-js/sdk/server'
import type { RedisClient } from '../redis-client.js'

/** How long an A2A task lives: while its buyer may still pay for it (a challenge's `input-required` task). */
const TASK_TTL_MS = 15 * 60_000

/**
 * The A2A tasks of this proxy process, bounded: a task lives while its buyer may still pay for it
 * (a challenge's `input-required` task) and is dropped after `ttlMs` or when `max` newer ones
 * came. A task is only the challenge's memory (the skill and its input); every payment is in the
 * ledger, so a task lost to a restart costs a buyer one more `message/send`, never money.
 */
export class BoundedTaskStore implements TaskStore {
  private readonly tasks = new Map<string, { task: Task; expires: number }>()

  constructor(
    private readonly ttlMs = TASK_TTL_MS,
    private readonly max = 20_000,
  ) {}

  async save(task: Task): Promise<void> {
    this.tasks.delete(task.id)
    this.tasks.set(task.id, { task, expires: Date.now() + this.ttlMs })
    // the oldest first: Map keeps insertion order
    for (const [id, t] of this.tasks) {
      if (this.tasks.size <= this.max && t.expires > Date.now()) break
      this.tasks.delete(id)
    }
  }

  async load(taskId: string): Promise<Task | undefined> {
    const t = this.tasks.get(taskId)
    if (!t) return undefined
    if (t.expires <= Date.now()) {
      this.tasks.delete(taskId)
      return undefined
    }
    return t.task
  }

  async list(): Promise<{ tasks: Task[]; nextPageToken: string; pageSize: number; totalSize: number }> {
    // tasks are found by id only: one buyer's tasks are not listed to another
    return { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 }
  }
}

/**
 * The A2A tasks of every proxy of a deployment, in Redis: a task one proxy made (a challenge) is
 * read and paid through another (tasks/get, the paying message). Each task is one key (the SDK's
 * JSON of the task) that expires `ttlMs` after its last change; a task is only the challenge's
 * memory, every payment is in the ledger.
 */
export class RedisTaskStore implements TaskStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: (taskId: string) => string,
    private readonly ttlMs = TASK_TTL_MS,
  ) {}

  async save(task: Task): Promise<void> {
    await this.redis.set(this.key(task.id), JSON.stringify(Task.toJSON(task)), 'PX', this.ttlMs)
  }

  async load(taskId: string): Promise<Task | undefined> {
    const json = await this.redis.get(this.key(taskId))
    return json === null ? undefined : Task.fromJSON(JSON.parse(json))
  }

  async list(): Promise<{ tasks: Task[]; nextPageToken: string; pageSize: number; totalSize: number }> {
    // tasks are found by id only: one buyer's tasks are not listed to another
    return { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 }
  }
}
