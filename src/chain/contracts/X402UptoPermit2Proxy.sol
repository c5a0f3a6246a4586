// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice The part of Permit2's SignatureTransfer this proxy calls (Uniswap Permit2, MIT).
interface ISignatureTransferMin {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;
}

interface IERC20PermitMin {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;
}

/// @title X402UptoPermit2Proxy
/// @notice The spender of the x402 `upto` scheme's Permit2 signatures: the buyer signs a Permit2
/// `PermitWitnessTransferFrom` for at most `permitted.amount`, with a witness that fixes the
/// recipient (`to`), the only caller allowed to settle (`facilitator`) and the earliest settlement
/// time (`validAfter`). The facilitator then settles the actual amount, never more than permitted,
/// always to `to`.
/// @dev Tollgate's own implementation of the interface of the x402 upto proxy (the ABI and the
/// witness types `x402UptoPermit2ProxyABI` / `uptoPermit2WitnessTypes` of the x402 evm package), installed
/// at the canonical address 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002 on the embedded dev chain.
/// One difference from the reference, on purpose: the facilitator may also settle through
/// Multicall3 (msg.sender is Multicall3 and tx.origin the facilitator), so that upto payments share
/// the settlement batches of exact ones. The calldata Multicall3 runs is the facilitator's own
/// signed transaction, so this lets nobody else choose the amount.
contract X402UptoPermit2Proxy {
    ISignatureTransferMin public constant PERMIT2 = ISignatureTransferMin(0x000000000022D473030F116dDEE9F6B43aC78BA3);
    address internal constant MULTICALL3 = 0xcA11bde05977b3631167028862bE2a173976CA11;

    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    event Settled();
    event SettledWithPermit();
    /// @notice Ours, beside the interface's events: which payment (owner, Permit2 nonce) settled
    /// and for how much, so that a settlement batch's receipt tells each payment's fate.
    event UptoSettled(address indexed owner, uint256 indexed nonce, address indexed to, uint256 amount);

    error AmountExceedsPermitted();
    error InvalidDestination();
    error InvalidOwner();
    error InvalidPermit2Address();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();
    error ReentrancyGuardReentrantCall();
    error UnauthorizedFacilitator();

    uint256 private entered;

    modifier nonReentrant() {
        if (entered == 1) revert ReentrancyGuardReentrantCall();
        entered = 1;
        _;
        entered = 0;
    }

    /// @notice Moves `amount` (at most the permitted amount) from `owner` to `witness.to` through Permit2.
    function settle(
        ISignatureTransferMin.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _settle(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /// @notice As `settle`, after an EIP-2612 permit that approves Permit2 for the token (a permit
    /// that fails, e.g. one already used, does not stop the settlement).
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransferMin.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        if (permit2612.value < permit.permitted.amount) revert Permit2612AmountMismatch();
        try IERC20PermitMin(permit.permitted.token).permit(
            owner, address(PERMIT2), permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s
        ) {} catch {}
        _settle(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _settle(
        ISignatureTransferMin.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (!_maySettle(witness.facilitator)) revert UnauthorizedFacilitator();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        bytes32 witnessHash = keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter));
        PERMIT2.permitWitnessTransferFrom(
            permit,
            ISignatureTransferMin.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
        _afterSettle(owner, permit.nonce, witness.to, amount);
    }

    /// @dev Who may settle a payment whose witness names `facilitator`: the facilitator itself, as
    /// in the reference, or (ours) Multicall3 running a transaction the facilitator sent.
    function _maySettle(address facilitator) internal view virtual returns (bool) {
        return msg.sender == facilitator || (msg.sender == MULTICALL3 && tx.origin == facilitator);
    }

    /// @dev Runs after each settlement: ours logs which payment settled and for how much.
    function _afterSettle(address owner, uint256 nonce, address to, uint256 amount) internal virtual {
        emit UptoSettled(owner, nonce, to, amount);
    }
}
