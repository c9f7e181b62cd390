import Crypto
public import Foundation
public import ReceiptCore

/// The HMAC request signature shared by the native API and the Alogame gateway:
/// `X-Client-ID`, `X-Timestamp` (unix seconds, within 300 s of ours) and
/// `X-Signature` = hex HMAC-SHA256(client_secret, "{client_id}.{timestamp}.{sha256_hex(body)}").
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
    static func headerProblem(header: (String) -> String?, now: Date = Date()) -> String? {
        guard let clientID = header("X-Client-ID"), !clientID.isEmpty, clientID.count <= 64,
              let timestampText = header("X-Timestamp"), let timestamp = Int64(timestampText),
              let signature = header("X-Signature"), let signatureBytes = Hex.decode(signature), signatureBytes.count == 32
        else { return "missing or malformed X-Client-ID, X-Timestamp or X-Signature" }
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= window else {
            return "X-Timestamp is more than 300 seconds from the server's clock"
        }
        return nil
    }

    /// The authenticated client, or `AuthenticationRefused` that does not say which part failed.
    func authenticate(header: (String) -> String?, body: Data) async throws -> Client {
        if let problem = Self.headerProblem(header: header, now: now()) { throw AuthenticationRefused(problem) }
        guard let clientID = header("X-Client-ID"), let timestampText = header("X-Timestamp"),
              let signatureBytes = header("X-Signature").flatMap(Hex.decode) else { throw AuthenticationRefused("invalid credentials or signature") }
        guard let (client, secret) = try await clientAndSecret(clientID) else { throw AuthenticationRefused("invalid credentials or signature") }
        let message = Self.message(clientID: clientID, timestamp: timestampText, body: body)
        guard HMACSHA256.isValid(signatureBytes, key: Data(secret.utf8), message: Data(message.utf8)) else {
            throw AuthenticationRefused("invalid credentials or signature")
        }
        return client
    }

    private func clientAndSecret(_ clientID: String) async throws -> (Client, String)? {
        guard let cache else { return try await clients.secret(for: clientID) }
        return try await cache.entry(for: clientID).map { ($0.client, $0.secret) }
    }

    public static func message(clientID: String, timestamp: String, body: Data) -> String {
        "\(clientID).\(timestamp).\(SHA256.hex(body))"
    }

    /// Signs an outgoing request or webhook the same way.
    public static func signature(secret: String, clientID: String, timestamp: String, body: Data) -> String {
        Hex.encode(HMACSHA256.authenticationCode(key: Data(secret.utf8), message: Data(message(clientID: clientID, timestamp: timestamp, body: body).utf8)))
    }
}

/// Why a signature was not accepted (the message never says which part failed).
struct AuthenticationRefused: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
