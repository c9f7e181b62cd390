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

    /// The seed documents the SDK headers as free strings with examples (`8.10.123`, `mobile`,
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
        do {
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
        } catch let problem as Problem {
            return .failure(problem)
        } catch {
            return .failure(Problem(.invalidField, "headers could not be read"))
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
        let body: Body
        switch JSONBody.decode(Body.self, from: data) {
        case .success(let decoded): body = decoded
        case .failure(let problem): return .failure(Problem(problem.code, problem.message))
        }
        let platform: String, appIdentifier: String, evidence: String
        var evidenceKind = EvidenceKind.detected
        var namedTransactionID: String?
        switch (body.apple, body.google) {
        case (nil, nil), (.some, .some):
            return .failure(Problem(.missingFields, "exactly one of 'apple' or 'google' is required"))
        case (let apple?, nil):
            guard !apple.bundle_id.isEmpty else { return .failure(Problem(.invalidField, "field 'apple.bundle_id' must not be empty")) }
            platform = "apple"
            appIdentifier = apple.bundle_id
            if let given = nonEmpty(apple.transaction_id) {
                guard given.utf8.count <= 20, given.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                    return .failure(Problem(.invalidField, "field 'apple.transaction_id' must be an App Store transaction id (up to 20 digits)"))
                }
                namedTransactionID = given
            }
            if let jws = nonEmpty(apple.subscription_transaction_jws) {
                evidence = jws
            } else if let receipt = nonEmpty(apple.app_receipt_base64) {
                evidence = receipt
            } else if let transactionID = namedTransactionID {
                evidence = transactionID
                evidenceKind = .transactionID
                namedTransactionID = nil
            } else {
                return .failure(Problem(.missingFields, "'apple' needs one of subscription_transaction_jws, app_receipt_base64 or transaction_id"))
            }
        case (nil, let google?):
            guard !google.package_id.isEmpty, !google.purchase_token.isEmpty else {
                return .failure(Problem(.invalidField, "fields 'google.package_id' and 'google.purchase_token' must not be empty"))
            }
            platform = "google"
            appIdentifier = google.package_id
            evidence = google.purchase_token
        }
        var email: String?
        if let given = body.customer_details?.email {
            guard let address = EmailAddress.validated(given) else {
                return .failure(Problem(.invalidField, "field 'customer_details.email' is not an e-mail address"))
            }
            email = address
        }
        var attribution: Data?
        if body.aflyr != nil {
            // Kept as sent (apple_search_ads is the app's to shape), but only an object, and small.
            guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let aflyr = object["aflyr"] as? [String: Any] else {
                return .failure(Problem(.invalidField, "field 'aflyr' must be an object"))
            }
            if let ads = aflyr["apple_search_ads"], !(ads is [String: Any]) {
                return .failure(Problem(.invalidField, "field 'aflyr.apple_search_ads' has the wrong type (expected object)"))
            }
            guard let encoded = try? JSONSerialization.data(withJSONObject: aflyr, options: [.sortedKeys]), encoded.count <= 8_192 else {
                return .failure(Problem(.invalidField, "field 'aflyr' is larger than 8 KiB"))
            }
            // Postgres's jsonb cannot hold a NUL character: refused here, as the caller's mistake.
            guard !String(decoding: encoded, as: UTF8.self).contains("\\u0000") else {
                return .failure(Problem(.invalidField, "field 'aflyr' must not contain a NUL character"))
            }
            attribution = encoded
        }
        return .success(IAPRequest(headers: headers, platform: platform, appIdentifier: appIdentifier, evidence: evidence, evidenceKind: evidenceKind,
                                   namedTransactionID: namedTransactionID, email: email,
                                   attribution: attribution))
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
