import Foundation
import ReceiptCore

/// A `POST /iap` call, checked: the SDK's headers, exactly one store's evidence, the optional
/// customer details and attribution. Every problem names the header or field.
struct IAPRequest: Sendable {
    struct Headers: Sendable {
        let appVersion: String
        let deviceModel: String
        let os: String
        let osVersion: String
        let sdkVersion: String
        /// The caller's own address chain when usable; an unusable header is dropped (and logged).
        let forwardedFor: String?
        let forwardedForIgnored: Bool
    }

    let headers: Headers
    /// The body's store object (`apple`, `google`), a platform the served stores declare.
    let platform: String
    /// The bundle id or package name: it names the tenant.
    let appIdentifier: String
    let evidence: String
    /// `.transactionID` only for a bare `apple.transaction_id`: this dialect asks for it, no other API does.
    let evidenceKind: EvidenceKind
    /// `apple.transaction_id` sent beside a signed transaction or receipt: the one to link.
    let namedTransactionID: String?
    let email: String?
    /// The `aflyr` object as sent, for the account's attribution.
    let attribution: Data?

    /// The contract documents the SDK headers as free strings with examples (`8.10.123`, `mobile`,
    /// `ios`): any printable text up to this length is taken as sent.
    static let maxHeaderLength = 128

    static func headers(_ fields: [String: String]) -> Result<Headers, Problem> {
        func printable(_ name: String) -> Result<String, Problem> {
            guard let value = fields[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
                return .failure(Problem(.missingFields, "header \(name) is required"))
            }
            guard value.count <= maxHeaderLength, isPrintable(value) else {
                return .failure(Problem(.invalidField, "header \(name) must be printable text of at most \(maxHeaderLength) characters"))
            }
            return .success(value)
        }
        do throws(Problem) {
            let appVersion = try printable("x-client-app-version").get()
            let deviceModel = try printable("x-client-device-model").get()
            let os = try printable("x-client-os").get()
            let osVersion = try printable("x-client-os-version").get()
            let sdkVersion = try printable("x-sdk-version").get()
            if let authorization = fields["authorization"], AccessTokens.bearer(authorization) == nil {
                return .failure(Problem(.invalidField, "header authorization must be \"Bearer <access token>\""))
            }
            return .success(Headers(appVersion: appVersion, deviceModel: deviceModel, os: os, osVersion: osVersion, sdkVersion: sdkVersion,
                                    forwardedFor: forwardedFor(fields["x-forwarded-for"]),
                                    forwardedForIgnored: fields["x-forwarded-for"] != nil && forwardedFor(fields["x-forwarded-for"]) == nil))
        } catch {
            return .failure(error)
        }
    }

