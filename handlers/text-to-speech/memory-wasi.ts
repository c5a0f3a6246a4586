/**
 * The few WASI (preview1) calls a command-line program compiled to WASI needs to run once with
 * arguments and write its output files, all in memory: no host file, clock or environment is
 * reachable from the program. One instance serves one run; `node:wasi` would need a real
 * directory for the output and is still experimental in Node 20 (it prints a warning).
 *
 * @example
 *   const wasi = new MemoryWasi(['flite', '-t', 'Hello', '-o', '/speech.wav'])
 *   const code = wasi.start(new WebAssembly.Instance(module, wasi.imports))
 *   const wav = wasi.file('speech.wav')
 */

const ERRNO = { SUCCESS: 0, BADF: 8, INVAL: 28, NOENT: 44, SPIPE: 70 } as const
const FILETYPE = { CHARACTER_DEVICE: 2, DIRECTORY: 3, REGULAR_FILE: 4 } as const
/** the one preopened directory, "/", whose descriptor wasi-libc finds at start */
const ROOT_FD = 3
const ALL_RIGHTS = 0x1fffffffn

class ProcExit {
  constructor(readonly code: number) {}
}

interface OpenFile {
  data: Uint8Array
  size: number
  pos: number
}

export class MemoryWasi {
  readonly #args: Uint8Array[]
  readonly #files = new Map<string, OpenFile>()
  readonly #open = new Map<number, OpenFile>()
  readonly #stderr: Uint8Array[] = []
  #nextFd = ROOT_FD + 1
  #memory: WebAssembly.Memory | undefined
  readonly imports: WebAssembly.Imports

