public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml: YAML at column
// 0, placed under `paths:` and the `components:` sections by `OpenAPIDocument`. The `/iap` body's
// store objects are written from the served stores' facts by the rules `IAPRequest` reads them
// with: keyed by the vendor code in lower case, laid out by the evidence's form.
extension AccountLink {
    public func openAPI(stores: [StoreDeclaration]) -> OpenAPIPart { Self.openAPIPart(stores: stores) }

    public static func openAPIPart(stores: [StoreDeclaration]) -> OpenAPIPart {
        OpenAPIPart(paths: paths(stores: stores), components: components)
    }

    /// One line per served store: its object's key, the store, and the layout it takes.
    static func storeObjectsText(_ stores: [StoreDeclaration]) -> String {
        let lines = stores.map { store in
            let key = IAPRequest.objectKey(for: store)
            let layout =
                IAPRequest.takesSignedLayout(store)
                ? "`\(key).bundle_id` and a signed document"
                    + (store.evidenceKinds.contains(.transactionID) ? " (or a bare `\(key).transaction_id`)" : "")
                : "`\(key).package_id` and `\(key).purchase_token`"
                    + store.evidenceFields.map { ", `\(key).\($0.name)`\($0.required ? "" : " (optional)")" }.joined()
            return "- `\(key)`: \(store.displayName), with \(layout)"
        }
        return OpenAPIPart.indented(lines.joined(separator: "\n"), by: 6)
    }

    /// The served stores' objects as request-body properties, in the layout `IAPRequest` reads.
    static func storeObjectProperties(_ stores: [StoreDeclaration]) -> String {
        var lines: [String] = []
        for store in stores {
            let receipt = store.openAPI.sharedFieldNotes["receipt"].map { ": " + $0 } ?? ""
            lines += [
                "\(IAPRequest.objectKey(for: store)):", "  type: object",
                "  description: \(OpenAPIPart.quoted(store.displayName + receipt))",
            ]
            if IAPRequest.takesSignedLayout(store) {
                lines += [
                    "  required: [bundle_id]", "  properties:", "    bundle_id: {type: string}",
                    "    subscription_transaction_jws: {type: string}", "    app_receipt_base64: {type: string}",
                ]
                if store.evidenceKinds.contains(.transactionID) { lines.append("    transaction_id: {type: string}") }
            } else {
                let required = ["package_id", "purchase_token"] + store.evidenceFields.filter(\.required).map(\.name)
                let product =
                    "Optional; the purchase must be for this product."
                    + (store.openAPI.sharedFieldNotes["product_id"].map {
                        " " + $0.prefix(1).uppercased() + $0.dropFirst()
                    } ?? "")
                lines += [
                    "  required: [\(required.joined(separator: ", "))]", "  properties:",
                    "    package_id: {type: string}",
                    "    purchase_token: {type: string}",
                    "    product_id: {type: string, description: \(OpenAPIPart.quoted(product))}",
                ]
                lines += store.evidenceFields.map {
                    "    \($0.name): {type: string, maxLength: \($0.maxLength), description: \(OpenAPIPart.quoted($0.description))}"
                }
            }
        }
        return OpenAPIPart.indented(lines.joined(separator: "\n"), by: 14)
    }

