// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC3009ReceiveMin {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/// @title ERC3009DepositCollector (Tollgate dev-chain build)
/// @notice Pulls a batch-settlement deposit with the payer's ERC-3009 `receiveWithAuthorization` (which
/// only this collector, the authorization's `to`, may redeem) and forwards it to the settlement contract.
/// The authorization's nonce binds it to the channel: keccak256(abi.encode(channelId, salt)).
/// Written by Tollgate for the embedded dev chain; production uses the audited canonical deployment.
contract ERC3009DepositCollector {
    /// @notice The only caller of `collect`; set at construction (an immutable in the runtime code).
    address public immutable x402BatchSettlement;

    error OnlyX402BatchSettlement();
    error InvalidX402BatchSettlementAddress();
    error TokenTransferFailed();

    constructor(address settlement) {
        if (settlement == address(0)) revert InvalidX402BatchSettlementAddress();
        x402BatchSettlement = settlement;
    }

    /// @param collectorData abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature)
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != x402BatchSettlement) revert OnlyX402BatchSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        IERC3009ReceiveMin(token).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, keccak256(abi.encode(channelId, salt)), signature
        );
        (bool ok, bytes memory out) =
            token.call(abi.encodeWithSignature("transfer(address,uint256)", x402BatchSettlement, amount));
        if (!ok || (out.length != 0 && !abi.decode(out, (bool)))) revert TokenTransferFailed();
    }
}
