public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the `components:` sections by `OpenAPIDocument`. `os_id` names a
// device, not a store: the stores each value reaches are written from the served stores' facts by
// the rule the route chooses with (`StoreDeclaration.dialectCandidates`).
extension AlogameGateway {
    public func openAPI(stores: [StoreDeclaration]) -> OpenAPIPart { Self.openAPIPart(stores: stores) }

    public static func openAPIPart(stores: [StoreDeclaration]) -> OpenAPIPart {
        OpenAPIPart(paths: paths(stores: stores), components: components)
    }

    /// What `receipt` is for each store an `os_id` reaches here (the store's own note on the
    /// native body's `receipt`), one line each, indented for the route's description.
    static func receiptText(_ stores: [StoreDeclaration]) -> String {
        var lines: [String] = []
        for (osID, system) in osIDs {
            for store in StoreDeclaration.dialectCandidates(runningOn: system, among: stores) {
                lines.append(
                    "- `os_id` \(osID), \(store.displayName): "
                        + (store.openAPI.sharedFieldNotes["receipt"] ?? "the store's evidence"))
            }
        }
        return OpenAPIPart.indented(
            (lines.isEmpty ? ["- none: no served store runs on iOS or Android"] : lines).joined(separator: "\n"), by: 6)
    }

    /// The store `lookup-receipt` asks, by name, for the route's text.
    static func lookupStoreName(_ stores: [StoreDeclaration]) -> String {
        lookupStore(among: stores)?.displayName ?? "the store of iOS apps (none is served here: 502)"
    }

