/** Never print credentials that may sit in a connection URL. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):([^@/]+)@/, '//$1:***@')
}
