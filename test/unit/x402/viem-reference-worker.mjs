// Worker for recover-signer.test.ts: the slow viem reference (hashTypedData, recoverAddress,
// recoverTypedDataAddress) runs here so the random cases spread over the available cores.
// Plain JS so it needs no TypeScript loader inside the worker.
import { parentPort, workerData } from 'node:worker_threads'
import { hashTypedData, recoverAddress, recoverTypedDataAddress } from 'viem'

const types = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
}

async function attempt(fn) {
  try {
    return (await fn()).toLowerCase()
  } catch {
    return 'throws'
  }
}

/* global console */
if (parentPort === null) {
  // picked up by `tap test/unit/x402/`: this file is a helper, not a test
  console.log('1..0 # SKIP worker for recover-signer.test.ts')
} else {
  const out = []
  for (const c of workerData.cases) {
    const typed = { domain: c.domain, types, primaryType: 'TransferWithAuthorization', message: c.message }
    const hash = hashTypedData(typed)
    const recovered = []
    for (const s of c.sigs) {
      recovered.push(
        s.mode === 'typed'
          ? await attempt(() => recoverTypedDataAddress({ ...typed, signature: s.sig }))
          : await attempt(() => recoverAddress({ hash, signature: s.sig })),
      )
    }
    out.push({ hash, recovered })
  }
  parentPort.postMessage(out)
}
