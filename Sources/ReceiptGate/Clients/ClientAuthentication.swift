package import Foundation
import OpenSSLCrypto
import ReceiptCore

/// The HMAC request signature shared by the native API and the dialects that use it:
/// `X-Client-ID`, `X-Timestamp` (unix seconds, within 300 s of ours) and
/// `X-Signature` = hex HMAC-SHA256(client_secret, "{client_id}.{timestamp}.{sha256_hex(body)}") —
/// the contract's scheme, which covers the body only. Version 2 (`X-Signature-Version: 2`) covers the
/// method and the request target too: hex HMAC-SHA256(client_secret,
/// "v2\n{client_id}\n{timestamp}\n{METHOD}\n{target}\n{sha256_hex(body)}"), so a signature made for one
/// path or query cannot be replayed against another. `target` is the request target as sent, its
/// percent-encoding untouched. GETs and routes with a parameter in their path require it
/// (`RouteMounter.requiresVersion2`); every route accepts it.
package struct ClientAuthentication: Sendable {
    package static let window: TimeInterval = 300
    let directory: any ClientDirectory
    let now: @Sendable () -> Date

    init(directory: any ClientDirectory, now: @escaping @Sendable () -> Date) {
        self.directory = directory
        self.now = now
    }

    /// What is wrong with the signature headers before any secret is looked at, or nil.
    static func headerProblem(header: (String) -> String?, requireVersion2: Bool = false, now: Date) -> String? {
        guard case .failure(let refused) = SignatureHeaders.read(header, requireVersion2: requireVersion2, now: now)
        else { return nil }
        return refused.message
    }

    /// The authenticated client, or `AuthenticationRefused` that does not say which part failed.
    /// The headers are read (and their timestamp checked) again although the route's header check
    /// passed: it ran before the body arrived, and the timestamp must still be good now.
    func authenticate(
        header: (String) -> String?, body: Data, method: String = "POST", target: String = "/",
        requireVersion2: Bool = false
    ) async throws -> AuthenticatedClient {
        let signed = try SignatureHeaders.read(header, requireVersion2: requireVersion2, now: now()).get()
        guard let signatureBytes = Hex.decode(signed.signature),
            let entry = try await directory.entry(for: signed.clientID)
        else {
            throw AuthenticationRefused("invalid credentials or signature")
        }
        let message =
            try signed.coversTarget
            ? Self.messageV2(
                clientID: signed.clientID, timestamp: signed.timestamp, method: method, target: target, body: body)
            : Self.message(clientID: signed.clientID, timestamp: signed.timestamp, body: body)
        guard try HMACSHA256.isValid(signatureBytes, key: Data(entry.secret.utf8), message: Data(message.utf8)) else {
            throw AuthenticationRefused("invalid credentials or signature")
        }
        return entry
    }

    package static func messageV2(
        clientID: String, timestamp: String, method: String, target: String, body: Data
    ) throws -> String {
        "v2\n\(clientID)\n\(timestamp)\n\(method.uppercased())\n\(target)\n\(try SHA256.hex(body))"
    }

    package static func message(clientID: String, timestamp: String, body: Data) throws -> String {
        "\(clientID).\(timestamp).\(try SHA256.hex(body))"
    }

    /// Signs an outgoing request or webhook the same way.
    package static func signature(secret: String, clientID: String, timestamp: String, body: Data) throws -> String {
        Hex.encode(
            try HMACSHA256.authenticationCode(
                key: Data(secret.utf8),
                message: Data(try message(clientID: clientID, timestamp: timestamp, body: body).utf8)))
    }
}

/// The signature headers of one request, read once and checked before any secret is looked at.
/// Names are asked for in lower case, so a case-insensitive lookup and a lower-cased copy both answer.
struct SignatureHeaders {
    let clientID: String
    let timestamp: String
    /// Hex, 32 bytes.
    let signature: String
    /// Version 2: the signature covers the method and the request target too.
    let coversTarget: Bool

    static func read(
        _ header: (String) -> String?, requireVersion2: Bool, now: Date
    ) -> Result<SignatureHeaders, AuthenticationRefused> {
        guard let clientID = header("x-client-id"), !clientID.isEmpty, clientID.count <= 64,
            let timestampText = header("x-timestamp"), let timestamp = Int64(timestampText),
            let signature = header("x-signature"), Hex.isHex(signature, byteCount: 32)
        else { return .failure(AuthenticationRefused("missing or malformed X-Client-ID, X-Timestamp or X-Signature")) }
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= ClientAuthentication.window else {
            return .failure(AuthenticationRefused("X-Timestamp is more than 300 seconds from the server's clock"))
        }
        let coversTarget: Bool
        switch header("x-signature-version") {
        case nil, "1":
            if requireVersion2 {
                return .failure(
                    AuthenticationRefused(
                        "this route needs X-Signature-Version: 2 (the signature covers method, path and query)"))
            }
            coversTarget = false
        case "2": coversTarget = true
        default: return .failure(AuthenticationRefused("X-Signature-Version must be 1 or 2"))
        }
        return .success(
            SignatureHeaders(
                clientID: clientID, timestamp: timestampText, signature: signature, coversTarget: coversTarget))
    }
}

/// Why a signature was not accepted (the message never says which part failed).
struct AuthenticationRefused: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
