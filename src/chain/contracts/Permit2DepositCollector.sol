// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice The part of Permit2's SignatureTransfer this collector calls (Uniswap Permit2, MIT).
interface IPermit2WitnessMin {
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

interface IERC2612Min {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;
}

/// @title Permit2DepositCollector (Tollgate dev-chain build)
/// @notice Pulls a batch-settlement deposit straight from the payer into the settlement contract with a
/// Permit2 witness transfer whose witness is the channel id (`DepositWitness(bytes32 channelId)`); the
/// payer signs with this collector as the spender. An optional EIP-2612 permit for Permit2 runs first
/// (best effort: a failing permit is skipped, e.g. when it was already used).
/// Written by Tollgate for the embedded dev chain; production uses the audited canonical deployment.
contract Permit2DepositCollector {
    address public immutable x402BatchSettlement;
    address public immutable PERMIT2;

    string public constant DEPOSIT_WITNESS_TYPE_STRING =
        "DepositWitness witness)DepositWitness(bytes32 channelId)TokenPermissions(address token,uint256 amount)";
    bytes32 public constant DEPOSIT_WITNESS_TYPEHASH = keccak256("DepositWitness(bytes32 channelId)");

    error OnlyX402BatchSettlement();
    error InvalidX402BatchSettlementAddress();
    error InvalidPermit2Address();
    error Permit2612AmountMismatch();

    constructor(address settlement, address permit2) {
        if (settlement == address(0)) revert InvalidX402BatchSettlementAddress();
        if (permit2 == address(0)) revert InvalidPermit2Address();
        x402BatchSettlement = settlement;
        PERMIT2 = permit2;
    }

    /// @param collectorData abi.encode(uint256 nonce, uint256 deadline, bytes permit2Signature, bytes eip2612PermitData)
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != x402BatchSettlement) revert OnlyX402BatchSettlement();
        (uint256 nonce, uint256 deadline, bytes memory signature, bytes memory permitData) =
            abi.decode(collectorData, (uint256, uint256, bytes, bytes));
        if (permitData.length > 0) _tryPermit(payer, token, amount, permitData);
        IPermit2WitnessMin(PERMIT2).permitWitnessTransferFrom(
            IPermit2WitnessMin.PermitTransferFrom(IPermit2WitnessMin.TokenPermissions(token, amount), nonce, deadline),
            IPermit2WitnessMin.SignatureTransferDetails(x402BatchSettlement, amount),
            payer,
            keccak256(abi.encode(DEPOSIT_WITNESS_TYPEHASH, channelId)),
            DEPOSIT_WITNESS_TYPE_STRING,
            signature
        );
    }

    function _tryPermit(address payer, address token, uint256 amount, bytes memory permitData) private {
        (uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) =
            abi.decode(permitData, (uint256, uint256, uint8, bytes32, bytes32));
        if (value != amount) revert Permit2612AmountMismatch();
        try IERC2612Min(token).permit(payer, PERMIT2, value, deadline, v, r, s) {} catch {}
    }
}
