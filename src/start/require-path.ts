import path from 'node:path'

/**
 * `file` as `require()` reads it from `cwd`: relative paths start with `./` or `../`, or require
 * takes them for a package name. A hidden directory (`.tollgate/dev.json`) starts with a dot
 * and still needs the `./`.
 *
 * @example requirePath('/repo/.tollgate/dev.json', '/repo') // './.tollgate/dev.json'
 */
export function requirePath(file: string, cwd: string): string {
  const relative = path.relative(cwd, file)
  if (path.isAbsolute(relative)) return relative
  const posix = relative.split(path.sep).join('/')
  return posix.startsWith('../') ? posix : `./${posix}`
}