    static func paths(stores: [StoreDeclaration]) -> String {
        #"""
        /iap/gateway/verify:
          post:
            summary: Alogame IAP Gateway verify, drop-in compatible.
            operationId: alogameVerify
            security:
              - clientSignature: []
            description: |
              The Alogame gateway contract, to the letter: same signature as `/v1/verify`. The route is
              idempotent and refuses no replay: the identical signed request sent again within the
              300-second window is run again, so a purchase the first call recorded answers 409
              `DUPLICATE_TRANSACTION` and a refused one gets its refusal again (past the window it is 401
              `UNAUTHORIZED`, like any stale request). A receipt already verified answers 409 `DUPLICATE_TRANSACTION`.
              `receipt` is the store's evidence (detected by its form), `product_id` is cross-checked.
              `os_id` names a device, not a store: 2 is iOS (`receipt_info.platform` `ios`), 1 is Android
              (`platform` `android`). The store is chosen among the served stores of that system, less any
              needing a field beside the receipt (this contract carries none), by the client's registered
              apps, then by the receipt's form, then by a receipt only one store's SDK makes; a client with
              apps in several that sends a receipt none of them claims alone gets 400 `INVALID_OS_ID` naming
              them, and a client with no app in any of them gets 422 `VERIFICATION_FAILED`
              (`NO_APP_REGISTERED`). 400 `INVALID_OS_ID` is otherwise for an `os_id` other than 1 or 2, or
              one no served store runs on. What `receipt` is, per store reached here:
        \#(receiptText(stores))
              A store not configured for the client (its credentials missing) answers 502 `VERIFIER_ERROR`
              with a message starting with the store's `..._NOT_CONFIGURED` reason (a retry does not help
              until it is configured). `type`, `storefront`, `price`, `currency` and `in_app_ownership_type`
              are what the store's evidence says, null where it says nothing (docs/stores.md tells, per
              store and receipt mode, what is filled).
            parameters:
              - $ref: "#/components/parameters/ClientID"
              - $ref: "#/components/parameters/Timestamp"
              - $ref: "#/components/parameters/Signature"
              - $ref: "#/components/parameters/SignatureVersion"
            requestBody:
              required: true
              content:
                application/json:
                  schema:
                    type: object
                    required: [receipt, product_id, os_id]
                    properties:
                      receipt: {type: string, minLength: 1}
                      product_id: {type: string, minLength: 1}
                      os_id: {type: integer, enum: [1, 2]}
                      player_id: {type: string, maxLength: 256}
                      character_id: {type: string, maxLength: 256}
                      server_id: {type: string, maxLength: 256}
                      game_version: {type: string, maxLength: 256}
            responses:
              "200":
                description: Verified.
                content:
                  application/json:
                    schema:
                      type: object
                      required: [success, transaction_id, product_id, receipt_info]
                      properties:
                        success: {type: boolean, enum: [true]}
                        transaction_id: {type: string}
                        product_id: {type: string, nullable: true}
                        receipt_info:
                          type: object
                          required: [platform, environment, quantity, purchase_date_ms, original_transaction_id, type, storefront, price, currency, in_app_ownership_type]
                          properties:
                            platform: {type: string, enum: [ios, android], description: "ios for os_id 2, android for os_id 1 (whichever Android store proved it)"}
                            environment: {type: string, enum: [Sandbox, Production]}
                            quantity: {type: integer, nullable: true}
                            purchase_date_ms: {type: integer, nullable: true}
                            original_transaction_id: {type: string, nullable: true}
                            type: {type: string, nullable: true, enum: [Consumable, Non-Consumable, Auto-Renewable Subscription, Non-Renewing Subscription, null]}
                            storefront: {type: string, nullable: true}
                            price: {type: integer, nullable: true, description: "milliunits of currency"}
                            currency: {type: string, nullable: true}
                            in_app_ownership_type: {type: string, nullable: true, enum: [PURCHASED, FAMILY_SHARED, null]}
              "400": {$ref: "#/components/responses/AlogameError"}
              "401": {$ref: "#/components/responses/AlogameError"}
              "409": {$ref: "#/components/responses/AlogameError"}
              "412": {$ref: "#/components/responses/AlogameError"}
              "422": {$ref: "#/components/responses/AlogameError"}
              "502": {$ref: "#/components/responses/AlogameError"}
              "503": {$ref: "#/components/responses/AlogameError"}
        /iap/gateway/lookup-receipt:
          post:
            summary: "Alogame support tool — is this \#(lookupStoreName(stores)) order genuine, and did the gateway receive it?"
            operationId: alogameLookupReceipt
            security:
              - clientSignature: []
            description: |
              Asks the store of iOS apps (\#(lookupStoreName(stores))) about the order with its order
              lookup (docs/stores.md says what it needs), then reports each transaction against the ledger. Only the client's own game's records
              are shown (another game's is `recorded_for_this_game: false` with no id or state). Never a
              "failed" verdict: `gateway.found: false` carries `reason` NEVER_RECEIVED_BY_GATEWAY or DECODE_FAILED.
              `last_error_code` / `last_error_message` are the last `/iap/gateway/verify` of that transaction
              by this game that was refused after the store's data named the transaction (`PRODUCT_MISMATCH`, another
              game's `DUPLICATE_TRANSACTION`...), as that call was answered — also when a later call succeeded;
              null when there is none. A refusal before the transaction is known (a forged or unreadable receipt,
              a receipt from an environment the client refuses) names no transaction and shows nowhere.
            parameters:
              - $ref: "#/components/parameters/ClientID"
              - $ref: "#/components/parameters/Timestamp"
              - $ref: "#/components/parameters/Signature"
              - $ref: "#/components/parameters/SignatureVersion"
            requestBody:
              required: true
              content:
                application/json:
                  schema:
                    type: object
                    required: [order_id]
                    properties:
                      order_id: {type: string, pattern: "^[A-Za-z0-9]{1,64}$", description: "the order id on the customer's \#(lookupStoreName(stores)) invoice (letters and digits)"}
            responses:
              "200":
                description: The order as the store and the gateway know it.
                content:
                  application/json:
                    schema:
                      type: object
                      required: [order_id, game_id, found, environment, transactions]
                      properties:
                        order_id: {type: string}
                        game_id: {type: integer, nullable: true}
                        found: {type: boolean}
                        environment: {type: string, nullable: true, enum: [Production, Sandbox, null]}
                        transactions:
                          type: array
                          items:
                            type: object
                            required: [transaction_id, product_id, gateway]
                            properties:
                              transaction_id: {type: string, nullable: true}
                              product_id: {type: string, nullable: true}
                              gateway:
                                type: object
                                required: [found, tx_mgmt_id, current_state, last_error_code, last_error_message, recorded_for_this_game]
                                properties:
                                  found: {type: boolean}
                                  tx_mgmt_id: {type: integer, nullable: true}
                                  current_state: {type: string, nullable: true}
                                  last_error_code: {type: string, nullable: true, description: "the `error` of the last refused verify of this transaction by this game"}
                                  last_error_message: {type: string, nullable: true, description: "its `message`"}
                                  recorded_for_this_game: {type: boolean}
                                  reason: {type: string, enum: [NEVER_RECEIVED_BY_GATEWAY, DECODE_FAILED]}
              "400": {$ref: "#/components/responses/AlogameError"}
              "401": {$ref: "#/components/responses/AlogameError"}
              "502": {$ref: "#/components/responses/AlogameError"}
              "503": {$ref: "#/components/responses/AlogameError"}
        """#
    }

    static let components = [
        "responses": #"""
        AlogameError:
          description: "The gateway's error shape: 400 MISSING_FIELDS or INVALID_OS_ID, 401 UNAUTHORIZED, 409 DUPLICATE_TRANSACTION, 412 ENVIRONMENT_MISMATCH, 422 PRODUCT_MISMATCH or VERIFICATION_FAILED, 429 RATE_LIMITED (with Retry-After), 502 VERIFIER_ERROR, 503 VERIFIER_ERROR when the database is unavailable (with Retry-After)."
          content:
            application/json:
              schema:
                type: object
                required: [success, error, message]
                properties:
                  success: {type: boolean, enum: [false]}
                  error: {type: string, enum: [MISSING_FIELDS, INVALID_OS_ID, UNAUTHORIZED, FORBIDDEN, DUPLICATE_TRANSACTION, ENVIRONMENT_MISMATCH, PRODUCT_MISMATCH, VERIFICATION_FAILED, ACCOUNT_MISMATCH, RATE_LIMITED, VERIFIER_ERROR]}
                  message: {type: string}
        """#
    ]
}
