import { readdirSync, readFileSync } from 'node:fs'

/** Every process below `pid` (children, theirs, ...) with its command line, read from /proc. */
export function descendants(pid: number): Array<{ pid: number; cmdline: string }> {
  const parents = new Map<number, number>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      // gone meanwhile
    }
  }
  const out: Array<{ pid: number; cmdline: string }> = []
  const below = (p: number) => {
    for (const [child, parent] of parents) {
      if (parent !== p) continue
      let cmdline = ''
      try {
        cmdline = readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' ')
      } catch {
        // gone meanwhile
      }
      out.push({ pid: child, cmdline })
      below(child)
    }
  }
  below(pid)
  return out
}

/**
 * The handler processes (src/pool/handler-process) whose parent is `ppid`, read from /proc: what
 * the operating system sees, not what the pool says about itself.
 */
export function handlerProcesses(ppid = process.pid): number[] {
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (parent === ppid && readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('handler-process'))
        out.push(Number(name))
    } catch {
      // gone meanwhile
    }
  }
  return out.sort((a, b) => a - b)
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
