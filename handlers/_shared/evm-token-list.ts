/**
 * Major ERC-20s per chain id, read by defi-wallet-portfolio when the buyer names no tokens (or
 * asks for the built-in list too). Addresses are facts taken from the issuers' own pages:
 * - USDC, EURC: Circle, https://developers.circle.com/stablecoins/usdc-contract-addresses and /eurc-contract-addresses
 * - WETH on OP Stack chains: the predeploy, https://docs.base.org/base-chain/network-information/base-contracts (L2 predeploys)
 * - USDbC, DAI on Base: the Base docs' contract and bridged-token pages (docs.base.org)
 * - cbETH, cbBTC: Coinbase's product pages for the two tokens (coinbase.com)
 * - wstETH: Lido, https://docs.lido.fi/deployed-contracts/ (Base section)
 * - AERO: Aerodrome's documentation (aerodrome.finance)
 * - Ethereum mainnet: the issuers' contracts as listed by Circle (USDC), Tether (tether.to/en/supported-protocols), MakerDAO chainlog (DAI),
 *   WETH9, BitGo (WBTC, wbtc.network), Lido (stETH), Chainlink (LINK), Uniswap (UNI)
 * Symbols and decimals are not kept here: they are read from each contract.
 */
export const TOKEN_LISTS: Record<number, { name: string; tokens: Array<{ label: string; address: `0x${string}` }> }> = {
  8453: {
    name: 'Base',
    tokens: [
      { label: 'USDC', address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
      { label: 'WETH', address: '0x4200000000000000000000000000000000000006' },
      { label: 'USDbC', address: '0xd9aAEc86B65D86f6A7B5B1b0c42FFA531710b6CA' },
      { label: 'DAI', address: '0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb' },
      { label: 'EURC', address: '0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42' },
      { label: 'cbETH', address: '0x2Ae3F1Ec7F1F5012CFEab0185bfc7aa3cf0DEc22' },
      { label: 'cbBTC', address: '0xcbB7C0000aB88B473b1f5aFd9ef808440eed33Bf' },
      { label: 'wstETH', address: '0xc1CBa3fCea344f92D9239c08C0568f6F2F0ee452' },
      { label: 'AERO', address: '0x940181a94A35A4569E4529A3CDfB74e38FD98631' },
    ],
  },
  84532: {
    name: 'Base Sepolia',
    tokens: [
      { label: 'USDC', address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' },
      { label: 'WETH', address: '0x4200000000000000000000000000000000000006' },
    ],
  },
  1: {
    name: 'Ethereum',
    tokens: [
      { label: 'USDC', address: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48' },
      { label: 'USDT', address: '0xdAC17F958D2ee523a2206206994597C13D831ec7' },
      { label: 'DAI', address: '0x6B175474E89094C44Da98b954EedeAC495271d0F' },
      { label: 'WETH', address: '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2' },
      { label: 'WBTC', address: '0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599' },
      { label: 'stETH', address: '0xae7ab96520DE3A18E5e111B5EaAb095312D7fE84' },
      { label: 'LINK', address: '0x514910771AF9Ca656af840dff83E8264EcF986CA' },
      { label: 'UNI', address: '0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984' },
    ],
  },
}
