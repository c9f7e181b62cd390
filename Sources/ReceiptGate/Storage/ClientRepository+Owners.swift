import Foundation
import Postgres
package import ReceiptCore

extension ClientRepository {
    /// The client that registered `app` (the oldest enabled one), with its secret settings for
    /// `store`: what a store provider needs to call the store about that app outside a request.
    package func owner(ofApp app: String, store: StoreDeclaration) async throws -> ClientWithStoreCredentials? {
        guard let client = try await find(appIdentifier: app, kind: store.identifiers) else { return nil }
        return ClientWithStoreCredentials(
            client: client.info, credentials: try await credentials(of: client, store: store.store))
    }

    /// The oldest enabled client that registered an app of `store` and whose plain setting `name`
    /// (one of the store's own) has `value` first, with its secret settings for `store`. Only the
    /// match's secrets are opened; a value no client has costs this one query.
    package func owner(
        withSetting name: String, value: String, store: StoreDeclaration
    ) async throws -> ClientWithStoreCredentials? {
        guard name.hasPrefix("\(store.store.rawValue).") else { return nil }
        let kind = store.identifiers.name
        let rows = try await pool.query(
            """
            SELECT \(unescaped: Self.columns) FROM clients
            WHERE disabled_at IS NULL AND settings -> \(name) ->> 0 = \(value)
              AND app_identifiers -> \(kind) -> 0 IS NOT NULL
            ORDER BY created_at, id LIMIT 1
            """)
        guard let client = try rows.first.map(Self.decode) else { return nil }
        return ClientWithStoreCredentials(
            client: client.info, credentials: try await credentials(of: client, store: store.store))
    }

    /// Every enabled client that registered an app of the store, with its secrets.
    func owners(store: StoreID, registersApps: (Client) -> Bool) async throws -> [ClientWithStoreCredentials] {
        var owners: [ClientWithStoreCredentials] = []
        for client in try await list() where !client.disabled && registersApps(client) {
            let credentials = try await credentials(of: client, store: store)
            owners.append(ClientWithStoreCredentials(client: client.info, credentials: credentials))
        }
        return owners
    }

    /// The enabled client `clientID` when it registered an app of `store`, with its secrets: the
    /// client a notification route's path names.
    package func owner(clientID: String, store: StoreDeclaration) async throws -> ClientWithStoreCredentials? {
        guard Self.isIssuedID(clientID) else { return nil }
        let rows = try await pool.query(
            """
            SELECT \(unescaped: Self.columns) FROM clients
            WHERE id = \(clientID) AND disabled_at IS NULL
              AND app_identifiers -> \(store.identifiers.name) -> 0 IS NOT NULL
            """)
        guard let client = try rows.first.map(Self.decode) else { return nil }
        return ClientWithStoreCredentials(
            client: client.info, credentials: try await credentials(of: client, store: store.store))
    }

    /// Whether `clientID` knows the player: a purchase claimed for it, or an account linked through it.
    package func knows(player playerID: String, clientID: String) async throws -> Bool {
        let rows = try await pool.query(
            """
            SELECT EXISTS (SELECT 1 FROM transactions WHERE client_id = \(clientID) AND player_id = \(playerID))
                OR EXISTS (SELECT 1 FROM accounts WHERE client_id = \(clientID) AND id = \(playerID)) AS known
            """)
        return try rows.first?.decode("known", as: Bool.self) ?? false
    }

    private func credentials(of client: Client, store: StoreID) async throws -> [String: String] {
        client.hasSealedSettings ? try await sealedSettings(of: client.clientID, prefix: "\(store.rawValue).") : [:]
    }
}
