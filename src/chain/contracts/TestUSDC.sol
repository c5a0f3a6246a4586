// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title TestUSDC
/// @notice A test dollar token for the local dev chain. It speaks the same interface as USDC on
/// Base (ERC-20 with 6 decimals, EIP-712 domain "USDC" version "2", EIP-3009 authorizations,
/// EIP-2612 permit) so that x402 clients and our relayers work against it unchanged.
/// @dev The runtime code is installed with anvil_setCode at the canonical USDC address, so the
/// contract keeps no state that a constructor would have to set: name, symbol and the domain are
/// computed at call time, and every storage slot starts at zero. `mint` is open to anyone: this
/// contract must never be deployed to a real network.
contract TestUSDC {
    // ---- storage: zero-initialised only (see @dev above) ----
    mapping(address => uint256) private _balances;
    mapping(address => mapping(address => uint256)) private _allowances;
    uint256 private _totalSupply;
    mapping(address => mapping(bytes32 => bool)) private _authorizationStates;
    mapping(address => uint256) private _permitNonces;

    // ---- EIP-712 type hashes, the strings USDC (FiatToken v2) signs over ----
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");
    bytes32 public constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    bytes32 private constant _DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant _NAME_HASH = keccak256("USDC");
    bytes32 private constant _VERSION_HASH = keccak256("2");

    /// secp256k1n / 2: signatures with a larger s are malleable copies and are refused.
    uint256 private constant _HALF_CURVE_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    /// EIP-1271 magic value, bytes4(keccak256("isValidSignature(bytes32,bytes)")).
    bytes4 private constant _ERC1271_MAGIC = 0x1626ba7e;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);
    event Mint(address indexed minter, address indexed to, uint256 amount);

    // ---- metadata ----

    function name() external pure returns (string memory) {
        return "USDC";
    }

    function symbol() external pure returns (string memory) {
        return "USDC";
    }

    function decimals() external pure returns (uint8) {
        return 6;
    }

    function version() external pure returns (string memory) {
        return "2";
    }

    /// Computed per call so the separator follows the address the code was placed at and the
    /// chain it runs on.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(_DOMAIN_TYPEHASH, _NAME_HASH, _VERSION_HASH, block.chainid, address(this)));
    }

    /// EIP-5267: lets wallets and SDKs discover the domain instead of assuming it.
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name_,
            string memory version_,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        // 0x0f: name, version, chainId and verifyingContract are present; no salt.
        return (hex"0f", "USDC", "2", block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    // ---- ERC-20 ----

    function totalSupply() external view returns (uint256) {
        return _totalSupply;
    }

    function balanceOf(address account) external view returns (uint256) {
        return _balances[account];
    }

    function allowance(address owner, address spender) external view returns (uint256) {
        return _allowances[owner][spender];
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        _approve(msg.sender, spender, value);
        return true;
    }

    function increaseAllowance(address spender, uint256 increment) external returns (bool) {
        _approve(msg.sender, spender, _allowances[msg.sender][spender] + increment);
        return true;
    }

    function decreaseAllowance(address spender, uint256 decrement) external returns (bool) {
        uint256 current = _allowances[msg.sender][spender];
        require(current >= decrement, "TestUSDC: decreased allowance below zero");
        _approve(msg.sender, spender, current - decrement);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 current = _allowances[from][msg.sender];
        require(current >= value, "TestUSDC: transfer amount exceeds allowance");
        // An unlimited allowance stays unlimited, as with most tokens.
        if (current != type(uint256).max) _allowances[from][msg.sender] = current - value;
        _transfer(from, to, value);
        return true;
    }

    /// Open mint: the dev chain's faucet. Never deploy this contract to a real network.
    function mint(address to, uint256 amount) external returns (bool) {
        require(to != address(0), "TestUSDC: mint to the zero address");
        _totalSupply += amount;
        _balances[to] += amount;
        emit Mint(msg.sender, to, amount);
        emit Transfer(address(0), to, amount);
        return true;
    }

    // ---- EIP-3009 ----

    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, signature);
    }

    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _receiveWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _receiveWithAuthorization(from, to, value, validAfter, validBefore, nonce, signature);
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        _cancelAuthorization(authorizer, nonce, abi.encodePacked(r, s, v));
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) external {
        _cancelAuthorization(authorizer, nonce, signature);
    }

    // ---- EIP-2612 ----

    function nonces(address owner) external view returns (uint256) {
        return _permitNonces[owner];
    }

    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        require(deadline >= block.timestamp, "TestUSDC: permit is expired");
        bytes32 structHash =
            keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, _permitNonces[owner]++, deadline));
        _requireValidSignature(owner, _typedDataHash(structHash), abi.encodePacked(r, s, v));
        _approve(owner, spender, value);
    }

    // ---- internals ----

    function _transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        _requireUsableAuthorization(from, nonce, validAfter, validBefore);
        bytes32 structHash = keccak256(
            abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce)
        );
        _requireValidSignature(from, _typedDataHash(structHash), signature);
        _markAuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        // Only the payee may submit, so a front-runner cannot consume the authorization first.
        require(to == msg.sender, "TestUSDC: caller must be the payee");
        _requireUsableAuthorization(from, nonce, validAfter, validBefore);
        bytes32 structHash = keccak256(
            abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce)
        );
        _requireValidSignature(from, _typedDataHash(structHash), signature);
        _markAuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) private {
        require(!_authorizationStates[authorizer][nonce], "TestUSDC: authorization is used or canceled");
        bytes32 structHash = keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce));
        _requireValidSignature(authorizer, _typedDataHash(structHash), signature);
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    function _requireUsableAuthorization(address authorizer, bytes32 nonce, uint256 validAfter, uint256 validBefore)
        private
        view
    {
        require(block.timestamp > validAfter, "TestUSDC: authorization is not yet valid");
        require(block.timestamp < validBefore, "TestUSDC: authorization is expired");
        require(!_authorizationStates[authorizer][nonce], "TestUSDC: authorization is used or canceled");
    }

    function _markAuthorizationUsed(address authorizer, bytes32 nonce) private {
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationUsed(authorizer, nonce);
    }

    function _typedDataHash(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
    }

    /// An EOA must sign with ECDSA; a contract account (smart wallet) is asked via EIP-1271, as
    /// USDC does since v2.2.
    function _requireValidSignature(address signer, bytes32 digest, bytes memory signature) private view {
        if (signer.code.length == 0) {
            address recovered = _recover(digest, signature);
            require(recovered != address(0) && recovered == signer, "TestUSDC: invalid signature");
            return;
        }
        (bool ok, bytes memory ret) =
            signer.staticcall(abi.encodeWithSelector(_ERC1271_MAGIC, digest, signature));
        require(ok && ret.length >= 32 && abi.decode(ret, (bytes4)) == _ERC1271_MAGIC, "TestUSDC: invalid signature");
    }

    /// Strict ECDSA recovery: 65-byte r||s||v, v of 27 or 28, low s. Returns address(0) on any
    /// malformed input so the caller's single equality check covers every failure.
    function _recover(bytes32 digest, bytes memory signature) private pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (uint256(s) > _HALF_CURVE_ORDER) return address(0);
        if (v != 27 && v != 28) return address(0);
        return ecrecover(digest, v, r, s);
    }

    function _transfer(address from, address to, uint256 value) private {
        require(from != address(0), "TestUSDC: transfer from the zero address");
        require(to != address(0), "TestUSDC: transfer to the zero address");
        uint256 fromBalance = _balances[from];
        require(fromBalance >= value, "TestUSDC: transfer amount exceeds balance");
        unchecked {
            _balances[from] = fromBalance - value;
        }
        _balances[to] += value;
        emit Transfer(from, to, value);
    }

    function _approve(address owner, address spender, uint256 value) private {
        require(owner != address(0), "TestUSDC: approve from the zero address");
        require(spender != address(0), "TestUSDC: approve to the zero address");
        _allowances[owner][spender] = value;
        emit Approval(owner, spender, value);
    }
}
