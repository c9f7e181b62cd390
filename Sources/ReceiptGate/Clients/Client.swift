package import Foundation
package import ReceiptCore

/// A tenant: one game or app with its credentials and settings. Never carries the secret.
public struct Client: Sendable, Codable, Equatable {
    package let clientID: String
    package var name: String
    package var gameID: Int64?
    /// The apps the client registered, by the kind of identifier each store declares.
    package var appIdentifiers: [String: [String]]
    package var environments: [StoreEnvironment]
    package var refundCallbackURL: String?
    /// Which dialect's shape refund callbacks take; empty for the service's default.
    package var refundCallbackFormat: String
    package var webhookURL: String?
    /// Where entitlement deliveries go (server-authoritative delivery), if the game wants them.
    package var deliveryURL: String?
    /// Plugins' settings (see `ClientInfo.settings`).
    package var settings: [String: [String]]
    /// Whether the client has secret plugin settings (they are never shown).
    package var hasSealedSettings: Bool
    package var disabled: Bool
    package let createdAt: Date
    package var secretRotatedAt: Date
    /// The products (`store/product_id`) that some catalog of the client's game maps to an
    /// entitlement: a claim of one of them changes what a player owns. Loaded with the client, and
    /// current like it (a catalog change bumps the version of every client of the game).
    package var gameCatalog: Set<String> = []

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id", name, gameID = "game_id", appIdentifiers = "app_identifiers"
        case environments, refundCallbackURL = "refund_callback_url", refundCallbackFormat = "refund_callback_format"
        case webhookURL = "webhook_url", deliveryURL = "delivery_url", settings, hasSealedSettings =
            "has_secret_settings", disabled
        case createdAt = "created_at", secretRotatedAt = "secret_rotated_at"
    }

    /// `flag` (the default: recorded and reported, never delivered) or `reject` (422 ACCOUNT_MISMATCH):
    /// what happens when the evidence's account token contradicts the caller's.
    package static let accountMismatchSetting = VerificationChecks.accountMismatchSetting

    /// `on`: the client's outbound URLs may be plain `http` (`--allow-insecure-url`); else `https` only.
    package static let allowInsecureURLSetting = "outbound.allow_insecure"

    /// Whether plain-http outbound URLs are allowed for this client.
    package var allowsInsecureURLs: Bool { settings[Self.allowInsecureURLSetting] == ["on"] }

    /// `--webhook-batch N`: a webhook POST may carry up to N events (`{"events": [...]}`); unset,
    /// one event a POST, the envelope itself as the body.
    package static let webhookBatchSetting = "webhook.batch"
    /// The most events one batched webhook POST carries.
    package static let webhookBatchLimit = 100

    /// How many events one webhook POST may carry; 1 (the default) sends each alone, unbatched.
    package var webhookBatch: Int {
        guard let value = settings[Self.webhookBatchSetting]?.first.flatMap(Int.init) else { return 1 }
        return min(max(value, 1), Self.webhookBatchLimit)
    }

    /// The contract's `allow_sandbox`: one concept with the accepted environments.
    package var allowsSandbox: Bool { environments.contains(.sandbox) }

    /// Whether a purchase of `product` in `store` (and of the items `skus`, for a purchase that sold
    /// several) may change what a player owns, for some catalog of the game. A subscription may move
    /// to another product of its group, so any catalog counts for one.
    func mayChangeEntitlements(store: StoreID, product: String?, kind: ProductKind?, skus: [String] = []) -> Bool {
        guard !gameCatalog.isEmpty, EntitlementRules.mayGrant(kind) else { return false }
        return kind == .autoRenewableSubscription
            || ([product ?? ""] + skus).contains { gameCatalog.contains("\(store.rawValue)/\($0)") }
    }

    /// The client as plugins see it.
    package var info: ClientInfo {
        ClientInfo(
            clientID: clientID, gameID: gameID, appIdentifiers: appIdentifiers, environments: Set(environments),
            settings: settings)
    }
}

/// What can be set on a client at create or update time; nil leaves a field as it is.
public struct ClientSettings: Sendable {
    package var name: String?
    package var gameID: Int64??
    /// Identifiers to set, by kind (a list replaces the kind's) or remove (nil); others stay.
    package var appIdentifiers: [String: [String]?] = [:]
    package var environments: [StoreEnvironment]?
    package var refundCallbackURL: String??
    package var refundCallbackFormat: String?
    package var webhookURL: String??
    package var deliveryURL: String??
    /// Plugin settings to set (a list) or remove (nil); others stay.
    package var settings: [String: [String]?] = [:]
    /// Secret plugin settings to set or remove (nil); stored sealed, never shown.
    package var sealedSettings: [String: String?] = [:]

    package init() {}
}

package enum ClientStoreError: Error, CustomStringConvertible {
    case notFound(String)
    case invalid(String)

    package var description: String {
        switch self {
        case .notFound(let id): "no client with id \(id)"
        case .invalid(let problem): problem
        }
    }
}
