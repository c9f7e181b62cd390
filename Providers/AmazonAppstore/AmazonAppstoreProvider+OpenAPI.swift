public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the native verify body's properties by `OpenAPIDocument`.
extension AmazonAppstoreProvider {
    public static let openAPIPart = OpenAPIPart(
        paths: #"""
            /v1/notifications/amazon-appstore:
              post:
                summary: Amazon Appstore Real-Time Notifications (Amazon SNS HTTPS deliveries).
                operationId: amazonAppstoreNotification
                description: |
                  An Amazon SNS message, JSON sent as `text/plain`. Every message is verified as AWS documents
                  before anything it says is used: SignatureVersion 1 (SHA1withRSA) or 2 (SHA256withRSA) over
                  the canonical string for its `Type`, with the certificate at `SigningCertURL`, which must match
                  `RECEIPTGATE_AMAZON_SNS_CERT_URL_PATTERN` in full (fetched once and cached). A
                  `SubscriptionConfirmation` is answered 200 and recorded; its `Token` is logged and listed by
                  `GET /admin/notifications` for the operator to paste into Amazon's console. A `Notification`
                  names `appPackageName`, `appUserId` and `receiptId`: the receipt is read again from RVS with the
                  shared secret of the client that registered the package, and the ledger changes only as RVS
                  shows (a push RVS does not back is kept as `<type>_UNCONFIRMED` and changes nothing). Recorded
                  once by `MessageId`.
                requestBody:
                  required: true
                  content:
                    text/plain:
                      schema: {type: string}
                    application/json:
                      schema: {type: object}
                responses:
                  "200":
                    $ref: "#/components/responses/NotificationAccepted"
                  "400":
                    description: "`INVALID_FIELD`: not an SNS message."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "401":
                    description: "`UNAUTHORIZED`: the signature or the certificate URL is not Amazon SNS's; nothing is recorded."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "429":
                    $ref: "#/components/responses/RateLimited"
                  "503":
                    description: "`VERIFIER_ERROR`: the certificate or RVS could not be reached now (a certificate URL that just failed is not fetched again for 30 s; beyond 4 certificate fetches at once a message is answered this at once); SNS will retry."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
            """#,
        evidenceProperties: #"""
            amazon_user_id:
              type: string
              maxLength: 2048
              description: "Amazon Appstore: the user id the app read with the purchase (UserData.getUserId()); required with store amazon_appstore, where receipt is the receiptId."
            """#,
        sharedFieldNotes: ["receipt": "the receiptId, proven with amazon_user_id."])
}
