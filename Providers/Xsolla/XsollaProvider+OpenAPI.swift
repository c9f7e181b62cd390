public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the native verify body's properties by `OpenAPIDocument`.
extension XsollaProvider {
    public static let openAPIPart = OpenAPIPart(
        paths: #"""
            /v1/notifications/xsolla/{client_id}:
              post:
                summary: Xsolla webhooks for one client (the project's webhook URL in Publisher Account).
                operationId: xsollaNotification
                description: |
                  An Xsolla webhook, signed with the project's secret key: `Authorization: Signature <hex>`, the
                  SHA-1 of the raw body followed by the client's `--xsolla-webhook-secret`, checked in constant
                  time before anything in the body is read. A project id the body names (`settings.project_id`,
                  or `billing.settings.project_id` in a Web Shop webhook) must be one of the client's.
                  `user_validation` is answered 204 for a well-formed player id (with
                  `--xsolla-known-players-only on`, a player the client knows) and records nothing. `payment` and
                  `order_paid` record each purchase (one per item of an order of several, `<transaction id>/<sku>`)
                  as the first claim of the player the webhook names (`user.external_id`, else `user.id`);
                  `refund`, `partial_refund` and `order_canceled` refund them; the subscription webhooks move the
                  subscription. Each webhook is applied once (`<notification_type>:<transaction id>`). Answered as
                  Xsolla expects: 204 with no body, or Xsolla's error body.
                parameters:
                  - name: client_id
                    in: path
                    required: true
                    schema: {type: string}
                    description: The ReceiptGate client the Xsolla project belongs to.
                requestBody:
                  required: true
                  content:
                    application/json:
                      schema: {type: object}
                responses:
                  "204":
                    description: Taken (recorded, already on record, or nothing to record such as a valid user).
                  "400":
                    description: "Xsolla's error body: `INVALID_SIGNATURE` (a forged or unsigned webhook; nothing is recorded), `INVALID_USER` (a user Xsolla should refuse), `INVALID_PARAMETER` (not a webhook this client can take, or another project's)."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/XsollaWebhookError"
                  "404":
                    description: "`INVALID_PARAMETER`: the path names no enabled client with an Xsolla project."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/XsollaWebhookError"
                  "429":
                    $ref: "#/components/responses/RateLimited"
                  "500":
                    description: "`SERVER_ERROR`: it could not be recorded now (or the client has no webhook secret yet); Xsolla sends it again."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/XsollaWebhookError"
            """#,
        components: [
            "schemas": #"""
            XsollaWebhookError:
              type: object
              required: [error]
              properties:
                error:
                  type: object
                  required: [code, message]
                  properties:
                    code: {type: string, enum: [INVALID_SIGNATURE, INVALID_USER, INVALID_PARAMETER, SERVER_ERROR]}
                    message: {type: string}
            """#
        ],
        sharedFieldNotes: [
            "receipt":
                "the Xsolla transaction id (transaction.id), or <transaction id>/<sku> for one item of an order of several; read from Xsolla's transactions report."
        ])
}
