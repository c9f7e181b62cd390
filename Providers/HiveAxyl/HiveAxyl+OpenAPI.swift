public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the `components:` sections by `OpenAPIDocument`. Where the contract
// names stores (`providerId`, the fields a store needs beside the receipt) the text is written from
// the served stores' facts by the same rules the routes read the body with (`HiveAxylBody`).
extension HiveAxyl {
    public func openAPI(stores: [StoreDeclaration]) -> OpenAPIPart { Self.openAPIPart(stores: stores) }

    public static func openAPIPart(stores: [StoreDeclaration]) -> OpenAPIPart {
        OpenAPIPart(paths: paths(stores: stores), components: components)
    }

    /// What `providerId` takes: each served store's vendor code, with what `axylReceipt` is for it
    /// (the store's own note on the native body's `receipt`) and the fields it needs beside it.
    /// Lines indented for a route's description.
    static func providerText(_ stores: [StoreDeclaration]) -> String {
        var lines = [
            "`providerId` is the vendor code of a store this server serves, and `axylReceipt` that store's evidence:"
        ]
        for store in stores {
            var line = "- `\(store.vendorCode)` (\(store.displayName))"
            if let note = store.openAPI.sharedFieldNotes["receipt"] {
                line += ": " + note.replacingOccurrences(of: "\n", with: " ")
            }
            let fields = store.evidenceFields.map {
                "`\(HiveAxylBody.camelCase($0.name))`\($0.required ? "" : " (optional)")"
            }
            if !fields.isEmpty { line += " With " + fields.joined(separator: ", ") + "." }
            lines.append(line)
        }
        lines += [
            "A field a store needs beside the receipt is its native name in camelCase. A providerId whose store this",
            "server does not serve is a 400 / 4000 naming those it serves. A store not configured for the client (its",
            "credentials missing) answers 502 / 5020 with a message starting with the store's `..._NOT_CONFIGURED`",
            "reason; a retry does not fix it.",
        ]
        return OpenAPIPart.indented(lines.joined(separator: "\n"), by: 6)
    }

    /// `providerId` and the served stores' evidence fields, as request-body properties.
    static func providerProperties(_ stores: [StoreDeclaration]) -> String {
        var lines = ["providerId: {type: string, enum: \(OpenAPIPart.flowList(stores.map(\.vendorCode)))}"]
        var written: Set<String> = []
        for store in stores {
            for field in store.evidenceFields where written.insert(HiveAxylBody.camelCase(field.name)).inserted {
                let users = stores.filter { $0.evidenceFields.contains { $0.name == field.name } }.map(\.vendorCode)
                    .joined(separator: " or ")
                let description =
                    "\(field.required ? "required" : "optional") with providerId \(users): \(field.description)"
                lines.append(
                    "\(HiveAxylBody.camelCase(field.name)): {type: string, maxLength: \(field.maxLength), description: \(OpenAPIPart.quoted(description))}"
                )
            }
        }
        return OpenAPIPart.indented(lines.joined(separator: "\n"), by: 14)
    }

    /// The vendor codes of the stores a bare purchase token may come from.
    static func tokenStores(_ stores: [StoreDeclaration]) -> String {
        let codes = stores.filter { $0.evidenceShapes.contains(.purchaseToken) }.map { "`\($0.vendorCode)`" }
        return codes.isEmpty ? "none served" : codes.joined(separator: ", ")
    }

