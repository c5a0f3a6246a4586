// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice What a deposit collector offers the settlement contract: pull `amount` of `token` from
/// `payer` and hand it to the settlement contract, authorized by `collectorData`.
interface IBatchDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external;
}

interface IERC1271Min {
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4);
}

/// @title X402BatchSettlement (Tollgate dev-chain build)
/// @notice Unidirectional payment channels of the x402 `batch-settlement` scheme, written by Tollgate
/// from the scheme's specification and the official client's ABI, for the embedded dev chain only.
/// Production networks use the audited canonical deployment at the same address.
///
/// A channel is identified by the EIP-712 hash of its immutable ChannelConfig under this contract's
/// domain ("x402 Batch Settlement", "1", chain id, this address). The payer deposits; the receiver side
/// claims cumulative amounts against payer-signed vouchers (`claimed` only grows), and `settle` sweeps
/// what was claimed for a receiver and token in one transfer. Unclaimed escrow goes back to the payer
/// by cooperative refund or by a timed withdrawal.
///
/// The domain separator is computed from `address(this)` on every call (no immutables), so the runtime
/// code works wherever it is placed (anvil_setCode at the canonical address).
contract X402BatchSettlement {
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct WithdrawalState {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 900;
    uint40 public constant MAX_WITHDRAW_DELAY = 2_592_000;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant VERSION_HASH = keccak256("1");
    /// @dev transient-storage slot of the re-entrancy lock
    bytes32 private constant LOCK_SLOT = keccak256("tollgate.x402BatchSettlement.lock");
    uint256 private constant HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    mapping(bytes32 => ChannelState) public channels;
    mapping(bytes32 => uint256) public refundNonce;
    mapping(bytes32 => WithdrawalState) public pendingWithdrawals;
    mapping(address => mapping(address => ReceiverState)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    error InvalidChannel();
    error ZeroDeposit();
    error DepositOverflow();
    error InvalidSignature();
    error NotReceiverAuthorizer();
    error NotAuthorizedToClaim();
    error NotAuthorizedToRefund();
    error ClaimExceedsCeiling();
    error ClaimExceedsBalance();
    error WithdrawalAlreadyPending();
    error WithdrawalNotPending();
    error NotAuthorizedToFinalizeWithdraw();
    error WithdrawDelayNotElapsed();
    error NothingToWithdraw();
    error WithdrawAmountExceedsAvailable();
    error WithdrawDelayOutOfRange();
    error EmptyBatch();
    error DepositCollectionFailed();
    error InvalidCollector();
    error InvalidRefundNonce();
    error ZeroRefund();
    error Reentrancy();
    error TokenTransferFailed();

    modifier locked() {
        bytes32 slot = LOCK_SLOT;
        uint256 busy;
        assembly {
            busy := tload(slot)
        }
        if (busy != 0) revert Reentrancy();
        assembly {
            tstore(slot, 1)
        }
        _;
        assembly {
            tstore(slot, 0)
        }
    }

    // ---------------------------------------------------------------- deposits

    /// @notice Adds `amount` to a channel's escrow; `collector` pulls it from the payer.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        locked
    {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) revert InvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroDeposit();
        if (collector == address(0)) revert InvalidCollector();

        bytes32 id = getChannelId(config);
        ChannelState storage ch = channels[id];
        if (amount > type(uint128).max - ch.balance) revert DepositOverflow();
        ch.balance += amount;

        uint256 before = _balanceOf(config.token);
        IBatchDepositCollector(collector).collect(config.payer, config.token, amount, id, collectorData);
        if (_balanceOf(config.token) != before + amount) revert DepositCollectionFailed();

        if (ch.balance == amount && ch.totalClaimed == 0) emit ChannelCreated(id, config);
        emit Deposited(id, msg.sender, amount, ch.balance);
    }

    // ---------------------------------------------------------------- claims and settlement

    /// @notice Claims vouchers; the caller must be each channel's receiver or receiverAuthorizer.
    function claim(VoucherClaim[] calldata voucherClaims) external locked {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            ChannelConfig calldata c = voucherClaims[i].voucher.channel;
            if (msg.sender != c.receiver && msg.sender != c.receiverAuthorizer) revert NotAuthorizedToClaim();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @notice Claims vouchers of channels sharing one receiverAuthorizer, authorized by its signature
    /// over the ClaimBatch digest; anyone may submit.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        locked
    {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        if (!_validSignature(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert NotReceiverAuthorizer();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @notice Transfers everything claimed but not yet settled for (receiver, token) to the receiver.
    function settle(address receiver, address token) external locked {
        ReceiverState storage rs = receivers[receiver][token];
        uint128 amount = rs.totalClaimed - rs.totalSettled;
        if (amount == 0) return;
        rs.totalSettled = rs.totalClaimed;
        _transfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---------------------------------------------------------------- withdrawals and refunds

    /// @notice Starts the payer's timed withdrawal of unclaimed escrow.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external locked {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) revert InvalidChannel();
        if (amount == 0) revert NothingToWithdraw();
        bytes32 id = getChannelId(config);
        WithdrawalState storage ws = pendingWithdrawals[id];
        if (ws.initiatedAt != 0) revert WithdrawalAlreadyPending();
        ChannelState storage ch = channels[id];
        if (amount > ch.balance - ch.totalClaimed) revert WithdrawAmountExceedsAvailable();
        ws.amount = amount;
        ws.initiatedAt = uint40(block.timestamp);
        emit WithdrawInitiated(id, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// @notice Completes a timed withdrawal once its delay has passed; capped by what is still unclaimed.
    function finalizeWithdraw(ChannelConfig calldata config) external locked {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) {
            revert NotAuthorizedToFinalizeWithdraw();
        }
        bytes32 id = getChannelId(config);
        WithdrawalState storage ws = pendingWithdrawals[id];
        if (ws.initiatedAt == 0) revert WithdrawalNotPending();
        if (block.timestamp < uint256(ws.initiatedAt) + uint256(config.withdrawDelay)) {
            revert WithdrawDelayNotElapsed();
        }
        ChannelState storage ch = channels[id];
        uint128 unclaimed = ch.balance - ch.totalClaimed;
        uint128 amount = ws.amount < unclaimed ? ws.amount : unclaimed;
        ws.amount = 0;
        ws.initiatedAt = 0;
        ch.balance -= amount;
        emit WithdrawFinalized(id, msg.sender, amount);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(id, config);
        if (amount > 0) _transfer(config.token, config.payer, amount);
    }

    /// @notice Cooperative refund by the receiver side; capped by what is unclaimed.
    function refund(ChannelConfig calldata config, uint128 amount) external locked {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert NotAuthorizedToRefund();
        _refund(config, amount);
    }

    /// @notice Cooperative refund authorized by the receiverAuthorizer's Refund signature; anyone may submit.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external locked {
        bytes32 id = getChannelId(config);
        if (nonce != refundNonce[id]) revert InvalidRefundNonce();
        if (!_validSignature(config.receiverAuthorizer, getRefundDigest(id, nonce, amount), receiverAuthorizerSignature))
        {
            revert InvalidSignature();
        }
        _refund(config, amount);
    }

    // ---------------------------------------------------------------- multicall

    /// @notice Runs several calls on this contract in one transaction; reverts with the first failure.
    function multicall(bytes[] calldata data) external returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; ++i) {
            (bool ok, bytes memory out) = address(this).delegatecall(data[i]);
            if (!ok) {
                assembly {
                    revert(add(out, 32), mload(out))
                }
            }
            results[i] = out;
        }
    }

    // ---------------------------------------------------------------- views

    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _typedDigest(keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _typedDigest(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _typedDigest(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            VoucherClaim calldata vc = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH, getChannelId(vc.voucher.channel), vc.voucher.maxClaimableAmount, vc.totalClaimed
                )
            );
        }
        return _typedDigest(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name,
            string memory version,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", "x402 Batch Settlement", "1", block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    // ---------------------------------------------------------------- internals

    /// @dev A claim row: cumulative, so a row at or below what is already claimed changes nothing.
    function _applyClaim(VoucherClaim calldata vc) private {
        bytes32 id = getChannelId(vc.voucher.channel);
        ChannelState storage ch = channels[id];
        uint128 target = vc.totalClaimed;
        if (target <= ch.totalClaimed) return;
        if (target > vc.voucher.maxClaimableAmount) revert ClaimExceedsCeiling();
        if (target > ch.balance) revert ClaimExceedsBalance();

        bytes32 digest = getVoucherDigest(id, vc.voucher.maxClaimableAmount);
        address payerAuthorizer = vc.voucher.channel.payerAuthorizer;
        bool ok = payerAuthorizer != address(0)
            ? _recover(digest, vc.signature) == payerAuthorizer
            : _validSignature(vc.voucher.channel.payer, digest, vc.signature);
        if (!ok) revert InvalidSignature();

        uint128 delta = target - ch.totalClaimed;
        ch.totalClaimed = target;
        receivers[vc.voucher.channel.receiver][vc.voucher.channel.token].totalClaimed += delta;
        emit Claimed(id, msg.sender, delta, target);
    }

    function _refund(ChannelConfig calldata config, uint128 amount) private {
        if (amount == 0) revert ZeroRefund();
        bytes32 id = getChannelId(config);
        unchecked {
            refundNonce[id] += 1;
        }
        ChannelState storage ch = channels[id];
        uint128 unclaimed = ch.balance - ch.totalClaimed;
        uint128 paid = amount < unclaimed ? amount : unclaimed;
        if (paid == 0) return;
        ch.balance -= paid;
        WithdrawalState storage ws = pendingWithdrawals[id];
        if (ws.initiatedAt != 0) {
            if (paid >= ws.amount) {
                ws.amount = 0;
                ws.initiatedAt = 0;
            } else {
                ws.amount -= paid;
            }
        }
        emit Refunded(id, msg.sender, paid);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(id, config);
        _transfer(config.token, config.payer, paid);
    }

    function _typedDigest(bytes32 structHash) private view returns (bytes32) {
        bytes32 domain = keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
        return keccak256(abi.encodePacked("\x19\x01", domain, structHash));
    }

    /// @dev ecrecover of a 65-byte (r, s, v) signature with low s; address(0) when malformed.
    function _recover(bytes32 digest, bytes memory sig) private pure returns (address) {
        if (sig.length != 65) return address(0);
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(sig, 32))
            s := mload(add(sig, 64))
            v := byte(0, mload(add(sig, 96)))
        }
        if (uint256(s) > HALF_N) return address(0);
        if (v < 27) v += 27;
        return ecrecover(digest, v, r, s);
    }

    /// @dev An EOA's ECDSA signature, or else an EIP-1271 contract's approval.
    function _validSignature(address signer, bytes32 digest, bytes memory sig) private view returns (bool) {
        if (signer == address(0)) return false;
        if (_recover(digest, sig) == signer) return true;
        if (signer.code.length == 0) return false;
        (bool ok, bytes memory out) =
            signer.staticcall(abi.encodeWithSelector(IERC1271Min.isValidSignature.selector, digest, sig));
        return ok && out.length >= 32 && abi.decode(out, (bytes4)) == IERC1271Min.isValidSignature.selector;
    }

    function _balanceOf(address token) private view returns (uint256) {
        (bool ok, bytes memory out) = token.staticcall(abi.encodeWithSignature("balanceOf(address)", address(this)));
        if (!ok || out.length < 32) revert DepositCollectionFailed();
        return abi.decode(out, (uint256));
    }

    function _transfer(address token, address to, uint256 amount) private {
        (bool ok, bytes memory out) = token.call(abi.encodeWithSignature("transfer(address,uint256)", to, amount));
        if (!ok || (out.length != 0 && !abi.decode(out, (bool)))) revert TokenTransferFailed();
        if (out.length == 0 && token.code.length == 0) revert TokenTransferFailed();
    }
}
