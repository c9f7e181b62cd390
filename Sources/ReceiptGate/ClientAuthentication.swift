import Crypto
public import Foundation
public import ReceiptCore

/// The HMAC request signature shared by the native API and the Alogame gateway:
/// `X-Client-ID`, `X-Timestamp` (unix seconds, within 300 s of ours) and
/// `X-Signature` = hex HMAC-SHA256(client_secret, "{client_id}.{timestamp}.{sha256_hex(body)}") —
/// the seed's scheme, which covers the body only. Version 2 (`X-Signature-Version: 2`) covers the
/// method and the request target too: hex HMAC-SHA256(client_secret,
/// "v2\n{client_id}\n{timestamp}\n{METHOD}\n{target}\n{sha256_hex(body)}"), so a signature made for one
/// GET cannot be replayed against another path or query. GETs require it; every route accepts it.
public struct ClientAuthentication: Sendable {
    public static let window: TimeInterval = 300
    let clients: ClientRepository
    let now: @Sendable () -> Date
    /// Authenticated clients in memory (issue 13); nil reads the database every time.
    let cache: ClientCache?

    init(clients: ClientRepository, cache: ClientCache? = nil, now: @escaping @Sendable () -> Date = { Date() }) {
        self.clients = clients
        self.cache = cache
        self.now = now
    }

    /// What is wrong with the signature headers before any secret is looked at, or nil.
    static func headerProblem(header: (String) -> String?, requireVersion2: Bool = false, now: Date = Date()) -> String? {
        guard let clientID = header("X-Client-ID"), !clientID.isEmpty, clientID.count <= 64,
              let timestampText = header("X-Timestamp"), let timestamp = Int64(timestampText),
              let signature = header("X-Signature"), Hex.isHex(signature, byteCount: 32)
        else { return "missing or malformed X-Client-ID, X-Timestamp or X-Signature" }
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= window else {
            return "X-Timestamp is more than 300 seconds from the server's clock"
        }
        switch header("X-Signature-Version") {
        case nil, "1": if requireVersion2 { return "this route needs X-Signature-Version: 2 (the signature covers method, path and query)" }
        case "2": break
        default: return "X-Signature-Version must be 1 or 2"
        }
        return nil
    }

    /// The authenticated client, or `AuthenticationRefused` that does not say which part failed.
    func authenticate(header: (String) -> String?, body: Data, method: String = "POST", target: String = "/",
                      requireVersion2: Bool = false) async throws -> Client {
        if let problem = Self.headerProblem(header: header, requireVersion2: requireVersion2, now: now()) { throw AuthenticationRefused(problem) }
        guard let clientID = header("X-Client-ID"), let timestampText = header("X-Timestamp"),
              let signatureBytes = header("X-Signature").flatMap(Hex.decode) else { throw AuthenticationRefused("invalid credentials or signature") }
        guard let (client, secret) = try await clientAndSecret(clientID) else { throw AuthenticationRefused("invalid credentials or signature") }
        let message = try header("X-Signature-Version") == "2"
            ? Self.messageV2(clientID: clientID, timestamp: timestampText, method: method, target: target, body: body)
            : Self.message(clientID: clientID, timestamp: timestampText, body: body)
        guard try HMACSHA256.isValid(signatureBytes, key: Data(secret.utf8), message: Data(message.utf8)) else {
            throw AuthenticationRefused("invalid credentials or signature")
        }
        return client
    }

    public static func messageV2(clientID: String, timestamp: String, method: String, target: String, body: Data) throws -> String {
        "v2\n\(clientID)\n\(timestamp)\n\(method.uppercased())\n\(target)\n\(try SHA256.hex(body))"
    }

    /// From the cache when there is one (invalidated on rotation by notification, and short-lived
    /// in case one is missed), else from Postgres.
    private func clientAndSecret(_ clientID: String) async throws -> (Client, String)? {
        guard let cache else { return try await clients.secret(for: clientID) }
        return try await cache.entry(for: clientID).map { ($0.client, $0.secret) }
    }

    public static func message(clientID: String, timestamp: String, body: Data) throws -> String {
        "\(clientID).\(timestamp).\(try SHA256.hex(body))"
    }

    /// Signs an outgoing request or webhook the same way.
    public static func signature(secret: String, clientID: String, timestamp: String, body: Data) throws -> String {
        Hex.encode(try HMACSHA256.authenticationCode(key: Data(secret.utf8), message: Data(try message(clientID: clientID, timestamp: timestamp, body: body).utf8)))
    }
}

/// Why a signature was not accepted (the message never says which part failed).
struct AuthenticationRefused: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
