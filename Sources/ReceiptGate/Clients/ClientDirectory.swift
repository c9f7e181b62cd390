import ReceiptCore

/// Where the service finds an enabled client by id, with its secret and row version. Chosen once
/// per deployment: from memory (`ClientCache`: invalidated by LISTEN and by a lifetime) or straight
/// from Postgres (`DatabaseClientDirectory`, when `RECEIPTGATE_CLIENT_CACHE_SECONDS=0`). Either way
/// a write checks the version it was given in its own statement, so a cached answer can be stale
/// only for reads.
protocol ClientDirectory: Sendable {
    /// The enabled client; nil for an unknown or disabled one.
    func entry(for clientID: String) async throws -> AuthenticatedClient?
    /// Forgets what is held for one client: its row changed (a version check failed).
    func invalidate(_ clientID: String)
}

/// Every lookup reads the client's row.
struct DatabaseClientDirectory: ClientDirectory {
    let repository: ClientRepository

    func entry(for clientID: String) async throws -> AuthenticatedClient? {
        try await repository.authenticationEntry(for: clientID)
    }

    func invalidate(_ clientID: String) {}
}

/// A client as one read found it, with the row version a write then checks. A class, so that
/// carrying it with `ClientInfo` copies a reference, not the whole row.
final class ClientAtVersion: Sendable {
    let client: Client
    let version: Int64

    init(client: Client, version: Int64) {
        self.client = client
        self.version = version
    }
}

extension AuthenticatedClient {
    /// The client as plugins see it, carrying this read (never the secret) to `prove` and `record`.
    var carriedInfo: ClientInfo {
        var info = client.info
        info.authenticatedRecord = AuthenticatedClientRecord(atVersion)
        return info
    }

    var atVersion: ClientAtVersion { ClientAtVersion(client: client, version: version) }
}

extension ClientInfo {
    /// The client read when this request was authenticated, if the info carries it.
    var carriedClient: ClientAtVersion? {
        guard let carried = authenticatedRecord.value as? ClientAtVersion, carried.client.clientID == clientID else {
            return nil
        }
        return carried
    }
}
