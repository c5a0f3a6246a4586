// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title DeferredPaymentEscrow
/// @notice Escrow for the x402 `deferred` scheme: buyers deposit ERC-20 tokens for a seller, sign
/// EIP-712 vouchers whose `valueAggregate` only grows, and the seller (or anyone on its behalf)
/// collects the difference between a voucher's aggregate and what was already collected for its
/// id. A buyer gets unused funds back through a thawing period, which gives sellers time to
/// collect what they are owed. Deposits and flushes can also be signed by the buyer and sent by a
/// facilitator.
/// @dev Tollgate's own implementation of the interface in edgeandnode/x402
/// `specs/schemes/deferred/scheme_deferred_evm_escrow_contract.md`, with the Voucher of the
/// coinbase/x402 `scheme_deferred_evm.md` text: nine fields, no `expiry`. Differences from the
/// escrow text, on purpose:
///  - no voucher expiry: a voucher stays collectable as long as the buyer's escrow holds funds;
///    the thawing period is what protects the seller, and withdrawing is what ends the buyer's
///    exposure;
///  - `isNonceUsed(buyer, nonce)` is added, so a facilitator can check the authorization nonce the
///    scheme text tells it to check; deposit, flush and flush-all authorizations share one nonce
///    space per buyer;
///  - fee-on-transfer and rebasing tokens are not supported (deposits credit the amount asked).
/// The EIP-712 domain is computed per call, and the constructor sets only the immutable thawing
/// period, so the runtime code can be installed at any address (the dev chain does this).
contract DeferredPaymentEscrow {
    // ---- errors ----

    error InvalidAddress(address provided);
    error InvalidAmount(uint256 provided);
    error InvalidAsset(address provided);
    error InvalidThawingPeriod(uint256 provided, uint256 maximum);
    error InsufficientBalance(uint256 available, uint256 requested);
    error NoThawingInProgress(address buyer, address seller, address asset);
    error ThawingPeriodNotCompleted(uint256 currentTime, uint256 thawEndTime);
    error InvalidEscrow(address provided, address expected);
    error InvalidChainId(uint256 provided, uint256 expected);
    error InvalidSignature(bytes32 voucherId, address buyer);
    error NoDepositsProvided();
    error NoVouchersProvided();
    error AuthorizationExpired(uint64 expiry, uint256 currentTime);
    error NonceAlreadyUsed(bytes32 nonce);
    error InvalidAuthorization();
    error LengthMismatch(uint256 voucherIds, uint256 valueAggregates);
    error TokenTransferFailed(address asset);
    error Reentrancy();

    // ---- structs ----

    /// `balance` includes `thawingAmount`; what may still be thawed is `balance - thawingAmount`.
    struct EscrowAccount {
        uint256 balance;
        uint256 thawingAmount;
        uint64 thawEndTime;
    }

    struct Voucher {
        bytes32 id;
        address buyer;
        address seller;
        uint256 valueAggregate;
        address asset;
        uint64 timestamp;
        uint256 nonce;
        address escrow;
        uint256 chainId;
    }

    struct DepositInput {
        address seller;
        uint256 amount;
    }

    struct SignedVoucher {
        Voucher voucher;
        bytes signature;
    }

    struct DepositAuthorization {
        address buyer;
        address seller;
        address asset;
        uint256 amount;
        bytes32 nonce;
        uint64 expiry;
    }

    struct FlushAuthorization {
        address buyer;
        address seller;
        address asset;
        bytes32 nonce;
        uint64 expiry;
    }

    struct FlushAllAuthorization {
        address buyer;
        bytes32 nonce;
        uint64 expiry;
    }

    /// A (seller, asset) pair a buyer has deposited for, so flush-all can find every account.
    struct AccountKey {
        address seller;
        address asset;
    }

    // ---- events ----

    event Deposited(address indexed buyer, address indexed seller, address indexed asset, uint256 amount, uint256 newBalance);
    event ThawInitiated(
        address indexed buyer,
        address indexed seller,
        address indexed asset,
        uint256 newThawingAmount,
        uint256 previousThawingAmount,
        uint256 newThawEndTime,
        uint256 previousThawEndTime
    );
    event ThawCancelled(address indexed buyer, address indexed seller, address indexed asset, uint256 amount);
    event Withdrawn(address indexed buyer, address indexed seller, address indexed asset, uint256 amount, uint256 remainingBalance);
    event VoucherCollected(
        bytes32 indexed voucherId, address indexed buyer, address indexed seller, address asset, uint256 amount, uint256 totalCollected
    );
    event VoucherAlreadyCollected(
        bytes32 indexed voucherId, address indexed buyer, address indexed seller, address asset, uint256 totalCollected
    );
    event VoucherNoCollectableBalance(
        bytes32 indexed voucherId, address indexed buyer, address indexed seller, address asset, uint256 outstanding, uint256 alreadyCollected
    );
    event DepositAuthorized(address indexed buyer, address indexed seller, address indexed asset, uint256 amount, bytes32 nonce);
    event FlushAuthorized(address indexed buyer, address indexed seller, address indexed asset, bytes32 nonce, bool thawing);
    event FlushAllAuthorized(address indexed buyer, bytes32 nonce, uint256 accountsFlushed);

    // ---- constants ----

    uint256 public constant MAX_THAWING_PERIOD = 30 days;

    bytes32 public constant VOUCHER_TYPEHASH = keccak256(
        "Voucher(bytes32 id,address buyer,address seller,uint256 valueAggregate,address asset,uint64 timestamp,uint256 nonce,address escrow,uint256 chainId)"
    );
    bytes32 public constant DEPOSIT_AUTHORIZATION_TYPEHASH = keccak256(
        "DepositAuthorization(address buyer,address seller,address asset,uint256 amount,bytes32 nonce,uint64 expiry)"
    );
    bytes32 public constant FLUSH_AUTHORIZATION_TYPEHASH =
        keccak256("FlushAuthorization(address buyer,address seller,address asset,bytes32 nonce,uint64 expiry)");
    bytes32 public constant FLUSH_ALL_AUTHORIZATION_TYPEHASH =
        keccak256("FlushAllAuthorization(address buyer,bytes32 nonce,uint64 expiry)");

    bytes32 private constant _DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant _NAME_HASH = keccak256("DeferredPaymentEscrow");
    bytes32 private constant _VERSION_HASH = keccak256("1");

    /// secp256k1n / 2: signatures with a larger s are malleable copies and are refused.
    uint256 private constant _HALF_CURVE_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    /// ERC-1271 magic value, bytes4(keccak256("isValidSignature(bytes32,bytes)")).
    bytes4 private constant _ERC1271_MAGIC = 0x1626ba7e;

    uint256 public immutable THAWING_PERIOD;

    // ---- storage (all zero-initialised: the dev chain installs runtime code without a constructor run) ----

    uint256 private _locked;
    mapping(address buyer => mapping(address seller => mapping(address asset => EscrowAccount))) private _accounts;
    mapping(address buyer => mapping(address seller => mapping(address asset => mapping(bytes32 id => uint256)))) private _collected;
    mapping(address buyer => mapping(bytes32 nonce => bool)) private _usedNonces;
    mapping(address buyer => AccountKey[]) private _buyerAccounts;
    mapping(address buyer => mapping(address seller => mapping(address asset => bool))) private _known;

    constructor(uint256 thawingPeriod) {
        if (thawingPeriod == 0 || thawingPeriod > MAX_THAWING_PERIOD) {
            revert InvalidThawingPeriod(thawingPeriod, MAX_THAWING_PERIOD);
        }
        THAWING_PERIOD = thawingPeriod;
    }

    /// Token calls are the only external calls that can reach back in; every state-changing entry
    /// point holds this lock, and each also follows checks-effects-interactions on its own.
    modifier nonReentrant() {
        if (_locked == 1) revert Reentrancy();
        _locked = 1;
        _;
        _locked = 0;
    }

    // ---- deposits ----

    function deposit(address seller, address asset, uint256 amount) external nonReentrant {
        _deposit(msg.sender, msg.sender, seller, asset, amount);
    }

    /// Deposits the caller's tokens into `buyer`'s account: a sponsor or a top-up service pays.
    function depositTo(address buyer, address seller, address asset, uint256 amount) external nonReentrant {
        _deposit(msg.sender, buyer, seller, asset, amount);
    }

    function depositMany(address asset, DepositInput[] calldata deposits) external nonReentrant {
        if (deposits.length == 0) revert NoDepositsProvided();
        for (uint256 i = 0; i < deposits.length; i++) {
            _deposit(msg.sender, msg.sender, deposits[i].seller, asset, deposits[i].amount);
        }
    }

    /// Pulls `auth.amount` from the buyer (who must have approved this contract, e.g. by an
    /// EIP-2612 permit sent just before) into the buyer's account for `auth.seller`.
    function depositWithAuthorization(DepositAuthorization calldata auth, bytes calldata signature) external nonReentrant {
        _useAuthorization(auth.buyer, auth.nonce, auth.expiry, _depositAuthorizationDigest(auth), signature);
        emit DepositAuthorized(auth.buyer, auth.seller, auth.asset, auth.amount, auth.nonce);
        _deposit(auth.buyer, auth.buyer, auth.seller, auth.asset, auth.amount);
    }

    // ---- thawing and withdrawal ----

    /// Marks `amount` more for withdrawal; the thawing period restarts for the whole thawing amount.
    function thaw(address seller, address asset, uint256 amount) external nonReentrant {
        if (amount == 0) revert InvalidAmount(amount);
        EscrowAccount storage account = _accounts[msg.sender][seller][asset];
        uint256 available = account.balance - account.thawingAmount;
        if (amount > available) revert InsufficientBalance(available, amount);
        _thaw(msg.sender, seller, asset, account, amount);
    }

    function cancelThaw(address seller, address asset) external nonReentrant {
        EscrowAccount storage account = _accounts[msg.sender][seller][asset];
        uint256 amount = account.thawingAmount;
        if (amount == 0) revert NoThawingInProgress(msg.sender, seller, asset);
        account.thawingAmount = 0;
        account.thawEndTime = 0;
        emit ThawCancelled(msg.sender, seller, asset, amount);
    }

    function withdraw(address seller, address asset) external nonReentrant {
        EscrowAccount storage account = _accounts[msg.sender][seller][asset];
        if (account.thawingAmount == 0) revert NoThawingInProgress(msg.sender, seller, asset);
        if (block.timestamp < account.thawEndTime) revert ThawingPeriodNotCompleted(block.timestamp, account.thawEndTime);
        _withdraw(msg.sender, seller, asset, account);
    }

    /// Withdraws what has finished thawing, then starts thawing the rest of the account.
    function flushWithAuthorization(FlushAuthorization calldata auth, bytes calldata signature) external nonReentrant {
        _useAuthorization(auth.buyer, auth.nonce, auth.expiry, _flushAuthorizationDigest(auth), signature);
        bool thawing = _flush(auth.buyer, auth.seller, auth.asset);
        emit FlushAuthorized(auth.buyer, auth.seller, auth.asset, auth.nonce, thawing);
    }

    /// Flushes every account the buyer has deposited into.
    function flushAllWithAuthorization(FlushAllAuthorization calldata auth, bytes calldata signature) external nonReentrant {
        _useAuthorization(auth.buyer, auth.nonce, auth.expiry, _flushAllAuthorizationDigest(auth), signature);
        AccountKey[] storage keys = _buyerAccounts[auth.buyer];
        uint256 flushed = 0;
        for (uint256 i = 0; i < keys.length; i++) {
            EscrowAccount storage account = _accounts[auth.buyer][keys[i].seller][keys[i].asset];
            if (account.balance == 0) continue;
            _flush(auth.buyer, keys[i].seller, keys[i].asset);
            flushed++;
        }
        emit FlushAllAuthorized(auth.buyer, auth.nonce, flushed);
    }

    // ---- collection ----

    /// Pays the seller what the voucher owes beyond what was collected for its id, or as much of
    /// it as the account holds; the rest stays collectable with the same voucher later.
    function collect(Voucher calldata voucher, bytes calldata signature) external nonReentrant {
        _collect(voucher, signature);
    }

    function collectMany(SignedVoucher[] calldata vouchers) external nonReentrant {
        if (vouchers.length == 0) revert NoVouchersProvided();
        for (uint256 i = 0; i < vouchers.length; i++) {
            _collect(vouchers[i].voucher, vouchers[i].signature);
        }
    }

    // ---- views ----

    function getAccount(address buyer, address seller, address asset) external view returns (EscrowAccount memory) {
        return _accounts[buyer][seller][asset];
    }

    /// The balance still free after the thawing amount and the given vouchers' outstanding
    /// amounts, the buyer's allowance to this contract, and the buyer's EIP-2612 nonce on the
    /// asset (0 for a token without `nonces`).
    function getAccountDetails(
        address buyer,
        address seller,
        address asset,
        bytes32[] calldata voucherIds,
        uint256[] calldata valueAggregates
    ) external view returns (uint256 balance, uint256 allowance, uint256 nonce) {
        if (voucherIds.length != valueAggregates.length) revert LengthMismatch(voucherIds.length, valueAggregates.length);
        EscrowAccount storage account = _accounts[buyer][seller][asset];
        balance = account.balance - account.thawingAmount;
        for (uint256 i = 0; i < voucherIds.length && balance > 0; i++) {
            uint256 collected = _collected[buyer][seller][asset][voucherIds[i]];
            uint256 outstanding = valueAggregates[i] > collected ? valueAggregates[i] - collected : 0;
            balance = outstanding >= balance ? 0 : balance - outstanding;
        }
        allowance = _readUint(asset, abi.encodeWithSignature("allowance(address,address)", buyer, address(this)));
        nonce = _readUint(asset, abi.encodeWithSignature("nonces(address)", buyer));
    }

    function getVoucherCollected(address buyer, address seller, address asset, bytes32 voucherId) external view returns (uint256) {
        return _collected[buyer][seller][asset][voucherId];
    }

    /// `outstanding`: what the voucher still owes; `collectable`: how much of that the account
    /// could pay now. Neither checks the signature.
    function getOutstandingAndCollectableAmount(Voucher calldata voucher)
        external
        view
        returns (uint256 outstanding, uint256 collectable)
    {
        (outstanding, collectable,) = _amounts(voucher);
    }

    function isVoucherSignatureValid(Voucher calldata voucher, bytes calldata signature) external view returns (bool) {
        return _isValidSignature(voucher.buyer, _voucherDigest(voucher), signature);
    }

    /// The signature only; expiry and nonce are checked by `depositWithAuthorization` and readable
    /// through `isNonceUsed`.
    function isDepositAuthorizationValid(DepositAuthorization calldata auth, bytes calldata signature)
        external
        view
        returns (bool)
    {
        return _isValidSignature(auth.buyer, _depositAuthorizationDigest(auth), signature);
    }

    function isFlushAuthorizationValid(FlushAuthorization calldata auth, bytes calldata signature) external view returns (bool) {
        return _isValidSignature(auth.buyer, _flushAuthorizationDigest(auth), signature);
    }

    function isFlushAllAuthorizationValid(FlushAllAuthorization calldata auth, bytes calldata signature)
        external
        view
        returns (bool)
    {
        return _isValidSignature(auth.buyer, _flushAllAuthorizationDigest(auth), signature);
    }

    /// Whether `nonce` was used by one of `buyer`'s deposit, flush or flush-all authorizations.
    function isNonceUsed(address buyer, bytes32 nonce) external view returns (bool) {
        return _usedNonces[buyer][nonce];
    }

    /// Computed per call so the separator follows the address the code runs at and the chain.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(_DOMAIN_TYPEHASH, _NAME_HASH, _VERSION_HASH, block.chainid, address(this)));
    }

    /// EIP-5267: lets wallets and SDKs discover the domain instead of assuming it.
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
        return (hex"0f", "DeferredPaymentEscrow", "1", block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    // ---- internals: accounts ----

    function _deposit(address payer, address buyer, address seller, address asset, uint256 amount) private {
        if (buyer == address(0)) revert InvalidAddress(buyer);
        if (seller == address(0)) revert InvalidAddress(seller);
        if (asset.code.length == 0) revert InvalidAsset(asset);
        if (amount == 0) revert InvalidAmount(amount);
        EscrowAccount storage account = _accounts[buyer][seller][asset];
        account.balance += amount;
        if (!_known[buyer][seller][asset]) {
            _known[buyer][seller][asset] = true;
            _buyerAccounts[buyer].push(AccountKey(seller, asset));
        }
        emit Deposited(buyer, seller, asset, amount, account.balance);
        _pull(asset, payer, amount);
    }

    function _thaw(address buyer, address seller, address asset, EscrowAccount storage account, uint256 amount) private {
        uint256 previousAmount = account.thawingAmount;
        uint256 previousEnd = account.thawEndTime;
        account.thawingAmount = previousAmount + amount;
        account.thawEndTime = uint64(block.timestamp + THAWING_PERIOD);
        emit ThawInitiated(buyer, seller, asset, account.thawingAmount, previousAmount, account.thawEndTime, previousEnd);
    }

    /// Pays out the thawing amount. It never exceeds the balance: thaw takes only what is free,
    /// and a collection that lowers the balance lowers it too.
    function _withdraw(address buyer, address seller, address asset, EscrowAccount storage account) private {
        uint256 amount = account.thawingAmount;
        account.balance -= amount;
        account.thawingAmount = 0;
        account.thawEndTime = 0;
        emit Withdrawn(buyer, seller, asset, amount, account.balance);
        _push(asset, buyer, amount);
    }

    /// Withdraws a finished thaw, then thaws whatever is left free (which restarts the period for
    /// a thaw still running). Returns whether it thawed. All effects come before the one transfer.
    function _flush(address buyer, address seller, address asset) private returns (bool thawing) {
        EscrowAccount storage account = _accounts[buyer][seller][asset];
        uint256 payout = 0;
        if (account.thawingAmount > 0 && block.timestamp >= account.thawEndTime) {
            payout = account.thawingAmount;
            account.balance -= payout;
            account.thawingAmount = 0;
            account.thawEndTime = 0;
            emit Withdrawn(buyer, seller, asset, payout, account.balance);
        }
        uint256 free = account.balance - account.thawingAmount;
        if (free > 0) {
            _thaw(buyer, seller, asset, account, free);
            thawing = true;
        }
        if (payout > 0) _push(asset, buyer, payout);
    }

    // ---- internals: vouchers ----

    /// outstanding: owed beyond what was collected; collectable: the part the balance covers.
    function _amounts(Voucher calldata voucher)
        private
        view
        returns (uint256 outstanding, uint256 collectable, uint256 alreadyCollected)
    {
        alreadyCollected = _collected[voucher.buyer][voucher.seller][voucher.asset][voucher.id];
        outstanding = voucher.valueAggregate > alreadyCollected ? voucher.valueAggregate - alreadyCollected : 0;
        uint256 balance = _accounts[voucher.buyer][voucher.seller][voucher.asset].balance;
        collectable = outstanding < balance ? outstanding : balance;
    }

    function _collect(Voucher calldata voucher, bytes calldata signature) private {
        if (voucher.escrow != address(this)) revert InvalidEscrow(voucher.escrow, address(this));
        if (voucher.chainId != block.chainid) revert InvalidChainId(voucher.chainId, block.chainid);
        if (!_isValidSignature(voucher.buyer, _voucherDigest(voucher), signature)) {
            revert InvalidSignature(voucher.id, voucher.buyer);
        }
        (uint256 outstanding, uint256 amount, uint256 alreadyCollected) = _amounts(voucher);
        // A batch goes on past a voucher that owes nothing now; events say what happened to it.
        if (outstanding == 0) {
            emit VoucherAlreadyCollected(voucher.id, voucher.buyer, voucher.seller, voucher.asset, alreadyCollected);
            return;
        }
        if (amount == 0) {
            emit VoucherNoCollectableBalance(voucher.id, voucher.buyer, voucher.seller, voucher.asset, outstanding, alreadyCollected);
            return;
        }
        EscrowAccount storage account = _accounts[voucher.buyer][voucher.seller][voucher.asset];
        account.balance -= amount;
        // sellers collect from the whole balance, thawing part included
        if (account.thawingAmount > account.balance) account.thawingAmount = account.balance;
        uint256 total = alreadyCollected + amount;
        _collected[voucher.buyer][voucher.seller][voucher.asset][voucher.id] = total;
        emit VoucherCollected(voucher.id, voucher.buyer, voucher.seller, voucher.asset, amount, total);
        _push(voucher.asset, voucher.seller, amount);
    }

    // ---- internals: signatures ----

    function _useAuthorization(address buyer, bytes32 nonce, uint64 expiry, bytes32 digest, bytes calldata signature)
        private
    {
        if (block.timestamp > expiry) revert AuthorizationExpired(expiry, block.timestamp);
        if (_usedNonces[buyer][nonce]) revert NonceAlreadyUsed(nonce);
        if (!_isValidSignature(buyer, digest, signature)) revert InvalidAuthorization();
        _usedNonces[buyer][nonce] = true;
    }

    // Every struct here has only static fields, so abi.encode(typehash, struct) is exactly
    // EIP-712's encodeData: one 32-byte word per field, in declaration order.
    function _voucherDigest(Voucher calldata voucher) private view returns (bytes32) {
        return _typedDataHash(keccak256(abi.encode(VOUCHER_TYPEHASH, voucher)));
    }

    function _depositAuthorizationDigest(DepositAuthorization calldata auth) private view returns (bytes32) {
        return _typedDataHash(keccak256(abi.encode(DEPOSIT_AUTHORIZATION_TYPEHASH, auth)));
    }

    function _flushAuthorizationDigest(FlushAuthorization calldata auth) private view returns (bytes32) {
        return _typedDataHash(keccak256(abi.encode(FLUSH_AUTHORIZATION_TYPEHASH, auth)));
    }

    function _flushAllAuthorizationDigest(FlushAllAuthorization calldata auth) private view returns (bytes32) {
        return _typedDataHash(keccak256(abi.encode(FLUSH_ALL_AUTHORIZATION_TYPEHASH, auth)));
    }

    function _typedDataHash(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
    }

    /// ECDSA first (an EOA, or an EIP-7702 account signing with its key), then ERC-1271 for a
    /// contract account (a smart wallet).
    function _isValidSignature(address signer, bytes32 digest, bytes calldata signature) private view returns (bool) {
        if (signer == address(0)) return false;
        if (_recover(digest, signature) == signer) return true;
        if (signer.code.length == 0) return false;
        (bool ok, bytes memory ret) = signer.staticcall(abi.encodeWithSelector(_ERC1271_MAGIC, digest, signature));
        return ok && ret.length >= 32 && abi.decode(ret, (bytes4)) == _ERC1271_MAGIC;
    }

    /// Strict ECDSA recovery: 65-byte r||s||v, v of 27 or 28, low s; address(0) otherwise.
    function _recover(bytes32 digest, bytes calldata signature) private pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > _HALF_CURVE_ORDER) return address(0);
        if (v != 27 && v != 28) return address(0);
        return ecrecover(digest, v, r, s);
    }

    // ---- internals: tokens ----

    /// transferFrom that accepts tokens returning nothing (USDT-style) and refuses `false`.
    function _pull(address asset, address from, uint256 amount) private {
        _callToken(asset, abi.encodeWithSignature("transferFrom(address,address,uint256)", from, address(this), amount));
    }

    function _push(address asset, address to, uint256 amount) private {
        _callToken(asset, abi.encodeWithSignature("transfer(address,uint256)", to, amount));
    }

    function _callToken(address asset, bytes memory data) private {
        (bool ok, bytes memory ret) = asset.call(data);
        if (!ok || (ret.length > 0 && (ret.length < 32 || !abi.decode(ret, (bool))))) revert TokenTransferFailed(asset);
    }

    /// A uint256 view on the token, or 0 when the token lacks it.
    function _readUint(address asset, bytes memory data) private view returns (uint256) {
        (bool ok, bytes memory ret) = asset.staticcall(data);
        return ok && ret.length >= 32 ? abi.decode(ret, (uint256)) : 0;
    }
}
