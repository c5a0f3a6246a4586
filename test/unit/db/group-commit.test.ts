import t from 'tap'
import { groupCommit } from '../../../src/db/group-commit.js'

/** A flush whose completion the test controls. */
function controlled() {
  const calls: { items: number[]; done(): void; fail(e: Error): void }[] = []
  const writer = groupCommit<number, string>({
    maxItems: 3,
    maxInFlight: 1,
    flush: (items) =>
      new Promise((resolve, reject) => {
        calls.push({ items, done: () => resolve(items.map((i) => `ok ${i}`)), fail: reject })
      }),
  })
  return { writer, calls }
}
const tick = () => new Promise((r) => setImmediate(r))

t.test('an idle writer flushes at once; items arriving during a flush form the next batch', async (t) => {
  const { writer, calls } = controlled()
  const first = writer.add(1)
  await tick()
  t.same(
    calls.map((c) => c.items),
    [[1]],
    'no timer: the first item goes alone, right away',
  )
  const more = [writer.add(2), writer.add(3), writer.add(4), writer.add(5)]
  await tick()
  t.equal(calls.length, 1, 'maxInFlight 1: nothing else starts while the first flush runs')
  calls[0]!.done()
  t.equal(await first, 'ok 1')
  await tick()
  t.same(calls[1]!.items, [2, 3, 4], 'the waiting items, up to maxItems')
  calls[1]!.done()
  await tick()
  t.same(calls[2]!.items, [5], 'the rest follows')
  calls[2]!.done()
  t.same(await Promise.all(more), ['ok 2', 'ok 3', 'ok 4', 'ok 5'], 'each caller gets its own outcome')
})

t.test('a failed flush rejects every item of its batch and only those', async (t) => {
  const { writer, calls } = controlled()
  const a = writer.add(1)
  await tick()
  const b = [writer.add(2), writer.add(3)]
  calls[0]!.fail(new Error('db down'))
  await t.rejects(a, /db down/)
  await tick()
  calls[1]!.done()
  t.same(await Promise.all(b), ['ok 2', 'ok 3'])
})

t.test('a flush that throws synchronously rejects its batch instead of escaping', async (t) => {
  const writer = groupCommit<number, number>({
    maxItems: 10,
    flush: () => {
      throw new Error('bad batch')
    },
  })
  await t.rejects(writer.add(1), /bad batch/)
})

t.test('drain waits for pending and in-flight flushes', async (t) => {
  const { writer, calls } = controlled()
  const results: string[] = []
  void writer.add(1).then((r) => results.push(r))
  void writer.add(2).then((r) => results.push(r))
  let drained = false
  const d = writer.drain().then(() => (drained = true))
  await tick()
  t.notOk(drained)
  calls[0]!.done()
  await tick()
  await tick()
  if (calls[1]) calls[1].done()
  await d
  t.same(results.sort(), ['ok 1', 'ok 2'])
  await writer.drain()
  t.pass('draining an idle writer returns at once')
})

t.test('two flushes run at once when maxInFlight is 2', async (t) => {
  let running = 0
  let peak = 0
  const writer = groupCommit<number, number>({
    maxItems: 1,
    maxInFlight: 2,
    flush: async (items) => {
      running++
      peak = Math.max(peak, running)
      await new Promise((r) => setTimeout(r, 5))
      running--
      return items
    },
  })
  t.same(await Promise.all([1, 2, 3, 4, 5].map((i) => writer.add(i))), [1, 2, 3, 4, 5])
  t.equal(peak, 2)
})

t.test('a stalled flush cannot grow the backlog without bound: past maxPending, add fails at once', async (t) => {
  const calls: { done(): void }[] = []
  const writer = groupCommit<number, number>({
    maxItems: 2,
    maxInFlight: 1,
    maxPending: 3,
    flush: (items) => new Promise((resolve) => calls.push({ done: () => resolve(items) })),
  })
  const first = writer.add(0)
  await tick()
  const waiting = [writer.add(1), writer.add(2), writer.add(3)]
  await t.rejects(writer.add(4), /backlog full/)
  calls[0]!.done()
  t.equal(await first, 0)
  await tick()
  calls[1]!.done()
  await tick()
  calls[2]!.done()
  t.same(await Promise.all(waiting), [1, 2, 3], 'what was accepted is written')
  const later = writer.add(5)
  await tick()
  calls[3]!.done()
  t.equal(await later, 5, 'room again once the backlog drains')
})
