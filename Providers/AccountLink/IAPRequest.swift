import Foundation
import JSON
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
    /// The store whose object the body holds (keyed by its vendor code in lower case, `objectKey`).
    let store: StoreDeclaration
    /// The bundle id or package name: it names the tenant.
    let appIdentifier: String
    let evidence: String
    /// `.transactionID` only for a bare `transaction_id` (a store that looks one up): this dialect asks for it, no other API does.
    let evidenceKind: EvidenceKind
    /// A token store's `product_id`, for stores that ask with it.
    let productID: String?
    /// The store's declared evidence fields, as the object carried them.
    let evidenceFields: [String: String]
    /// `transaction_id` sent beside a signed transaction or receipt: the one to link.
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
                return .failure(
                    Problem(
                        .invalidField, "header \(name) must be printable text of at most \(maxHeaderLength) characters")
                )
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
            return .success(
                Headers(
                    appVersion: appVersion, deviceModel: deviceModel, os: os, osVersion: osVersion,
                    sdkVersion: sdkVersion,
                    forwardedFor: forwardedFor(fields["x-forwarded-for"]),
                    forwardedForIgnored: fields["x-forwarded-for"] != nil
                        && forwardedFor(fields["x-forwarded-for"]) == nil))
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

    /// What the body holds beside the one store object.
    private struct Body: Decodable {
        struct CustomerDetails: Decodable { let email: String }
        struct Aflyr: Decodable { let referrer_id: String? }

        let customer_details: CustomerDetails?
        let aflyr: Aflyr?
    }

    /// `stores`: the served stores; each is reached under its vendor code in lower case
    /// (`objectKey`), with the layout of its evidence's form (`storeEvidence`).
    static func parse(headers: Headers, body data: Data, stores: [StoreDeclaration]) -> Result<IAPRequest, Problem> {
        do throws(Problem) {
            let body = try decodedBody(data)
            // The store object's fields and `aflyr` are read as sent, whatever their shape.
            let object = JSONValue(parsing: data)?.object ?? [:]
            let store = try storeEvidence(in: object, stores: stores)
            let email = try emailAddress(body.customer_details?.email)
            let attribution = body.aflyr == nil ? nil : try attribution(in: object)
            return .success(
                IAPRequest(
                    headers: headers, store: store.store, appIdentifier: store.appIdentifier,
                    evidence: store.evidence, evidenceKind: store.evidenceKind, productID: store.productID,
                    evidenceFields: store.evidenceFields,
                    namedTransactionID: store.namedTransactionID, email: email, attribution: attribution))
        } catch {
            return .failure(error)
        }
    }

    /// The body key of a store's object: its vendor code in lower case.
    static func objectKey(for store: StoreDeclaration) -> String { store.vendorCode.lowercased() }

    /// Whether a store's object takes the signed-document layout (`bundle_id` and the document);
    /// otherwise it takes the token layout (`package_id`, `purchase_token`, ...).
    static func takesSignedLayout(_ store: StoreDeclaration) -> Bool { store.evidenceShapes.contains(.signedDocument) }

    /// What the one store object says: whose app, and the evidence to verify.
    private struct StoreEvidence {
        let store: StoreDeclaration
        let appIdentifier: String
        let evidence: String
        var evidenceKind = EvidenceKind.detected
        var namedTransactionID: String?
        var productID: String?
        var evidenceFields: [String: String] = [:]
    }

    private static func decodedBody(_ data: Data) throws(Problem) -> Body {
        switch JSONBody.decode(Body.self, from: data) {
        case .success(let decoded): return decoded
        case .failure(let problem): throw Problem(problem.code, problem.message)
        }
    }

    /// The one store object the body holds, read in its store's layout: a store whose apps hand
    /// over a signed document takes `bundle_id` and the document (`subscription_transaction_jws`
    /// or `app_receipt_base64`, or a bare `transaction_id` where the store can look one up); a
    /// token store takes `package_id`, `purchase_token`, an optional `product_id`, and the
    /// evidence fields it declares, by their names.
    private static func storeEvidence(
        in object: [String: JSONValue], stores: [StoreDeclaration]
    ) throws(Problem) -> StoreEvidence {
        // A key sent as null is absent, as generated clients write unused objects.
        let present = stores.filter { object[objectKey(for: $0)].map { !$0.isNull } ?? false }
        guard present.count == 1, let store = present.first else {
            let names = stores.map { "'\(objectKey(for: $0))'" }.joined(separator: ", ")
            throw Problem(.missingFields, "exactly one of \(names) is required")
        }
        let key = objectKey(for: store)
        guard let fields = object[key]?.object else {
            throw Problem(.invalidField, "field '\(key)' must be an object")
        }
        let reader = FieldReader(object: key, fields: fields)
        return takesSignedLayout(store)
            ? try signedEvidence(reader, store: store) : try tokenEvidence(reader, store: store)
    }

    /// A signed transaction or a receipt is the evidence; a bare transaction id only when neither is sent
    /// (beside one of them it names the transaction to link).
    private static func signedEvidence(_ fields: FieldReader, store: StoreDeclaration) throws(Problem) -> StoreEvidence
    {
        let appIdentifier = try fields.identifier("bundle_id")
        var namedTransactionID: String?
        if store.evidenceKinds.contains(.transactionID), let given = try fields.optional("transaction_id") {
            guard store.transactionIDIsWellFormed?(given) ?? (given.utf8.count <= 256) else {
                throw Problem(
                    .invalidField,
                    "field '\(fields.object).transaction_id' is not a \(store.displayName) transaction id")
            }
            namedTransactionID = given
        }
        let jws = try fields.optional("subscription_transaction_jws"),
            receipt = try fields.optional("app_receipt_base64")
        if let signed = jws ?? receipt {
            return StoreEvidence(
                store: store, appIdentifier: appIdentifier, evidence: signed, namedTransactionID: namedTransactionID)
        }
        guard let transactionID = namedTransactionID else {
            let transaction = store.evidenceKinds.contains(.transactionID) ? " or transaction_id" : ""
            throw Problem(
                .missingFields,
                "'\(fields.object)' needs one of subscription_transaction_jws, app_receipt_base64\(transaction)")
        }
        return StoreEvidence(
            store: store, appIdentifier: appIdentifier, evidence: transactionID, evidenceKind: .transactionID)
    }

    private static func tokenEvidence(_ fields: FieldReader, store: StoreDeclaration) throws(Problem) -> StoreEvidence {
        var evidence = StoreEvidence(
            store: store, appIdentifier: try fields.identifier("package_id"),
            evidence: try fields.required("purchase_token"))
        if let productID = try fields.optional("product_id") {
            if let problem = Identifier.problem(productID) {
                throw Problem(.invalidField, "field '\(fields.object).product_id' \(problem)")
            }
            evidence.productID = productID
        }
        for field in store.evidenceFields {
            guard let value = try fields.optional(field.name) else {
                if field.required {
                    throw Problem(
                        .missingFields, "field '\(fields.object).\(field.name)' is required: \(field.description)")
                }
                continue
            }
            guard value.utf8.count <= field.maxLength else {
                throw Problem(
                    .invalidField, "field '\(fields.object).\(field.name)' is longer than \(field.maxLength) bytes")
            }
            evidence.evidenceFields[field.name] = value
        }
        return evidence
    }

    /// A store object's string fields; every problem names `object.field`.
    private struct FieldReader {
        let object: String
        let fields: [String: JSONValue]

        func optional(_ name: String) throws(Problem) -> String? {
            guard let value = fields[name], !value.isNull else { return nil }
            guard let text = value.string else {
                throw Problem(.invalidField, "field '\(object).\(name)' has the wrong type (expected string)")
            }
            return text.isEmpty ? nil : text
        }

        /// A required field that names something (an app): no control characters, bounded.
        func identifier(_ name: String) throws(Problem) -> String {
            let text = try required(name)
            if let problem = Identifier.problem(text) {
                throw Problem(.invalidField, "field '\(object).\(name)' \(problem)")
            }
            return text
        }

        func required(_ name: String) throws(Problem) -> String {
            guard let value = fields[name], !value.isNull else {
                throw Problem(.missingFields, "field '\(object).\(name)' is required")
            }
            guard let text = try optional(name) else {
                throw Problem(.invalidField, "field '\(object).\(name)' must not be empty")
            }
            return text
        }
    }

    private static func emailAddress(_ given: String?) throws(Problem) -> String? {
        guard let given else { return nil }
        guard let address = EmailAddress.validated(given) else {
            throw Problem(.invalidField, "field 'customer_details.email' is not an e-mail address")
        }
        return address
    }

    /// The `aflyr` object kept as sent (apple_search_ads is the app's to shape), but only an object, and small.
    private static func attribution(in object: [String: JSONValue]) throws(Problem) -> Data {
        guard let aflyr = object["aflyr"]?.object else {
            throw Problem(.invalidField, "field 'aflyr' must be an object")
        }
        if let ads = aflyr["apple_search_ads"], ads.object == nil {
            throw Problem(.invalidField, "field 'aflyr.apple_search_ads' has the wrong type (expected object)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let encoded = try? encoder.encode(aflyr), encoded.count <= 8_192
        else {
            throw Problem(.invalidField, "field 'aflyr' is larger than 8 KiB")
        }
        // Postgres's jsonb cannot hold a NUL character: refused here, as the caller's mistake.
        guard !String(decoding: encoded, as: UTF8.self).contains("\\u0000") else {
            throw Problem(.invalidField, "field 'aflyr' must not contain a NUL character")
        }
        return encoded
    }
}