    static func paths(stores: [StoreDeclaration]) -> String {
        #"""
        /auth/v1/token:
          post:
            summary: Hive Axyl access token — OAuth 2.0 client credentials (RFC 6749 §4.4).
            operationId: hiveAxylToken
            description: |
              `grant_type=client_credentials`; the client id and secret (from `receiptgate client create`) by
              HTTP Basic or as `client_id`/`client_secret` body fields (one way only), the body form-encoded
              or JSON. A JSON body may name them `clientId`/`clientSecret` (Hive Axyl's app servers send
              `{"clientId": ..., "clientSecret": ...}`) and may leave out `grant_type` (client credentials
              is the only grant); the same field under both names is a 400. A form body needs `grant_type`. The answer is an opaque bearer token, stored only as its SHA-256, valid on every
              process sharing the database for `expires_in` seconds (RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS,
              default 3600), and revoked when the client's secret is rotated or the client is disabled.
              Errors are RFC 6749 §5.2 objects (401 after a Basic attempt carries `WWW-Authenticate: Basic`).
              Each caller address may ask 120 times a minute (`hiveaxyl.token`); more get 429 `slow_down`
              with `Retry-After`.
            requestBody:
              required: true
              content:
                application/x-www-form-urlencoded:
                  schema: {$ref: "#/components/schemas/HiveAxylTokenRequest"}
                application/json:
                  schema: {$ref: "#/components/schemas/HiveAxylTokenJSONRequest"}
            responses:
              "200":
                description: "An access token, sent with `Cache-Control: no-store`."
                content:
                  application/json:
                    schema:
                      type: object
                      required: [access_token, token_type, expires_in]
                      properties:
                        access_token: {type: string}
                        token_type: {type: string, enum: [Bearer]}
                        expires_in: {type: integer, minimum: 1}
              "400": {$ref: "#/components/responses/HiveAxylTokenError"}
              "401": {$ref: "#/components/responses/HiveAxylTokenError"}
              "429": {$ref: "#/components/responses/HiveAxylTokenError"}
              "503": {$ref: "#/components/responses/HiveAxylTokenError"}
        /payment/v1/purchase/verify:
          post:
            summary: Hive Axyl purchase verify — consumable and one-time purchases.
            operationId: hiveAxylPurchaseVerify
            security:
              - hiveAxylToken: []
            description: |
              `Authorization: Bearer <access token>`, or the token alone (`Authorization: <access token>`),
              and `X-App-Id` (one of the client's `--app-id`s).
        \#(providerText(stores))
              A Sandbox purchase answers 100 with
              `hiveAxylPurchaseTest: "Y"` when the client accepts sandbox (the default for a client created
              with `--app-id`); a client created with `--environments production` gets 412 / 4120.
              `requestType` 1 new purchase, 2 restore (the same answer; a restore is normally `hiveAxylDuplicated: true`).
              Refunded or revoked purchases — also when the ledger learned it later from a store notification —
              answer 100 with `hiveAxylPurchaseCancelState: 1`: do not deliver. An auto-renewable subscription
              here is a 400 (use the subscription route). Codes: see docs/dialects/hive-axyl.md.
            parameters:
              - $ref: "#/components/parameters/HiveAxylAppId"
            requestBody:
              required: true
              content:
                application/json:
                  schema:
                    type: object
                    required: [providerId, axylReceipt, productId, accountUuid, requestType]
                    properties:
        \#(providerProperties(stores))
                      axylReceipt: {type: string}
                      productId: {type: string, maxLength: 256}
                      accountUuid: {type: string, maxLength: 256}
                      requestType: {type: integer, enum: [1, 2]}
                      playerId: {oneOf: [{type: string, maxLength: 256}, {type: integer}]}
                      serverId: {oneOf: [{type: string, maxLength: 256}, {type: integer}]}
                      marketPid: {type: string, maxLength: 256, description: "accepted, not used: productId is what the receipt is checked against"}
            responses:
              "200":
                description: Verified (`result.code` 100).
                content:
                  application/json:
                    schema:
                      allOf:
                        - $ref: "#/components/schemas/HiveAxylEnvelope"
                        - type: object
                          properties:
                            data: {$ref: "#/components/schemas/HiveAxylPurchaseData"}
              "400": {$ref: "#/components/responses/HiveAxylError"}
              "401": {$ref: "#/components/responses/HiveAxylError"}
              "403": {$ref: "#/components/responses/HiveAxylError"}
              "409": {$ref: "#/components/responses/HiveAxylError"}
              "412": {$ref: "#/components/responses/HiveAxylError"}
              "422": {$ref: "#/components/responses/HiveAxylError"}
              "429": {$ref: "#/components/responses/HiveAxylRateLimited"}
              "502": {$ref: "#/components/responses/HiveAxylError"}
        /payment/v1/subscription/verify:
          post:
            summary: Hive Axyl subscription verify — auto-renewable subscriptions.
            operationId: hiveAxylSubscriptionVerify
            security:
              - hiveAxylToken: []
            description: |
              Same headers and providers as the purchase route. `country` is an ISO 3166-1 alpha-2 code and
              `language` an ISO 639-1 code (either case). `storeTransactionId` may be left out when the
              receipt carries its transaction (a signed document, a purchase-data JSON); it is required with
              a bare purchase token (\#(tokenStores(stores))), and when given it must be the receipt's transaction, original transaction or
              order. The data is the ledger's subscription: the latest period it knows (a renewal or refund
              learned from a store notification after the JWS was signed shows here). A receipt that is not
              an auto-renewable subscription is a 400.
            parameters:
              - $ref: "#/components/parameters/HiveAxylAppId"
            requestBody:
              required: true
              content:
                application/json:
                  schema:
                    type: object
                    required: [providerId, axylReceipt, accountUuid, country, language, requestType]
                    properties:
        \#(providerProperties(stores))
                      axylReceipt: {type: string}
                      accountUuid: {type: string, maxLength: 256}
                      country: {type: string, minLength: 2, maxLength: 2}
                      language: {type: string, minLength: 2, maxLength: 2}
                      requestType: {type: integer, enum: [1, 2]}
                      storeTransactionId: {type: string, maxLength: 256}
            responses:
              "200":
                description: Verified (`result.code` 100).
                content:
                  application/json:
                    schema:
                      allOf:
                        - $ref: "#/components/schemas/HiveAxylEnvelope"
                        - type: object
                          properties:
                            data: {$ref: "#/components/schemas/HiveAxylSubscriptionData"}
              "400": {$ref: "#/components/responses/HiveAxylError"}
              "401": {$ref: "#/components/responses/HiveAxylError"}
              "403": {$ref: "#/components/responses/HiveAxylError"}
              "409": {$ref: "#/components/responses/HiveAxylError"}
              "412": {$ref: "#/components/responses/HiveAxylError"}
              "422": {$ref: "#/components/responses/HiveAxylError"}
              "429": {$ref: "#/components/responses/HiveAxylRateLimited"}
              "502": {$ref: "#/components/responses/HiveAxylError"}
        """#
    }

    static let components = [
        "securitySchemes": #"""
        hiveAxylToken:
          type: http
          scheme: bearer
          description: "An access token from `POST /auth/v1/token`, as `Authorization: Bearer <token>` or bare (`Authorization: <token>`); missing, expired or revoked → 401 with `WWW-Authenticate: Bearer error=\"invalid_token\"`."
        """#,
        "parameters": #"""
        HiveAxylAppId:
          name: X-App-Id
          in: header
          required: true
          description: One of the client's app ids (`receiptgate client create/update --app-id ID`); anything else is 403, code 4030.
          schema: {type: string}
        """#,
        "responses": #"""
        HiveAxylError:
          description: "The Hive Axyl envelope with `data: null`: 400 code 4000 (missing or invalid field, named), 401 4010 (access token missing, expired or revoked; with `WWW-Authenticate`), 403 4030 (X-App-Id), 409 4090 (redeemed by another game), 412 4120 (environment not accepted: the client's `--environments` leaves it out), 422 4220 (receipt rejected; the reason is named) or 4221 (product mismatch), 502 5020 (store unreachable, safe to retry; or the store is not configured here, a `..._NOT_CONFIGURED` reason, which a retry does not fix)."
          content:
            application/json:
              schema: {$ref: "#/components/schemas/HiveAxylFailure"}
        HiveAxylRateLimited:
          description: "429 code 4290: more than `hiveaxyl.client` allows (6000 a minute per client and process by default; RECEIPTGATE_RATE_LIMITS); wait `Retry-After` seconds."
          headers:
            Retry-After:
              description: Seconds until the window resets.
              schema: {type: integer, minimum: 1}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/HiveAxylFailure"}
        HiveAxylTokenError:
          description: "RFC 6749 §5.2: 400 `invalid_request` or `unsupported_grant_type`, 401 `invalid_client`; 429 `slow_down` (with Retry-After) and 503 `temporarily_unavailable` are safe to retry."
          content:
            application/json:
              schema:
                type: object
                required: [error]
                properties:
                  error: {type: string, enum: [invalid_request, unsupported_grant_type, invalid_client, slow_down, temporarily_unavailable]}
                  error_description: {type: string}
        """#,
        "schemas": #"""
        HiveAxylTokenRequest:
          type: object
          required: [grant_type]
          properties:
            grant_type: {type: string, enum: [client_credentials]}
            client_id: {type: string}
            client_secret: {type: string}
            scope: {type: string, description: ignored}
        HiveAxylTokenJSONRequest:
          type: object
          properties:
            grant_type: {type: string, enum: [client_credentials], description: "optional in JSON; also `grantType`"}
            client_id: {type: string}
            client_secret: {type: string}
            clientId: {type: string, description: "Hive Axyl's name for client_id (send one of the two)"}
            clientSecret: {type: string, description: "Hive Axyl's name for client_secret (send one of the two)"}
            scope: {type: string, description: ignored}
        HiveAxylResult:
          type: object
          required: [code, message]
          properties:
            code: {type: integer, enum: [100, 4000, 4010, 4030, 4090, 4120, 4220, 4221, 4290, 5020]}
            message: {type: string, description: "SUCCESS for 100; otherwise says why, naming the field or the store's reason"}
        HiveAxylEnvelope:
          type: object
          required: [result, data]
          properties:
            result: {$ref: "#/components/schemas/HiveAxylResult"}
        HiveAxylFailure:
          type: object
          required: [result, data]
          properties:
            result: {$ref: "#/components/schemas/HiveAxylResult"}
            data: {type: object, nullable: true, enum: [null]}
        HiveAxylPurchaseData:
          type: object
          description: Every field always present; what the store does not say is null.
          required: [hiveAxylPurchaseCancelState, hiveAxylDuplicated, hiveAxylAccountUuidCompare, hiveAxylPurchaseTest, hiveAxylProductId,
                     hiveAxylQuantity, hiveAxylPrice, hiveAxylCurrency, hiveAxylStoreTransactionId, hiveAxylOriginalStoreTransactionId,
                     hiveAxylPurchaseDate]
          properties:
            hiveAxylPurchaseCancelState: {type: integer, enum: [0, 1], description: "1: refunded or revoked (now, per the ledger) — do not deliver"}
            hiveAxylDuplicated: {type: boolean, description: "verified before by a client of this game"}
            hiveAxylAccountUuidCompare: {type: integer, enum: [1, 2, 9], description: "1 match, 2 mismatch, 9 not comparable"}
            hiveAxylPurchaseTest: {type: string, enum: ["Y", "N"], description: "Y: Sandbox / test purchase"}
            hiveAxylProductId: {type: string, nullable: true}
            hiveAxylQuantity: {type: integer, nullable: true}
            hiveAxylPrice: {type: number, nullable: true, description: "the verified amount in currency units, e.g. 0.99"}
            hiveAxylCurrency: {type: string, nullable: true, description: ISO 4217}
            hiveAxylStoreTransactionId: {type: string}
            hiveAxylOriginalStoreTransactionId: {type: string}
            hiveAxylPurchaseDate: {type: integer, nullable: true, description: epoch milliseconds}
        HiveAxylSubscriptionData:
          type: object
          description: The ledger's subscription (its latest period); every field always present.
          required: [hiveAxylExpiresDate, hiveAxylRefundDate, hiveAxylDuplicated, hiveAxylAccountUuidCompare, hiveAxylProductId,
                     hiveAxylStoreTransactionId, hiveAxylOriginalStoreTransactionId, hiveAxylPurchaseTest, hiveAxylAutoRenew,
                     hiveAxylSubscriptionState]
          properties:
            hiveAxylExpiresDate: {type: integer, nullable: true, description: epoch milliseconds}
            hiveAxylRefundDate: {type: integer, nullable: true, description: "epoch milliseconds, when refunded or revoked: reclaim the benefits"}
            hiveAxylDuplicated: {type: boolean}
            hiveAxylAccountUuidCompare: {type: integer, enum: [1, 2, 9]}
            hiveAxylProductId: {type: string, nullable: true}
            hiveAxylStoreTransactionId: {type: string, description: "the current period's transaction"}
            hiveAxylOriginalStoreTransactionId: {type: string, description: "the first payment's transaction"}
            hiveAxylPurchaseTest: {type: string, enum: ["Y", "N"]}
            hiveAxylAutoRenew: {type: boolean, nullable: true, description: "null until the store says"}
            hiveAxylSubscriptionState: {type: string, enum: [active, grace_period, billing_retry, expired, refunded, revoked]}
        """#,
    ]
}
