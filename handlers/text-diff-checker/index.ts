import { defineHandler, HandlerInputError } from '../../src/pool/handler-contract.js'

const MAX_TEXT = 200_000
/** Myers diff is O(N·D): very different large texts are cut off rather than left to run to the worker's time limit. */
const DIFF_BUDGET_MS = 3_000

interface Input {
  original: string
  modified: string
  mode: 'line' | 'word' | 'char'
  ignoreCase: boolean
  ignoreWhitespace: boolean
  patch: boolean
  context: number
  originalName: string
  modifiedName: string
}

interface Change {
  type: 'added' | 'removed' | 'equal'
  value: string
  count: number
}

export default defineHandler<Input>({
  slug: 'text-diff-checker',
  description:
    'Compare two texts line by line, word by word or character by character (Myers diff via the `diff` package) and get the changes, counts and a unified patch.',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['original', 'modified'],
    properties: {
      original: { type: 'string', maxLength: MAX_TEXT, description: `The old text, at most ${MAX_TEXT} characters.` },
      modified: { type: 'string', maxLength: MAX_TEXT, description: `The new text, at most ${MAX_TEXT} characters.` },
      mode: {
        type: 'string',
        enum: ['line', 'word', 'char'],
        default: 'line',
        description: 'Granularity of the change list.',
      },
      ignoreCase: {
        type: 'boolean',
        default: false,
        description: 'word and char modes: treat letters of different case as equal.',
      },
      ignoreWhitespace: {
        type: 'boolean',
        default: false,
        description:
          'line mode and the patch: ignore leading/trailing whitespace of lines; word mode: ignore changes in whitespace between words.',
      },
      patch: { type: 'boolean', default: true, description: 'Also return a unified diff (always line based).' },
      context: {
        type: 'integer',
        minimum: 0,
        maximum: 50,
        default: 3,
        description: 'Unchanged lines of context around each hunk in the patch.',
      },
      originalName: {
        type: 'string',
        maxLength: 200,
        default: 'original',
        description: 'File name for the patch --- header.',
      },
      modifiedName: {
        type: 'string',
        maxLength: 200,
        default: 'modified',
        description: 'File name for the patch +++ header.',
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ identical, stats: { added, removed, unchanged } (in tokens of the mode), changes: [{ type, value, count }], patch? }',
    schema: {
      type: 'object',
      properties: {
        identical: { type: 'boolean' },
        stats: {
          type: 'object',
          properties: { added: { type: 'number' }, removed: { type: 'number' }, unchanged: { type: 'number' } },
          required: ['added', 'removed', 'unchanged'],
        },
        changes: {
          type: 'array',
          items: {
            type: 'object',
            properties: { type: { type: 'string' }, value: { type: 'string' }, count: { type: 'number' } },
            required: ['type', 'value', 'count'],
          },
        },
        patch: { type: 'string' },
      },
      required: ['identical', 'stats', 'changes'],
    },
    example: {
      identical: false,
      stats: { added: 1, removed: 1, unchanged: 8 },
      changes: [
        { type: 'equal', value: 'the quick ', count: 2 },
        { type: 'removed', value: 'brown', count: 1 },
        { type: 'added', value: 'red', count: 1 },
      ],
      patch:
        '===================================================================\n--- original\n+++ modified\n@@ -1,3 +1,3 @@\n-the quick brown fox\n+the quick red fox\n jumps over\n the lazy dog\n',
    },
  },
  example: {
    original: 'the quick brown fox\njumps over\nthe lazy dog\n',
    modified: 'the quick red fox\njumps over\nthe lazy dog\n',
    mode: 'word',
    ignoreCase: false,
    ignoreWhitespace: false,
    patch: true,
    context: 3,
    originalName: 'original',
    modifiedName: 'modified',
  },
  async run(input) {
    const { diffLines, diffWords, diffWordsWithSpace, diffChars, createTwoFilesPatch } = await import('diff')
    const { original: a, modified: b } = input
    const deadline = Date.now() + DIFF_BUDGET_MS
    const raw =
      input.mode === 'line'
        ? diffLines(a, b, { ignoreWhitespace: input.ignoreWhitespace, timeout: DIFF_BUDGET_MS })
        : input.mode === 'word'
          ? (input.ignoreWhitespace ? diffWords : diffWordsWithSpace)(a, b, {
              ignoreCase: input.ignoreCase,
              timeout: DIFF_BUDGET_MS,
            })
          : diffChars(a, b, { ignoreCase: input.ignoreCase, timeout: DIFF_BUDGET_MS })
    if (!raw) throw tooDifferent()

    const changes: Change[] = raw.map((c) => ({
      type: c.added ? 'added' : c.removed ? 'removed' : 'equal',
      value: c.value,
      count: countTokens(c.value, input.mode, c.count),
    }))
    const stats = { added: 0, removed: 0, unchanged: 0 }
    for (const c of changes) stats[c.type === 'equal' ? 'unchanged' : c.type] += c.count

    const body: Record<string, unknown> = { identical: changes.every((c) => c.type === 'equal'), stats, changes }
    if (input.patch) {
      const patch = createTwoFilesPatch(input.originalName, input.modifiedName, a, b, undefined, undefined, {
        context: input.context,
        ignoreWhitespace: input.ignoreWhitespace,
        // the change list and the patch share one budget
        timeout: Math.max(1, deadline - Date.now()),
      })
      if (patch === undefined) throw tooDifferent()
      body.patch = patch
    }
    return { body }
  },
})

/** Stats count what a reader counts: lines, words (runs of non-space), or characters (code points), not the diff's internal tokens. */
function countTokens(value: string, mode: Input['mode'], lines: number): number {
  if (mode === 'line') return lines
  if (mode === 'word') return value.match(/\S+/g)?.length ?? 0
  return [...value].length
}

function tooDifferent() {
  return new HandlerInputError(
    'modified',
    `the texts differ too much to diff within ${DIFF_BUDGET_MS / 1000} s; try a coarser mode or smaller texts`,
    413,
  )
}
