/**
 * The `tollgate` exit codes, stable across releases: 0 success, 1 usage or other error (a host
 * that does not answer included), 2 payment refused, 3 HTTP error (an answer with status >= 400).
 */
export const EXIT = { ok: 0, usage: 1, error: 1, refused: 2, http: 3 } as const

export type ExitCode = (typeof EXIT)[keyof typeof EXIT]
