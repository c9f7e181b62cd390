public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the `components:` sections by `OpenAPIDocument`.
extension AlogameGateway {
    public var openAPI: OpenAPIPart { Self.openAPIPart }

    public static let openAPIPart = OpenAPIPart(
        paths: #"""
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
      `receipt` is an SK2 JWS or SK1 base64 receipt (detected), `product_id` is cross-checked.
      `os_id` 2 is iOS (`receipt_info.platform` `ios`); 1 is Android (`platform` `android`): the
      store is chosen among the served Android stores by the client's registered apps, then by the
      receipt's form, then by a receipt only one store's SDK makes (a Unity receipt naming
      GooglePlay, Huawei's `{inAppPurchaseData, inAppDataSignature}`); a client with apps in two
      that sends a receipt neither claims gets 400 `INVALID_OS_ID` naming both. For Google Play,
      `receipt` is a purchase token, the purchase JSON or a Unity receipt; for Huawei AppGallery a
      purchase token or the InAppPurchaseData JSON. Without a Google service-account key (RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH, or the
      client's `--google-service-account-key`) an Android purchase is 502 `VERIFIER_ERROR` with a
      message starting `GOOGLE_NOT_CONFIGURED` (a retry does not help until the key is set); a client
      with no app in any Android store gets 422 `VERIFICATION_FAILED` (`NO_APP_REGISTERED`). 400
      `INVALID_OS_ID` is otherwise for an `os_id` other than 1 or 2.
      StoreKit 1: with RECEIPTGATE_APPSTORE_RECEIPT_MODE=server_api (the default when an App Store
      Server API key is set) each transaction is read from Apple's signed answer, so `type`,
      `storefront`, `price`, `currency` and `in_app_ownership_type` are filled as for SK2; with
      `verify_receipt` they are null, as the contract describes.
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
    summary: Alogame support tool — is this Apple order genuine, and did the gateway receive it?
    operationId: alogameLookupReceipt
    security:
      - clientSignature: []
    description: |
      Asks the App Store Server API (Look Up Order ID; needs RECEIPTGATE_APPSTORE_API_*) about the
      order, then reports each transaction against the ledger. Only the client's own game's records
      are shown (another game's is `recorded_for_this_game: false` with no id or state). Never a
      "failed" verdict: `gateway.found: false` carries `reason` NEVER_RECEIVED_BY_GATEWAY or DECODE_FAILED.
      `last_error_code` / `last_error_message` are the last `/iap/gateway/verify` of that transaction
      by this game that was refused after Apple's data named the transaction (`PRODUCT_MISMATCH`, another
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
              order_id: {type: string, pattern: "^[A-Za-z0-9]{1,64}$", description: "Apple's order id (letters and digits)"}
    responses:
      "200":
        description: The order as Apple and the gateway know it.
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
"""#,
        components: [
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
"""#,
])
}
