/**
 * Solidity sources of the stand-in contracts the evm-* handler tests deploy on anvil, compiled in
 * the test with the solc package (see compileSolidity in evm-chain.ts). Kept as strings here so
 * the tests own them; each is the smallest contract that behaves like the real interface.
 */

/** ERC-20s: PlainToken (no admin), ManagedToken (owner, mint, pause, blacklist, fee), Reverter, OP Stack GasPriceOracle stand-in, EIP-1967 proxy. */
export const TOKENS_SOL = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract PlainToken {
  string public name;
  string public symbol;
  uint8 public decimals;
  uint256 public totalSupply;
  mapping(address => uint256) public balanceOf;
  mapping(address => mapping(address => uint256)) public allowance;
  event Transfer(address indexed from, address indexed to, uint256 value);
  event Approval(address indexed owner, address indexed spender, uint256 value);

  constructor(string memory n, string memory s, uint8 d, uint256 supply) {
    name = n;
    symbol = s;
    decimals = d;
    _mint(msg.sender, supply);
  }
  function _mint(address to, uint256 v) internal {
    totalSupply += v;
    balanceOf[to] += v;
    emit Transfer(address(0), to, v);
  }
  function transfer(address to, uint256 v) external returns (bool) {
    _transfer(msg.sender, to, v);
    return true;
  }
  function approve(address s, uint256 v) external returns (bool) {
    allowance[msg.sender][s] = v;
    emit Approval(msg.sender, s, v);
    return true;
  }
  function transferFrom(address f, address to, uint256 v) external returns (bool) {
    require(allowance[f][msg.sender] >= v, "ERC20: insufficient allowance");
    allowance[f][msg.sender] -= v;
    _transfer(f, to, v);
    return true;
  }
  /** many transfers from the caller in one transaction (one log each) */
  function spray(address[] calldata to, uint256[] calldata v) external {
    for (uint256 i = 0; i < to.length; i++) _transfer(msg.sender, to[i], v[i]);
  }
  function _transfer(address f, address to, uint256 v) internal virtual {
    require(balanceOf[f] >= v, "ERC20: transfer amount exceeds balance");
    balanceOf[f] -= v;
    balanceOf[to] += v;
    emit Transfer(f, to, v);
  }
}

contract ManagedToken is PlainToken {
  address public owner;
  bool public paused;
  mapping(address => bool) public isBlacklisted;
  uint256 public fee;
  error NotOwner(address caller);
  event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

  constructor(string memory n, string memory s, uint8 d, uint256 supply) PlainToken(n, s, d, supply) {
    owner = msg.sender;
  }
  modifier onlyOwner() {
    if (msg.sender != owner) revert NotOwner(msg.sender);
    _;
  }
  function mint(address to, uint256 v) external onlyOwner { _mint(to, v); }
  function pause() external onlyOwner { paused = true; }
  function unpause() external onlyOwner { paused = false; }
  function blacklist(address a) external onlyOwner { isBlacklisted[a] = true; }
  function setFee(uint256 f) external onlyOwner { fee = f; }
  function renounceOwnership() external onlyOwner {
    emit OwnershipTransferred(owner, address(0));
    owner = address(0);
  }
  function _transfer(address f, address to, uint256 v) internal override {
    require(!paused, "token is paused");
    require(!isBlacklisted[f], "sender is blacklisted");
    super._transfer(f, to, v);
  }
}

contract Reverter {
  error Custom(uint256 x);
  uint256[] public items;
  function failString() external pure { revert("nope: not allowed"); }
  function failCustom() external pure { revert Custom(7); }
  function divide(uint256 a) external pure returns (uint256) { return 100 / a; }
  function store(uint256 n) external {
    for (uint256 i = 0; i < n; i++) items.push(i);
  }
}

/** OP Stack GasPriceOracle stand-in: the L1 fee is 1000 wei per byte of the transaction given. */
contract GasPriceOracleStandIn {
  function getL1Fee(bytes calldata data) external pure returns (uint256) { return data.length * 1000; }
}

/** An EIP-1967 proxy with its admin in the admin slot and an admin-only upgradeTo. */
contract TestProxy {
  bytes32 internal constant IMPL = 0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc;
  bytes32 internal constant ADMIN = 0xb53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103;
  constructor(address impl, address admin) {
    assembly {
      sstore(IMPL, impl)
      sstore(ADMIN, admin)
    }
  }
  function upgradeTo(address impl) external {
    address a;
    assembly { a := sload(ADMIN) }
    require(msg.sender == a, "not admin");
    assembly { sstore(IMPL, impl) }
  }
  fallback() external payable {
    assembly {
      let impl := sload(IMPL)
      calldatacopy(0, 0, calldatasize())
      let ok := delegatecall(gas(), impl, 0, calldatasize(), 0, 0)
      returndatacopy(0, 0, returndatasize())
      switch ok case 0 { revert(0, returndatasize()) } default { return(0, returndatasize()) }
    }
  }
}
`

/** NFTs: TestNFT721 (ERC-165, tokenURI set per token), TestNFT1155 (one uri template), BareNFT (tokenURI and ownerOf, no ERC-165). */
export const NFTS_SOL = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract TestNFT721 {
  string public name = "Test Apes";
  string public symbol = "TAPE";
  mapping(uint256 => address) internal owners;
  mapping(uint256 => string) internal uris;
  event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
  function supportsInterface(bytes4 id) external pure returns (bool) {
    return id == 0x01ffc9a7 || id == 0x80ac58cd || id == 0x5b5e139f;
  }
  function mint(address to, uint256 id, string calldata uri) external {
    owners[id] = to;
    uris[id] = uri;
    emit Transfer(address(0), to, id);
  }
  function ownerOf(uint256 id) external view returns (address) {
    address o = owners[id];
    require(o != address(0), "ERC721: invalid token ID");
    return o;
  }
  function tokenURI(uint256 id) external view returns (string memory) {
    require(owners[id] != address(0), "ERC721: invalid token ID");
    return uris[id];
  }
}

contract TestNFT1155 {
  string internal template;
  constructor(string memory t) { template = t; }
  function supportsInterface(bytes4 id) external pure returns (bool) {
    return id == 0x01ffc9a7 || id == 0xd9b67a26 || id == 0x0e89341c;
  }
  function uri(uint256) external view returns (string memory) { return template; }
}

contract BareNFT {
  function ownerOf(uint256) external pure returns (address) { return address(0xBEEF); }
  function tokenURI(uint256) external pure returns (string memory) { return "data:application/json,%7B%22name%22%3A%22bare%22%7D"; }
}
`

