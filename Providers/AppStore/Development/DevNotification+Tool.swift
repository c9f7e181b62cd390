import Foundation
import HTTPClient
import OpenSSLCrypto
import ReceiptCore

extension DevNotification {
    /// `receiptgate dev notify`: tells the running service, as the App Store would, that a purchase
    /// `dev purchase` signed was refunded, renewed, expired or is the subject of a refund request,
    /// so webhooks, the refunds page and refund answers can be tried on a laptop.
    static let tool = DevelopmentTool(
        name: "notify", summary: "Send the App Store's signed notification of a dev purchase to the running service",
        help: help, options: ["type", "transaction", "purchase", "url"]
    ) { options, service in
        guard let typeName = options["type"] else { throw SettingRejected("--type is required") }
        guard let kind = Kind(rawValue: typeName) else {
            throw SettingRejected(
                "--type must be \(Kind.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(typeName)\"")
        }
        let directory = service.dataDirectory.appendingPathComponent("dev-pki")
        let purchase = try Self.purchase(options, records: DevPurchaseRecords(pkiDirectory: directory))
        guard let (pki, _) = try? DevPKI.loadOrCreate(in: directory) else {
            throw SettingRejected("no development PKI in \(directory.path): sign a purchase with dev purchase first")
        }
        let signed: Signed
        do {
            signed = try DevNotification(kind: kind, purchase: purchase).signed(with: pki)
        } catch let problem as Problem {
            throw SettingRejected(problem.description)
        }
        if signed.transaction.transactionId != purchase.transactionId {
            try DevPurchaseRecords(pkiDirectory: directory).keep(signed.transaction)
        }
        let url = (options["url"] ?? service.serviceURL).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let answer = try await post(signed.signedPayload, to: url + AppStoreProvider.notificationRoute)
        var notices = [
            "receiptgate: sent \(signed.notificationType) for transaction \(signed.transaction.transactionId)"
        ]
        if kind == .renewal {
            notices.append("receiptgate: the renewal's transaction id is \(signed.transaction.transactionId)")
        }
        guard (200..<300).contains(answer.status) else {
            throw DevNotifyFailed(
                description:
                    "the service at \(url) answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
        }
        return (String(decoding: answer.body, as: UTF8.self), notices)
    }

    /// The purchase named by `--transaction ID` (one `dev purchase` signed here) or `--purchase FILE`
    /// (the signed purchase it printed).
    static func purchase(_ options: [String: String], records: DevPurchaseRecords) throws -> DevPurchase.Payload {
        switch (options["transaction"], options["purchase"]) {
        case (let id?, nil):
            guard (1...19).contains(id.count), id.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw SettingRejected("--transaction must be 1 to 19 digits, got \"\(id)\"")
            }
            guard let found = try records.find(id) else {
                throw SettingRejected("no purchase \(id) was signed here by dev purchase (\(records.directory.path))")
            }
            return found
        case (nil, let path?):
            guard let token = try? String(contentsOfFile: path, encoding: .utf8),
                let payload = try? CompactJWS.Parts(splitting: token.trimmingCharacters(in: .whitespacesAndNewlines))
                    .payload,
                let purchase = try? JSONDecoder().decode(DevPurchase.Payload.self, from: payload)
            else { throw SettingRejected("--purchase \(path) is not a purchase dev purchase signed") }
            return purchase
        default:
            throw SettingRejected("give one of --transaction ID or --purchase FILE")
        }
    }

    static func post(_ signedPayload: String, to url: String) async throws -> HTTPClient.Response {
        struct Body: Encodable { let signedPayload: String }
        var configuration = HTTPClient.Configuration()
        configuration.retry = .none
        configuration.timeout = .seconds(15)
        let request = HTTPClient.Request(
            method: "POST", url: url, headers: [("Content-Type", "application/json")],
            body: try JSONEncoder().encode(Body(signedPayload: signedPayload)))
        do {
            return try await HTTPClient(configuration).send(request)
        } catch {
            throw DevNotifyFailed(description: "could not reach the service at \(url): \(error) (is it running? --url)")
        }
    }

    static let help = """
        Usage: receiptgate dev notify --type refund|renewal|expired|consumption-request
               (--transaction ID | --purchase FILE) [--url URL]

        Sends the running service the App Store Server Notification (version 2) Apple would send
        about a purchase `receiptgate dev purchase` signed, signed by the same development PKI:

          refund               REFUND: the purchase is refunded (webhook transaction.refunded)
          renewal              DID_RENEW: a subscription's next month, a new transaction (its id on stderr)
          expired              EXPIRED (VOLUNTARY): a subscription ends, its renewal turned off
          consumption-request  CONSUMPTION_REQUEST: the customer asked Apple for a refund (the refunds page)

          --transaction ID     a purchase dev purchase signed on this machine (kept under dev-pki/purchases/)
          --purchase FILE      or the file dev purchase printed (purchase.jws)
          --url URL            the service (default: RECEIPTGATE_URL, else http://RECEIPTGATE_HOST:RECEIPTGATE_PORT)

        Prints the service's answer. Only a service started with the development root
        (RECEIPTGATE_APPLE_ROOT_CERTS=.../dev-pki/root.pem) accepts it.
        """
}

struct DevNotifyFailed: Error, CustomStringConvertible {
    let description: String
}
