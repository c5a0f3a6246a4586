// The batch-settlement scheme's refusal codes: the table lives in the x402 layer, next to the
// catalogue it is merged into (src/x402/reasons.ts), and the scheme reads it from there.
export { BATCH_SETTLEMENT_REASONS } from '../../x402/batch-settlement-reasons.js'
