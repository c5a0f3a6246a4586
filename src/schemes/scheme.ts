/**
 * The payment-scheme seam (`PaymentScheme`: verify, reserve and settlement), defined with the rest of
 * the seam's contract in src/seam/types.ts; re-exported here for the schemes and the proxy's stages.
 */
export type {
  OperationAnswer,
  PaymentScheme,
  Reservation,
  SchemeName,
  VerifiedPayment,
  VerifyContext,
} from '../seam/types.js'
