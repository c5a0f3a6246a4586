/** The trivial "handler" of bench/handler-transport.bench.ts: an echo, or `size` bytes. */
export interface Answer {
  kind: string
  status: number
  contentType: string
  body: string | Uint8Array
}

export function answer(input: unknown, size: number): Answer {
  return size
    ? { kind: 'ok', status: 200, contentType: 'image/png', body: new Uint8Array(size).fill(7) }
    : { kind: 'ok', status: 200, contentType: 'application/json', body: JSON.stringify({ echo: input }) }
}

/** Piscina's entry, for the thread case */
export default function run(t: { input: unknown; size: number }): Answer {
  return answer(t.input, t.size)
}
