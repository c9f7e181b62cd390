public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the native verify body's properties by `OpenAPIDocument`.
extension StripeProvider {
    public static let openAPIPart = OpenAPIPart(
        paths: #"""
            /v1/notifications/stripe/{client_id}:
              post:
                summary: Stripe webhooks, one endpoint per client.
                operationId: stripeNotification
                description: |
                  A Stripe event (`object: event`) sent to the client's own webhook endpoint. The
                  `Stripe-Signature` header is checked first, as Stripe documents it: HMAC-SHA256 of
                  `<t>.<body>` with the client's `--stripe-webhook-secret` (each of two while one is rolled),
                  every `v1` signature tried, the timestamp within 300 s of now. The object the event names is
                  then read back from Stripe with the client's `--stripe-api-key` (`Stripe-Version`
                  2025-03-31.basil), and the ledger moves only as that answer shows: a paid Checkout Session's
                  line items are purchases claimed for its `client_reference_id` (else `metadata.player_id`);
                  `invoice.paid` and `customer.subscription.*` follow its subscription; `charge.refunded` and
                  `charge.dispute.*` the purchases the charge paid for. Recorded once per event id (`evt_…`, or
                  `evt_…/li_…` per line item). Events of other types, and objects that bought nothing, are
                  answered 200 `ignored` and kept nowhere.
                parameters:
                  - name: client_id
                    in: path
                    required: true
                    description: The client whose webhook endpoint this is.
                    schema: {type: string}
                  - name: Stripe-Signature
                    in: header
                    required: true
                    schema: {type: string}
                requestBody:
                  required: true
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [id, object, type]
                        properties:
                          id: {type: string}
                          object: {type: string, enum: [event]}
                          type: {type: string}
                          account: {type: string, description: "The connected account (Connect); must be the client's."}
                          livemode: {type: boolean, description: "false: a test-mode event (sandbox)."}
                          created: {type: integer, format: int64}
                          data: {type: object}
                responses:
                  "200":
                    $ref: "#/components/responses/NotificationAccepted"
                  "400":
                    description: "The signature is missing, does not match the endpoint's secret or is stale (`INVALID_SIGNATURE_HEADER`, `INVALID_SIGNATURE`, `STALE_SIGNATURE`), or the body is not a Stripe event; nothing is recorded and Stripe is not asked."
                    content:
                      application/json:
                        schema:
                          type: object
                          properties:
                            error:
                              type: object
                              properties:
                                code: {type: string}
                                message: {type: string}
                  "404":
                    description: "`NOT_FOUND`: no enabled client with a Stripe account has this id."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "429":
                    $ref: "#/components/responses/RateLimited"
                  "503":
                    description: "`VERIFIER_ERROR`: the event's object could not be read back from Stripe now, or the client has no webhook secret or API key; Stripe will retry."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
            """#,
        sharedFieldNotes: [
            "receipt": "a Checkout Session id (cs_…), read from Stripe with the client's API key; refused until paid."
        ])
}
