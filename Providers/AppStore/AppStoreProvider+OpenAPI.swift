public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the `components:` sections by `OpenAPIDocument`.
extension AppStoreProvider {
    public static let openAPIPart = OpenAPIPart(
        paths: #"""
            /v1/notifications/app-store:
              post:
                summary: App Store Server Notifications V2 (set this URL in App Store Connect).
                operationId: appStoreNotification
                description: |
                  The `signedPayload` is verified like any StoreKit 2 signed data (ES256, `x5c` chain to the
                  configured Apple root valid at `signedDate`, or now with online checks on, Apple's marker
                  extensions), as is any nested `signedTransactionInfo` / `signedRenewalInfo`. Its bundle id
                  and environment must be ones
                  some enabled client registered. The notification is recorded once, keyed by
                  `notificationUUID`, with its raw body; a repeat is answered 200 with `duplicate: true`.
                  Apple retries anything but 200.
                requestBody:
                  required: true
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [signedPayload]
                        properties:
                          signedPayload:
                            type: string
                            description: Compact JWS signed by Apple.
                responses:
                  "200":
                    $ref: "#/components/responses/NotificationAccepted"
                  "400":
                    description: "`INVALID_FIELD`: the body is not `{\"signedPayload\": string}`."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "401":
                    description: "`UNAUTHORIZED`: the payload is not genuine or not for a registered app; nothing is recorded. The message starts with the rule that failed (e.g. `JWS_SIGNATURE_INVALID`, `CERTIFICATE_CHAIN_NOT_TRUSTED`, `BUNDLE_ID_MISMATCH`)."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "429":
                    $ref: "#/components/responses/RateLimited"
                  "503":
                    description: "`VERIFIER_ERROR`: verification could not be completed now; the store will retry."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
            # ---- AccountLink dialect ----
            """#,
        sharedFieldNotes: ["receipt": "a StoreKit 2 signed transaction (JWS) or a StoreKit 1 base64 app receipt."])
}
