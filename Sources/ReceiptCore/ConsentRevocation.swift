/// A store's word that the buyer's consent to use the app was withdrawn (a parent rescinding a
/// minor's consent under a state's age-assurance law). The game must act on it (stop the
/// players' access, delete what the law asks), so the core tells it which of its players the
/// buyer's account is.
public struct ConsentRevocationNews: Sendable, Equatable {
    /// The store's id for the buyer's account in the app: the one purchases carry as
    /// `VerifiedPurchase.appTransactionID`, and app ownership lookups keep with a player. nil
    /// when the store's word names none: then nobody can be told, and the revocation is still listed.
    public var appTransactionID: String?

    public init(appTransactionID: String?) {
        self.appTransactionID = appTransactionID
    }
}
