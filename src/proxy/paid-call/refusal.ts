/** The one refusal every stage returns: defined with the seam's contract (src/seam/types.ts). */
export { CallRefusal, isRefusal } from '../../seam/types.js'