    /// No control, format, separator or unassigned characters: what a header may carry into a log.
    static func isPrintable(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: false
            default: true
            }
        }
    }

    /// The addresses of `x-forwarded-for` when every one is an IP address; nil otherwise (the
    /// header is only for fraud review, so an unusable one is ignored, and the caller logs that).
    static func forwardedFor(_ raw: String?) -> String? {
        guard let raw, raw.utf8.count <= 512 else { return nil }
        let addresses = raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !addresses.isEmpty, addresses.allSatisfy(isIPAddress) else { return nil }
        return addresses.joined(separator: ", ")
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    private struct Body: Decodable {
        struct Apple: Decodable {
            let bundle_id: String
            let subscription_transaction_jws: String?
            let app_receipt_base64: String?
            let transaction_id: String?
        }
        struct Google: Decodable {
            let package_id: String
            let purchase_token: String
        }
        struct CustomerDetails: Decodable { let email: String }
        struct Aflyr: Decodable { let referrer_id: String? }

        let apple: Apple?
        let google: Google?
        let customer_details: CustomerDetails?
        let aflyr: Aflyr?
    }

    static func parse(headers: Headers, body data: Data) -> Result<IAPRequest, Problem> {
        do throws(Problem) {
            let body = try decodedBody(data)
            let store = try storeEvidence(apple: body.apple, google: body.google)
            let email = try emailAddress(body.customer_details?.email)
            let attribution = body.aflyr == nil ? nil : try attribution(in: data)
            return .success(IAPRequest(headers: headers, platform: store.platform, appIdentifier: store.appIdentifier,
                                       evidence: store.evidence, evidenceKind: store.evidenceKind,
                                       namedTransactionID: store.namedTransactionID, email: email, attribution: attribution))
        } catch {
            return .failure(error)
        }
    }

    /// What the one store object says: whose app, and the evidence to verify.
    private struct StoreEvidence {
        let platform: String
        let appIdentifier: String
        let evidence: String
        var evidenceKind = EvidenceKind.detected
        var namedTransactionID: String?
    }

    private static func decodedBody(_ data: Data) throws(Problem) -> Body {
        switch JSONBody.decode(Body.self, from: data) {
        case .success(let decoded): return decoded
        case .failure(let problem): throw Problem(problem.code, problem.message)
        }
    }

    private static func storeEvidence(apple: Body.Apple?, google: Body.Google?) throws(Problem) -> StoreEvidence {
        switch (apple, google) {
        case (nil, nil), (.some, .some):
            throw Problem(.missingFields, "exactly one of 'apple' or 'google' is required")
        case (let apple?, nil):
            return try appleEvidence(apple)
        case (nil, let google?):
            guard !google.package_id.isEmpty, !google.purchase_token.isEmpty else {
                throw Problem(.invalidField, "fields 'google.package_id' and 'google.purchase_token' must not be empty")
            }
            return StoreEvidence(platform: "google", appIdentifier: google.package_id, evidence: google.purchase_token)
        }
    }

    /// A signed transaction or a receipt is the evidence; a bare transaction id only when neither is sent
    /// (beside one of them it names the transaction to link).
    private static func appleEvidence(_ apple: Body.Apple) throws(Problem) -> StoreEvidence {
        guard !apple.bundle_id.isEmpty else { throw Problem(.invalidField, "field 'apple.bundle_id' must not be empty") }
        var namedTransactionID: String?
        if let given = nonEmpty(apple.transaction_id) {
            guard given.utf8.count <= 20, given.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw Problem(.invalidField, "field 'apple.transaction_id' must be an App Store transaction id (up to 20 digits)")
            }
            namedTransactionID = given
        }
        let signed = nonEmpty(apple.subscription_transaction_jws) ?? nonEmpty(apple.app_receipt_base64)
        if let signed {
            return StoreEvidence(platform: "apple", appIdentifier: apple.bundle_id, evidence: signed, namedTransactionID: namedTransactionID)
        }
        guard let transactionID = namedTransactionID else {
            throw Problem(.missingFields, "'apple' needs one of subscription_transaction_jws, app_receipt_base64 or transaction_id")
        }
        return StoreEvidence(platform: "apple", appIdentifier: apple.bundle_id, evidence: transactionID, evidenceKind: .transactionID)
    }

    private static func emailAddress(_ given: String?) throws(Problem) -> String? {
        guard let given else { return nil }
        guard let address = EmailAddress.validated(given) else {
            throw Problem(.invalidField, "field 'customer_details.email' is not an e-mail address")
        }
        return address
    }

    /// The `aflyr` object kept as sent (apple_search_ads is the app's to shape), but only an object, and small.
    private static func attribution(in data: Data) throws(Problem) -> Data {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let aflyr = object["aflyr"] as? [String: Any] else {
            throw Problem(.invalidField, "field 'aflyr' must be an object")
        }
        if let ads = aflyr["apple_search_ads"], !(ads is [String: Any]) {
            throw Problem(.invalidField, "field 'aflyr.apple_search_ads' has the wrong type (expected object)")
        }
        guard let encoded = try? JSONSerialization.data(withJSONObject: aflyr, options: [.sortedKeys]), encoded.count <= 8_192 else {
            throw Problem(.invalidField, "field 'aflyr' is larger than 8 KiB")
        }
        // Postgres's jsonb cannot hold a NUL character: refused here, as the caller's mistake.
        guard !String(decoding: encoded, as: UTF8.self).contains("\\u0000") else {
            throw Problem(.invalidField, "field 'aflyr' must not contain a NUL character")
        }
        return encoded
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