/**
 * ENS Universal Resolver stand-in: the two functions viem's ENS actions call (resolveWithGateways,
 * reverseWithGateways), answering addr(bytes32) and text(bytes32,string) from records set here, and
 * ResolverNotFound for unknown names like the real one. A name marked offchain answers with an
 * ERC-3668 OffchainLookup to `gateway` (CCIP-Read), whose answer the callback passes through.
 */
export const ENS_SOL = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract UniversalResolverStandIn {
  error ResolverNotFound(bytes name);
  error OffchainLookup(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData);
  mapping(bytes32 => bool) public known;
  mapping(bytes32 => address) public addrOf;
  mapping(bytes32 => mapping(string => string)) internal texts;
  mapping(address => string) public primary;
  mapping(bytes32 => string) public offchainGateway;

  function setAddr(bytes32 node, address a) external { known[node] = true; addrOf[node] = a; }
  function setText(bytes32 node, string calldata key, string calldata value) external { known[node] = true; texts[node][key] = value; }
  function setPrimary(address a, string calldata name) external { primary[a] = name; }
  function setOffchain(bytes32 node, string calldata gateway) external { known[node] = true; offchainGateway[node] = gateway; }

  function resolveWithGateways(bytes calldata name, bytes calldata data, string[] calldata) external view returns (bytes memory, address) {
    bytes32 node = bytes32(data[4:36]);
    if (!known[node]) revert ResolverNotFound(name);
    if (bytes(offchainGateway[node]).length > 0) {
      string[] memory urls = new string[](1);
      urls[0] = offchainGateway[node];
      revert OffchainLookup(address(this), urls, data, this.resolveCallback.selector, "");
    }
    bytes4 sel = bytes4(data[:4]);
    if (sel == 0x3b3b57de) return (abi.encode(addrOf[node]), address(this));
    if (sel == 0x59d1d43c) {
      (, string memory key) = abi.decode(data[4:], (bytes32, string));
      return (abi.encode(texts[node][key]), address(this));
    }
    return ("", address(this));
  }
  function resolveCallback(bytes calldata response, bytes calldata) external view returns (bytes memory, address) {
    return (response, address(this));
  }
  function reverseWithGateways(bytes calldata lookupAddress, uint256, string[] calldata) external view returns (string memory, address, address) {
    address a = address(bytes20(lookupAddress));
    return (primary[a], address(this), address(this));
  }
}
`

/** Uniswap's MerkleDistributor (github.com/Uniswap/merkle-distributor, MerkleDistributor.sol) in its essentials: same leaf, same sorted-pair proof, same claimed bitmap. */
export const AIRDROP_SOL = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC20Transfer {
  function transfer(address to, uint256 amount) external returns (bool);
}

contract MerkleDistributorStandIn {
  address public immutable token;
  bytes32 public immutable merkleRoot;
  mapping(uint256 => uint256) private claimedBitMap;
  event Claimed(uint256 index, address account, uint256 amount);

  constructor(address token_, bytes32 merkleRoot_) {
    token = token_;
    merkleRoot = merkleRoot_;
  }
  function isClaimed(uint256 index) public view returns (bool) {
    uint256 word = claimedBitMap[index / 256];
    uint256 mask = (1 << (index % 256));
    return word & mask == mask;
  }
  function claim(uint256 index, address account, uint256 amount, bytes32[] calldata merkleProof) external {
    require(!isClaimed(index), "MerkleDistributor: Drop already claimed.");
    bytes32 node = keccak256(abi.encodePacked(index, account, amount));
    bytes32 h = node;
    for (uint256 i = 0; i < merkleProof.length; i++) {
      bytes32 p = merkleProof[i];
      h = h <= p ? keccak256(abi.encodePacked(h, p)) : keccak256(abi.encodePacked(p, h));
    }
    require(h == merkleRoot, "MerkleDistributor: Invalid proof.");
    claimedBitMap[index / 256] |= (1 << (index % 256));
    require(IERC20Transfer(token).transfer(account, amount), "MerkleDistributor: Transfer failed.");
    emit Claimed(index, account, amount);
  }
}
`
