package import Foundation
package import HTTPServer
package import OpenSSLCrypto
package import TestSupport

/// A stand-in for an Amazon SNS topic: its own RSA key and self-signed certificate, the
/// certificate served as PEM on loopback at `/SimpleNotificationService-<hex>.pem`, and messages
/// signed as SNS signs them (SignatureVersion 1: SHA1withRSA, 2: SHA256withRSA, over the
/// canonical string of the message's type).
package final class FakeSNS: Sendable {
    /// Made once per test process: RSA key generation is slow on a busy machine.
    private static let ownKey = Result { try PrivateKey.generateRSA() }

    package let key: PrivateKey
    package let certificate: Certificate
    package let certificateFile: String
    package let server: HTTPServer
    /// Certificate downloads so far.
    package let certificateHits = LockedBox(0)
    /// Every certificate file asked for, served or not, in the order asked.
    package let requestedFiles = LockedBox<[String]>([])
    /// How long each certificate request is held before it is answered, when set: a slow host.
    package let answerDelay = LockedBox<Duration?>(nil)
    /// Holds every certificate request until released: a host that takes connections and never
    /// answers (until the test lets it, or the fake's handler timeout ends the request).
    package let hold = Hold()
    package static let topicARN = "arn:aws:sns:us-east-1:123456789012:appstore-rtn"

    package init(key: PrivateKey? = nil) throws {
        let key = try key ?? Self.ownKey.get()
        self.key = key
        let now = Date()
        certificate = try CertificateBuilder(
            subjectCommonName: "sns.amazonaws.com", notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86_400)
        ).build(subjectKey: key, issuer: nil, issuerKey: key)
        certificateFile = "SimpleNotificationService-" + Hex.encode(SecureRandom.bytes(16)) + ".pem"
        var router = Router()
        let (file, pem, hits, requested, delay, hold) = (
            certificateFile, certificate.pemEncoded, certificateHits, requestedFiles, answerDelay, hold
        )
        router.get("/{file}") { request in
            let asked = try request.parameter("file")
            requested.update { $0.append(asked) }
            if let delay = delay.get() { try? await Task.sleep(for: delay) }
            await hold.pass()
            guard asked == file else { return HTTPResponse(status: 404) }
            hits.update { $0 += 1 }
            return HTTPResponse(
                status: 200, headers: ["Content-Type": "application/x-x509-ca-cert"], body: Data(pem.utf8))
        }
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: router.build(handlerExecutor: FakeServing.executor))
        try server.start()
    }

    package var certificateURL: String { "http://127.0.0.1:\(server.port)/\(certificateFile)" }
    /// The whole-URL rule that admits this fake's certificate (and any other on this port under that name).
    package var certificateURLPattern: String {
        #"http://127\.0\.0\.1:\#(server.port)/SimpleNotificationService-[0-9a-f]+\.pem"#
    }

    /// A `Notification` carrying `message` (Amazon's RTN JSON) as SNS delivers it.
    package func notification(
        _ message: [String: Any], messageID: String = UUID().uuidString.lowercased(), version: Int = 1,
        subject: String? = nil, certificateURL: String? = nil
    ) throws -> Data {
        let text = String(
            decoding: try JSONSerialization.data(withJSONObject: message, options: [.sortedKeys]), as: UTF8.self)
        var fields = [
            "Type": "Notification", "MessageId": messageID, "TopicArn": Self.topicARN, "Message": text,
            "Timestamp": "2026-12-01T23:40:02.123Z",
        ]
        if let subject { fields["Subject"] = subject }
        fields["UnsubscribeURL"] =
            "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=\(Self.topicARN):1"
        return try signed(
            fields, order: ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"], version: version,
            certificateURL: certificateURL)
    }

    /// A `SubscriptionConfirmation` for `token`, as SNS sends when the endpoint is subscribed.
    package func subscriptionConfirmation(
        token: String, messageID: String = UUID().uuidString.lowercased(), version: Int = 1
    ) throws -> Data {
        let fields = [
            "Type": "SubscriptionConfirmation", "MessageId": messageID, "Token": token, "TopicArn": Self.topicARN,
            "Message":
                "You have chosen to subscribe to the topic \(Self.topicARN).\nTo confirm the subscription, visit the SubscribeURL included in this message.",
            "SubscribeURL":
                "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=\(Self.topicARN)&Token=\(token)",
            "Timestamp": "2026-12-01T23:40:01.000Z",
        ]
        return try signed(
            fields, order: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
            version: version,
            certificateURL: nil)
    }

    /// Signs the canonical string (each present field of `order` as name and value lines) and
    /// returns the delivery body.
    private func signed(
        _ fields: [String: String], order: [String], version: Int, certificateURL: String?
    ) throws -> Data {
        let canonical = order.compactMap { name in fields[name].map { "\(name)\n\($0)\n" } }.joined()
        let signature =
            version == 1 ? try key.signSHA1WithRSA(Data(canonical.utf8)) : try key.signRS256(Data(canonical.utf8))
        var body = fields
        body["SignatureVersion"] = String(version)
        body["Signature"] = signature.base64EncodedString()
        body["SigningCertURL"] = certificateURL ?? self.certificateURL
        return try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
    }

    /// `body` with one field replaced after signing (a forger's edit).
    package static func tampered(_ body: Data, _ field: String, _ value: String) throws -> Data {
        var object = try JSONSerialization.jsonObject(with: body) as? [String: Any] ?? [:]
        object[field] = value
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    package func shutdown() async {
        hold.release()
        await server.shutdown()
    }

    /// A gate certificate requests wait at while it is closed; open until `close()`.
    package final class Hold: Sendable {
        private let state = LockedBox<(closed: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        package func close() { state.update { $0.closed = true } }

        /// Opens the gate and lets every held request go on.
        package func release() {
            let waiting = state.update { state in
                defer { state = (false, []) }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func pass() async {
            await withCheckedContinuation { continuation in
                let held = state.update { state in
                    if state.closed { state.waiting.append(continuation) }
                    return state.closed
                }
                if !held { continuation.resume() }
            }
        }
    }
}
