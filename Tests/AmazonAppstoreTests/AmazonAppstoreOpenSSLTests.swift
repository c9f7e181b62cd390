import AmazonAppstore
import AmazonAppstoreTestSupport
import Foundation
import ReceiptCore
import TestSupport
import Testing

/// SNS signatures made by the `openssl` command-line tool instead of our own signing code, so the
/// verifier is checked against an independent SHA1withRSA and SHA256withRSA implementation.
@Suite struct AmazonAppstoreOpenSSLSignatures {
    @Test(arguments: [(1, "-sha1"), (2, "-sha256")])
    func aMessageSignedByTheOpenSSLToolIsAccepted(version: Int, digest: String) async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("amazon-sns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fields = [
            "Type": "SubscriptionConfirmation", "MessageId": "openssl-\(version)", "Token": "tok-openssl",
            "TopicArn": FakeSNS.topicARN,
            "Message": "Confirm the subscription.",
            "SubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=tok-openssl",
            "Timestamp": "2026-12-01T23:40:01.000Z",
        ]
        let canonical = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"].map {
            "\($0)\n\(fields[$0] ?? "")\n"
        }.joined()
        let (key, text, signature) = (
            folder.appendingPathComponent("key.pem"), folder.appendingPathComponent("canonical.txt"),
            folder.appendingPathComponent("signature.bin")
        )
        try sns.key.pemRepresentation().write(to: key, atomically: true, encoding: .utf8)
        try canonical.write(to: text, atomically: true, encoding: .utf8)
        let result = try ChildProcess.runBlocking(
            "/usr/bin/openssl", ["dgst", digest, "-sign", key.path, "-out", signature.path, text.path])
        #expect(result.status == 0, "\(result.stderr)")
        var body = fields
        body["SignatureVersion"] = String(version)
        body["Signature"] = try Data(contentsOf: signature).base64EncodedString()
        body["SigningCertURL"] = sns.certificateURL
        let provider = try AmazonAppstoreNotifications.provider(rvs, sns)
        let data = try JSONSerialization.data(withJSONObject: body)
        let notification = try await provider.receiveNotification(
            AmazonAppstoreNotifications.request(data), registered: AmazonAppstoreNotifications.registered)
        #expect(notification.type == "SubscriptionConfirmation" && notification.notificationID == "openssl-\(version)")
        // The same signature under the other version's digest does not verify.
        body["SignatureVersion"] = String(3 - version)
        let crossed = try JSONSerialization.data(withJSONObject: body)
        let refusal = await AmazonAppstoreNotifications.rejection {
            _ = try await provider.receiveNotification(
                AmazonAppstoreNotifications.request(crossed), registered: AmazonAppstoreNotifications.registered)
        }
        #expect(refusal?.kind == .forged)
        await rvs.shutdown()
        await sns.shutdown()
    }
}
