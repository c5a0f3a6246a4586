/**
 * The block ranges of one log search, oldest first, `chunk` blocks at most each: RPC providers cap
 * the range of one eth_getLogs request.
 */
export function* blockChunks(range: {
  fromBlock: bigint
  toBlock: bigint
  chunk: bigint
}): Generator<{ fromBlock: bigint; toBlock: bigint }> {
  for (let fromBlock = range.fromBlock; fromBlock <= range.toBlock; fromBlock += range.chunk) {
    const last = fromBlock + range.chunk - 1n
    yield { fromBlock, toBlock: last < range.toBlock ? last : range.toBlock }
  }
}