    static func paths(stores: [StoreDeclaration]) -> String {
        #"""
        /iap:
          post:
            summary: AccountLink — create, link or switch an account from a store purchase; answers OpenID tokens.
            operationId: accountLinkIAP
            description: |
              No client credential: the tenant is the client that registered the store object's app
              (its `bundle_id` or `package_id`). Exactly one store object, keyed by a served store's vendor
              code in lower case; a store whose evidence is a signed document takes `bundle_id` and the
              document, a token store `package_id`, `purchase_token`, an optional `product_id` and its
              evidence fields by name. This server serves:
        \#(storeObjectsText(stores))
              Flows: (a) valid token, no details →
              linked to the token's account; (b) token + `customer_details` → linked, a confirmation mail,
              `email_confirmation_required`; (c) no token + details → a new account with that e-mail and a
              first-password mail; (d) nothing → a new account, `auto_account_created`. A purchase already
              linked answers its account's tokens (`account_switched` when that is not the token's account).
              Only device-held evidence (a signed document, a purchase token) signs in. A bare
              `transaction_id` never signs in or creates an account: it needs a bearer token and links only
              a purchase made with that account's `app_account_token`, else 422 `OWNERSHIP_NOT_PROVEN`; it
              is looked up with the store's server API (400 naming it when that is not configured). `transaction_id` beside a receipt names the transaction to link (422 when
              the receipt does not hold it). An expired or invalid token is 401 (refresh it, or send the
              receipt without a token). An account with a confirmed address changes it only when that address
              approves and the new one confirms (two mails). Over a mail limit the purchase is still linked,
              with no mail. A refunded or revoked purchase answers 422 `PURCHASE_REFUNDED` / `PURCHASE_REVOKED`. Limits:
              `accountlink.iap.address` 30/60s, `accountlink.iap.purchase` 10/60s and
              `accountlink.lookup.account` 20/h, shared by processes.
            parameters:
              - {name: x-client-app-version, in: header, required: true, schema: {type: string}}
              - {name: x-client-device-model, in: header, required: true, schema: {type: string, maxLength: 128}, description: "Free text, e.g. mobile, iPhone15,2."}
              - {name: x-client-os, in: header, required: true, schema: {type: string, maxLength: 128}, description: "Free text, e.g. ios, iOS 17.4."}
              - {name: x-client-os-version, in: header, required: true, schema: {type: string}}
              - {name: x-sdk-version, in: header, required: true, schema: {type: string}}
              - {name: x-forwarded-for, in: header, required: false, schema: {type: string}, description: "Recorded for fraud review; trusted only from RECEIPTGATE_TRUSTED_PROXIES; ignored (not refused) when it is not a list of IP addresses."}
              - {name: Authorization, in: header, required: false, schema: {type: string}, description: "Bearer <OpenID access token>"}
            requestBody:
              required: true
              content:
                application/json:
                  schema:
                    type: object
                    properties:
        \#(storeObjectProperties(stores))
                      customer_details:
                        type: object
                        required: [email]
                        properties:
                          email: {type: string, format: email, maxLength: 254}
                      aflyr:
                        type: object
                        properties:
                          referrer_id: {type: string}
                          apple_search_ads: {type: object}
            responses:
              "200":
                description: The account's tokens.
                content:
                  application/json:
                    schema:
                      type: object
                      required: [access_token, refresh_token, account_switched, email_confirmation_required, auto_account_created]
                      properties:
                        access_token: {type: string, description: "ES256 JWT (iss, sub, aud, exp, iat, auth_time) with a kid"}
                        refresh_token: {type: string}
                        account_switched: {type: boolean}
                        email_confirmation_required: {type: boolean}
                        auto_account_created: {type: boolean}
                        app_account_token: {type: string, format: uuid, description: "The account's UUID for StoreKit's appAccountToken."}
              "400": {$ref: "#/components/responses/Error"}
              "401": {$ref: "#/components/responses/Error"}
              "404": {$ref: "#/components/responses/Error"}
              "409": {$ref: "#/components/responses/Error"}
              "422": {$ref: "#/components/responses/AccountLinkUnprocessable"}
              "429": {$ref: "#/components/responses/RateLimited"}
              "503": {$ref: "#/components/responses/Error"}
        /.well-known/openid-configuration:
          get:
            summary: OpenID Connect discovery (issuer = RECEIPTGATE_PUBLIC_URL).
            operationId: openIDConfiguration
            responses:
              "200":
                description: The discovery document.
                content:
                  application/json:
                    schema:
                      type: object
                      required: [issuer, jwks_uri, token_endpoint, userinfo_endpoint]
                      properties:
                        issuer: {type: string}
                        jwks_uri: {type: string}
                        token_endpoint: {type: string}
                        userinfo_endpoint: {type: string}
        /.well-known/jwks.json:
          get:
            summary: The public keys that verify access tokens (the current key and retired ones whose tokens may still live).
            operationId: jwks
            responses:
              "200":
                description: A JWK Set (EC P-256, ES256).
                content:
                  application/jwk-set+json:
                    schema:
                      type: object
                      required: [keys]
                      properties:
                        keys: {type: array, items: {type: object}}
        /oauth/token:
          post:
            summary: "RFC 6749 token endpoint: grant_type=refresh_token (rotated on every use; a reused one revokes its family) or password (client_id, username or e-mail, password; 10 failures per name in 15 minutes, then 429)."
            operationId: oauthToken
            requestBody:
              required: true
              content:
                application/x-www-form-urlencoded:
                  schema:
                    type: object
                    required: [grant_type]
                    properties:
                      grant_type: {type: string, enum: [refresh_token, password]}
                      refresh_token: {type: string}
                      client_id: {type: string}
                      username: {type: string}
                      password: {type: string}
            responses:
              "200":
                description: New tokens.
                content:
                  application/json:
                    schema:
                      type: object
                      required: [access_token, token_type, expires_in, refresh_token]
                      properties:
                        access_token: {type: string}
                        token_type: {type: string, enum: [Bearer]}
                        expires_in: {type: integer}
                        refresh_token: {type: string}
                        app_account_token: {type: string, format: uuid}
              "400": {$ref: "#/components/responses/OAuthError"}
              "401": {$ref: "#/components/responses/OAuthError"}
              "429": {$ref: "#/components/responses/RateLimited"}
        /userinfo:
          get:
            summary: The account behind a bearer access token, with its entitlements from the ledger (refunded, revoked and expired purchases are left out).
            operationId: userinfo
            responses:
              "429":
                $ref: "#/components/responses/RateLimited"
              "200":
                description: The account.
                content:
                  application/json:
                    schema:
                      type: object
                      required: [sub, email_verified, preferred_username, entitlements]
                      properties:
                        sub: {type: string}
                        email: {type: string, nullable: true}
                        email_verified: {type: boolean}
                        preferred_username: {type: string}
                        app_account_token: {type: string, format: uuid}
                        entitlements:
                          type: array
                          items:
                            type: object
                            required: [store, original_transaction_id, state]
                            properties:
                              store: {type: string}
                              original_transaction_id: {type: string}
                              product_id: {type: string, nullable: true}
                              state: {type: string}
                              expires_date: {type: string, nullable: true, format: date-time}
              "401": {$ref: "#/components/responses/Error"}
        /account/confirm-email:
          get:
            summary: The form an e-mail confirmation link opens (HTML).
            operationId: confirmEmailForm
            parameters:
              - {name: token, in: query, required: true, schema: {type: string}}
            responses:
              "429":
                $ref: "#/components/responses/RateLimited"
              "400":
                description: "`INVALID_FIELD`: a path or query value the service refuses (an encoded NUL, a control character, too long)."
                content:
                  application/json:
                    schema:
                      $ref: "#/components/schemas/Error"
              "200": {description: "An HTML form.", content: {text/html: {schema: {type: string}}}}
          post:
            summary: Spends a confirmation link (form or JSON `{token, password?}`); the address becomes the account's, confirmed. An account with a confirmed address needs the approval sent there first, then the new address's link.
            operationId: confirmEmail
            responses:
              "429":
                $ref: "#/components/responses/RateLimited"
              "200": {description: "Confirmed, or the change approved (JSON status, message and username to a JSON request; an HTML page to any other).", content: {application/json: {schema: {type: object}}, text/html: {schema: {type: string}}}}
              "400": {description: "The link or a field refused (the error JSON to a JSON request; an HTML page saying why to any other).", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}, text/html: {schema: {type: string}}}}
              "409": {description: "`APPROVAL_PENDING` (the link stays usable) or `EMAIL_TAKEN`.", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}, text/html: {schema: {type: string}}}}
        /account/reset-password:
          get:
            summary: The form a first-password / reset link opens (HTML).
            operationId: resetPasswordForm
            parameters:
              - {name: token, in: query, required: true, schema: {type: string}}
            responses:
              "429":
                $ref: "#/components/responses/RateLimited"
              "400":
                description: "`INVALID_FIELD`: a path or query value the service refuses (an encoded NUL, a control character, too long)."
                content:
                  application/json:
                    schema:
                      $ref: "#/components/schemas/Error"
              "200": {description: "An HTML form.", content: {text/html: {schema: {type: string}}}}
          post:
            summary: Spends a password link (form or JSON `{token, password}`, 8–256 characters).
            operationId: resetPassword
            responses:
              "429":
                $ref: "#/components/responses/RateLimited"
              "200": {description: "Password set (JSON status, message and username to a JSON request; an HTML page to any other).", content: {application/json: {schema: {type: object}}, text/html: {schema: {type: string}}}}
              "400": {description: "The link or a field refused (the error JSON to a JSON request; an HTML page saying why to any other).", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}, text/html: {schema: {type: string}}}}
        # ---- end AccountLink ----
        """#
    }

    static let components = [
        "responses": #"""
        OAuthError:
          description: "RFC 6749 §5.2: `invalid_request`, `invalid_client` (401), `invalid_grant`, `unsupported_grant_type`."
          content:
            application/json:
              schema:
                type: object
                required: [error, error_description]
                properties:
                  error: {type: string}
                  error_description: {type: string}
        AccountLinkUnprocessable:
          description: "422 from `/iap`: the purchase was not proven (the shared codes), it was refunded or revoked (`PURCHASE_REFUNDED`, `PURCHASE_REVOKED`), or a bare transaction id does not show the caller owns it (`OWNERSHIP_NOT_PROVEN`); it links no account."
          content:
            application/json:
              schema:
                oneOf:
                  - $ref: "#/components/schemas/Error"
                  - type: object
                    required: [error, message]
                    properties:
                      error: {type: string, enum: [PURCHASE_REFUNDED, PURCHASE_REVOKED, OWNERSHIP_NOT_PROVEN]}
                      message: {type: string}
        """#
    ]
}
