/**
 * Every hosted handler declares an output schema and an example answer beside its example input
 * (they go into its 402's Bazaar declaration): the example input passes the input schema, the
 * example answer passes the output schema, and a pure handler (no network, no provider) really
 * answers its example input with something the output schema accepts. Table-driven over every handler.
 */
import t from 'tap'
import { Ajv } from 'ajv'
import * as ajvFormats from 'ajv-formats'
import { loadHandlerRegistry } from '../../../src/pool/handler-registry.js'
import { okResult, runInline } from '../../helpers/handler-harness.js'
import { terminateOcrWorker } from '../../../handlers/ocr-text-extraction/index.js'

const addFormats = ajvFormats.default as unknown as (ajv: Ajv) => Ajv
const ajv = addFormats(new Ajv({ strict: false, allErrors: true }))
// the example rides in every 402 header (base64) and in the buyer's payment header: keep it small
const MAX_EXAMPLE = 4096

const handlers = await loadHandlerRegistry()
// the OCR handler keeps a worker thread between calls
t.teardown(terminateOcrWorker)
t.ok(handlers.size >= 100, `${handlers.size} hosted handlers`)

for (const [slug, { module, validate }] of handlers) {
  t.test(slug, async (t) => {
    t.equal(validate(structuredClone(module.example), 'body'), null, 'the example input passes the input schema')
    const { schema, example } = module.output
    t.ok(schema, 'declares output.schema')
    t.ok(example, 'declares output.example')
    if (!schema || !example) return
    t.equal(schema.type, 'object', 'the answer is a JSON object')
    t.ok(ajv.validate(schema, example), `the example answer passes the output schema ${ajv.errorsText(ajv.errors)}`)
    const size = JSON.stringify(example).length
    t.ok(size <= MAX_EXAMPLE, `the example answer is ${size} characters`)
    if (module.network || module.providers?.length) return
    // pure: its real answer to the example input (the JSON variant, for a binary one)
    const result = okResult(await runInline(module, module.example, { accept: 'application/json' }))
    t.ok(ajv.validate(schema, result.body), `its real answer passes the output schema ${ajv.errorsText(ajv.errors)}`)
    t.same(Object.keys(example).sort(), Object.keys(result.body as object).sort(), 'the example has its fields')
  })
}
