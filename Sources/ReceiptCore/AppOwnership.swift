public import Foundation

/// A buyer's ownership of the app itself (a paid game's purchase, or its download), as the store
/// signed it: the store's id for the buyer's account in the app and what it says of the first
/// purchase. A game asks it to let only owners play.
public struct AppOwnership: Sendable, Equatable {
    /// The store's id for the buyer's account in the app: the same on every purchase of theirs
    /// (`VerifiedPurchase.appTransactionID`), and what a consent revocation names.
    public var appTransactionID: String
    public var environment: StoreEnvironment
    public var appIdentifier: String?
    /// The app's version the ownership was signed for, and the one first bought.
    public var appVersion: String?
    public var originalAppVersion: String?
    public var originalPurchaseDate: Date?
    /// The platform of the first purchase, as the store names it (kept raw).
    public var originalPlatform: String?
    /// Set when the app was pre-ordered and is not released yet.
    public var preorderDate: Date?

    public init(appTransactionID: String, environment: StoreEnvironment) {
        self.appTransactionID = appTransactionID
        self.environment = environment
    }
}

/// A store whose buyers can prove they own the app: with a device's signed proof sent as verify
/// evidence, or by asking the store about any of the buyer's transaction ids. Throws
/// `StoreVerificationError` (`NOT_FOUND` when the store knows no such buyer).
public protocol AppOwnershipProving: Sendable {
    /// A quick look (never a proof): whether verify evidence is a proof of owning the app rather
    /// than of a purchase in it.
    func isAppOwnershipEvidence(_ evidence: String) -> Bool
    func proveAppOwnership(evidence: String, context: VerificationContext) async throws -> AppOwnership
    func lookUpAppOwnership(transactionID: String, context: VerificationContext) async throws -> AppOwnership
}
