public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the `components:` sections by `OpenAPIDocument`.
extension GooglePlayProvider {
    public static let openAPIPart = OpenAPIPart(
        paths: #"""
            /v1/notifications/google-play:
              post:
                summary: Google Play real-time developer notifications (the Pub/Sub push endpoint).
                operationId: googlePlayNotification
                description: |
                  A Pub/Sub push. Authenticated by the OIDC bearer token of an authenticated push subscription
                  (RS256 by a key of `RECEIPTGATE_GOOGLE_JWKS_URL`, issuer Google, `aud` =
                  `RECEIPTGATE_GOOGLE_PUSH_AUDIENCE`, `email` = `RECEIPTGATE_GOOGLE_PUSH_SERVICE_ACCOUNT`,
                  `email_verified`, not expired) or, where configured instead, `?token=` equal to
                  `RECEIPTGATE_GOOGLE_PUSH_TOKEN`. The purchase is fetched from Google with the owning client's
                  key and the ledger changes only as Google's answer shows; recorded once by `message.messageId`
                  (voids by `voided:<orderId>`, shared with the voided-purchases poll). A subscription notification
                  whose change Google's `subscriptionsv2` answer does not show (a revocation of a subscription
                  Google reads active, an unknown token) is answered 200, kept as `<type>_UNCONFIRMED` and changes
                  nothing; a revocation is a refund only when `voidedpurchases.list` lists the latest order with
                  that token, else an expiry if Google reads it expired. A voided purchase is applied only
                  when Google confirms it (listed by `voidedpurchases.list` with its token, or the purchase
                  fetched by the token is that order and canceled); otherwise it is answered 200, kept as
                  `VOIDED_PURCHASE_UNCONFIRMED` and changes nothing. `testNotification` is answered 200
                  and changes nothing in the ledger.
                parameters:
                  - name: token
                    in: query
                    required: false
                    schema: {type: string}
                    description: The shared push token, when OIDC push authentication is not used.
                requestBody:
                  required: true
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [message]
                        properties:
                          message:
                            type: object
                            required: [data, messageId]
                            properties:
                              data: {type: string, description: "Base64 JSON of the developer notification."}
                              messageId: {type: string}
                              publishTime: {type: string}
                          subscription: {type: string}
                responses:
                  "200":
                    $ref: "#/components/responses/NotificationAccepted"
                  "400":
                    description: "`INVALID_FIELD`: not a Pub/Sub push carrying a developer notification."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "401":
                    description: "`UNAUTHORIZED`: no valid push token (`INVALID_PUSH_TOKEN`, `PUSH_AUTH_NOT_CONFIGURED`); nothing is recorded."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "429":
                    $ref: "#/components/responses/RateLimited"
                  "503":
                    description: "`VERIFIER_ERROR`: Google's keys or the purchase could not be fetched now; Pub/Sub will retry."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
            """#,
        sharedFieldNotes: [
            "receipt":
                "a purchase token, the Play Billing purchase JSON (optionally {json, signature}) or a Unity IAP receipt."
        ])
}
