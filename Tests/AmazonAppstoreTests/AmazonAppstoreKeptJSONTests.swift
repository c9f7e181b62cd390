import Foundation
import Testing

@testable import AmazonAppstore

/// What is kept of an SNS delivery for the ledger keeps the bytes it always had (sorted keys,
/// slashes and non-ASCII as sent): reproduced here the old way, through JSONSerialization.
@Suite struct AmazonAppstoreKeptJSON {
    static func message(_ fields: [String: String]) throws -> SNSMessage {
        try SNSMessage(body: try JSONEncoder().encode(fields))
    }

    static let envelope = [
        "Type": "Notification", "MessageId": "m-1/ü", "Message": "{}", "Timestamp": "2026-01-02T03:04:05.678Z",
        "TopicArn": "arn:aws:sns:us-east-1:1:topic", "SignatureVersion": "2", "Signature": "c2ln",
        "SigningCertURL": "https://sns.us-east-1.amazonaws.com/cert.pem", "Subject": "dropped",
    ]

    static func theOldWay(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    @Test func thePurchaseNewsKeepsItsBytes() throws {
        let message = try Self.message(Self.envelope)
        for news in [
            RealTimeNotification(
                appPackageName: "com.example/game", appUserId: "u\"\n\u{1}é", receiptId: "r-1",
                notificationType: "SUBSCRIPTION_RENEWED", timestamp: 1_767_323_045_678, betaProductTransaction: false),
            RealTimeNotification(appPackageName: "p", appUserId: nil, receiptId: "r", notificationType: nil),
        ] {
            var old: [String: Any] = ["Message": try JSONSerialization.jsonObject(with: JSONEncoder().encode(news))]
            for name in ["Type", "MessageId", "TopicArn", "Timestamp"] { old[name] = message.fields[name] }
            let kept = try AmazonAppstoreProvider.keptJSON(message, news: news)
            #expect(String(decoding: kept, as: UTF8.self) == String(decoding: try Self.theOldWay(old), as: UTF8.self))
        }
    }
}
