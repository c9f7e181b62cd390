public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the native verify body's properties by `OpenAPIDocument`.
extension HuaweiAppGalleryProvider {
    public static let openAPIPart = OpenAPIPart(
        paths: #"""
            /v1/notifications/huawei-appgallery:
              post:
                summary: Huawei IAP server notifications (version 2).
                operationId: huaweiAppGalleryNotification
                description: |
                  A Huawei IAP notification, v2. The client is the one whose `--huawei-app-id` is the body's
                  `applicationId`. A `SUBSCRIPTION` event's `subNotification.statusUpdateNotification` must be
                  signed with that client's IAP public key (`notificationSignature`, SHA256WithRSA/PSS or
                  SHA256WithRSA as `signatureAlgorithm` says) before anything in it is read; an `ORDER` event is
                  unsigned. Either way the purchase is read again from Huawei's order or subscription service
                  with the client's credentials (its signed answer checked the same way), and the ledger changes
                  only as that answer shows: a refund (or a subscription's `CANCEL`) it does not show yet is
                  answered 503 and kept nowhere, so Huawei sends it again; any other event it does not back is
                  answered 200, kept as `<type>_UNCONFIRMED` and changes nothing; an order event naming a token
                  and product Huawei does not know for the app is answered 200 `ignored` and recorded nowhere.
                  Recorded once per signed status update (or per order event and token).
                requestBody:
                  required: true
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [applicationId]
                        properties:
                          version: {type: string}
                          eventType: {type: string, description: "ORDER or SUBSCRIPTION."}
                          notifyTime: {type: integer, format: int64}
                          applicationId: {type: string}
                          orderNotification:
                            type: object
                            properties:
                              notificationType: {type: integer, description: "1 payment succeeded, 2 refund succeeded."}
                              purchaseToken: {type: string}
                              productId: {type: string}
                          subNotification:
                            type: object
                            properties:
                              statusUpdateNotification: {type: string, description: "JSON of the subscription's status update, as signed."}
                              notificationSignature: {type: string}
                              signatureAlgorithm: {type: string}
                responses:
                  "200":
                    $ref: "#/components/responses/NotificationAccepted"
                  "400":
                    description: "`INVALID_FIELD`: not a Huawei IAP notification."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "401":
                    description: "`UNAUTHORIZED`: the signature does not match the app's IAP key, or no client registered the app (`INVALID_SIGNATURE`, `UNKNOWN_APPLICATION`); nothing is recorded."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
                  "429":
                    $ref: "#/components/responses/RateLimited"
                  "503":
                    description: "`VERIFIER_ERROR`: the purchase could not be read from Huawei now, Huawei does not show the refund or cancel yet, or too many of this app's notifications are being checked at once or this minute; Huawei will retry."
                    content:
                      application/json:
                        schema:
                          $ref: "#/components/schemas/Error"
            """#,
        evidenceProperties: #"""
            huawei_subscription_id:
              type: string
              maxLength: 256
              description: "Huawei AppGallery: the subscriptionId of a subscription sent as a bare purchase token (the InAppPurchaseData JSON carries its own); a one-time product needs product_id instead."
            """#,
        sharedFieldNotes: [
            "receipt": "a purchase token, the InAppPurchaseData JSON, or {inAppPurchaseData, inAppDataSignature}.",
            "product_id":
                "required with a bare purchase token of a one-time product (Huawei verifies a token with its product id).",
        ])
}