  constructor(args: readonly string[]) {
    const enc = new TextEncoder()
    this.#args = args.map((a) => enc.encode(`${a}\0`))
    this.imports = { wasi_snapshot_preview1: this.#calls() }
  }

  /** Runs the program's `_start`; returns its exit code. */
  start(instance: WebAssembly.Instance): number {
    this.#memory = instance.exports.memory as WebAssembly.Memory
    try {
      ;(instance.exports._start as () => void)()
      return 0
    } catch (err) {
      if (err instanceof ProcExit) return err.code
      throw err
    }
  }

  /** The bytes the program wrote to the file `name` (relative to "/"), if it created one. */
  file(name: string): Uint8Array | undefined {
    const f = this.#files.get(name)
    return f && f.data.subarray(0, f.size)
  }

  /** What the program wrote to stdout and stderr. */
  output(): string {
    return Buffer.concat(this.#stderr).toString('utf8')
  }

  #view(): DataView {
    return new DataView(this.#memory!.buffer)
  }

  #bytes(): Uint8Array {
    return new Uint8Array(this.#memory!.buffer)
  }

  #calls() {
    return {
      args_sizes_get: (countPtr: number, sizePtr: number) => {
        const v = this.#view()
        v.setUint32(countPtr, this.#args.length, true)
        v.setUint32(
          sizePtr,
          this.#args.reduce((n, a) => n + a.length, 0),
          true,
        )
        return ERRNO.SUCCESS
      },
      args_get: (argvPtr: number, bufPtr: number) => {
        const v = this.#view()
        const mem = this.#bytes()
        for (const a of this.#args) {
          v.setUint32(argvPtr, bufPtr, true)
          mem.set(a, bufPtr)
          argvPtr += 4
          bufPtr += a.length
        }
        return ERRNO.SUCCESS
      },
      // a fixed clock: the output must not depend on when it ran
      clock_time_get: (_id: number, _precision: bigint, timePtr: number) => {
        this.#view().setBigUint64(timePtr, 0n, true)
        return ERRNO.SUCCESS
      },
      fd_close: (fd: number) => (this.#open.delete(fd) ? ERRNO.SUCCESS : ERRNO.BADF),
      fd_fdstat_get: (fd: number, statPtr: number) => {
        const type =
          fd <= 2
            ? FILETYPE.CHARACTER_DEVICE
            : fd === ROOT_FD
              ? FILETYPE.DIRECTORY
              : this.#open.has(fd)
                ? FILETYPE.REGULAR_FILE
                : undefined
        if (type === undefined) return ERRNO.BADF
        const v = this.#view()
        v.setUint8(statPtr, type)
        v.setUint16(statPtr + 2, 0, true)
        v.setBigUint64(statPtr + 8, ALL_RIGHTS, true)
        v.setBigUint64(statPtr + 16, ALL_RIGHTS, true)
        return ERRNO.SUCCESS
      },
      fd_fdstat_set_flags: () => ERRNO.SUCCESS,
      fd_prestat_get: (fd: number, prestatPtr: number) => {
        if (fd !== ROOT_FD) return ERRNO.BADF
        const v = this.#view()
        v.setUint8(prestatPtr, 0) // a directory
        v.setUint32(prestatPtr + 4, 1, true) // its name, "/", is one byte
        return ERRNO.SUCCESS
      },
      fd_prestat_dir_name: (fd: number, pathPtr: number, len: number) => {
        if (fd !== ROOT_FD || len < 1) return ERRNO.BADF
        this.#bytes()[pathPtr] = 0x2f
        return ERRNO.SUCCESS
      },
      // stdin is empty and the program reads no file of ours
      fd_read: (_fd: number, _iovs: number, _count: number, readPtr: number) => {
        this.#view().setUint32(readPtr, 0, true)
        return ERRNO.SUCCESS
      },
      fd_seek: (fd: number, offset: bigint, whence: number, newPtr: number) => {
        const f = this.#open.get(fd)
        if (!f) return fd <= 2 ? ERRNO.SPIPE : ERRNO.BADF
        const pos = Number(offset) + (whence === 0 ? 0 : whence === 1 ? f.pos : f.size)
        if (pos < 0 || whence > 2) return ERRNO.INVAL
        f.pos = pos
        this.#view().setBigUint64(newPtr, BigInt(pos), true)
        return ERRNO.SUCCESS
      },
      fd_write: (fd: number, iovs: number, count: number, writtenPtr: number) => {
        const f = this.#open.get(fd)
        if (!f && fd !== 1 && fd !== 2) return ERRNO.BADF
        const v = this.#view()
        const mem = this.#bytes()
        let written = 0
        for (let i = 0; i < count; i++) {
          const ptr = v.getUint32(iovs + i * 8, true)
          const len = v.getUint32(iovs + i * 8 + 4, true)
          const chunk = mem.subarray(ptr, ptr + len)
          if (f) writeAt(f, chunk)
          else this.#stderr.push(chunk.slice())
          written += len
        }
        v.setUint32(writtenPtr, written, true)
        return ERRNO.SUCCESS
      },
      // only files the program creates itself exist; each open truncates
      path_open: (
        dirFd: number,
        _dirFlags: number,
        pathPtr: number,
        pathLen: number,
        openFlags: number,
        _rights: bigint,
        _inherited: bigint,
        _fdFlags: number,
        fdPtr: number,
      ) => {
        if (dirFd !== ROOT_FD) return ERRNO.BADF
        const O_CREAT = 1
        const name = new TextDecoder().decode(this.#bytes().subarray(pathPtr, pathPtr + pathLen))
        if (!(openFlags & O_CREAT)) return ERRNO.NOENT
        const file: OpenFile = { data: new Uint8Array(64 * 1024), size: 0, pos: 0 }
        this.#files.set(name, file)
        const fd = this.#nextFd++
        this.#open.set(fd, file)
        this.#view().setUint32(fdPtr, fd, true)
        return ERRNO.SUCCESS
      },
      proc_exit: (code: number) => {
        throw new ProcExit(code)
      },
    }
  }
}

function writeAt(f: OpenFile, chunk: Uint8Array) {
  const end = f.pos + chunk.length
  if (end > f.data.length) {
    const grown = new Uint8Array(Math.max(end, f.data.length * 2))
    grown.set(f.data.subarray(0, f.size))
    f.data = grown
  }
  f.data.set(chunk, f.pos)
  f.pos = end
  f.size = Math.max(f.size, end)
}
