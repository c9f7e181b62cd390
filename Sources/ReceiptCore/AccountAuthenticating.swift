public import Foundation

/// A player's account at a store, proven by a ticket the store issued to the game
/// (`POST /v1/{store}/authenticate`).
public struct AuthenticatedAccount: Sendable {
    /// The account the ticket proves, in the store's terms.
    public var account: String
    /// The answer for the game, a JSON object in the store's words, written by the provider.
    public var answer: Data

    public init(account: String, answer: Data) {
        self.account = account
        self.answer = answer
    }
}

/// A store whose players prove who they are with a ticket the store checks: the service keeps
/// when each client last saw an account proven, so orders may be held to it
/// (`OrderRequest.accountProvenAt`).
public protocol AccountAuthenticating: Sendable {
    /// Checks `ticket` with the store for the client's app. Throws `StoreVerificationError`: a
    /// ticket the store refuses is `verificationFailed`, an account the client refuses `forbidden`.
    func authenticate(
        ticket: String, identity: String?, context: VerificationContext
    ) async throws
        -> AuthenticatedAccount
}
