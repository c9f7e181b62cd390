"""An app server written from Hive Axyl's contract ("Verify receipts with the Hive Axyl Server API") alone,
with the Python standard library: it gets an access token by posting its Client ID and Client
Secret as JSON (the Hive Axyl contract names no grant type), puts the token in the Authorization header as it is
(the contract names no scheme; the restore sends it as `Bearer`), with `X-App-Id`, decides delivery from
the values the contract says to check, then shows two errors.

Configuration (environment): HIVE_BASE_URL, HIVE_CLIENT_ID, HIVE_CLIENT_SECRET, HIVE_APP_ID,
HIVE_RECEIPT (a transaction JWS), HIVE_PRODUCT_ID, HIVE_ACCOUNT_UUID.
Prints one JSON object with what happened at each step.
"""
import json
import os
import sys
import urllib.error
import urllib.request

BASE = os.environ["HIVE_BASE_URL"].rstrip("/")
CLIENT_ID = os.environ["HIVE_CLIENT_ID"]
CLIENT_SECRET = os.environ["HIVE_CLIENT_SECRET"]
APP_ID = os.environ["HIVE_APP_ID"]


def call(path, body, headers):
    request = urllib.request.Request(BASE + path, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")


def get_access_token():
    """Before calling: an access token from the Client ID and Client Secret (kept on the server)."""
    status, _, body = call("/auth/v1/token", json.dumps({"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET}).encode(),
                           {"Content-Type": "application/json"})
    if status != 200:
        raise SystemExit(f"token request failed: {status} {body}")
    return body


def verify_purchase(token, fields, app_id=APP_ID, scheme=""):
    """POST /payment/v1/purchase/verify with the values the app client passed."""
    headers = {"Content-Type": "application/json", "X-App-Id": app_id}
    if token is not None:
        headers["Authorization"] = scheme + token
    status, response_headers, body = call("/payment/v1/purchase/verify", json.dumps(fields).encode(), headers)
    return {"status": status, "www_authenticate": response_headers.get("WWW-Authenticate"), "body": body}


def may_deliver(answer):
    """The Hive Axyl contract's checks: verification passed, not cancelled, not already verified. (A mismatching
    account, 2, is this app's policy to decide; 9 means not comparable.)"""
    body = answer["body"] or {}
    data = body.get("data") or {}
    return (answer["status"] == 200 and (body.get("result") or {}).get("code") == 100
            and data.get("hiveAxylPurchaseCancelState") == 0 and data.get("hiveAxylDuplicated") is False)


def main():
    report = {}
    token = get_access_token()
    report["token"] = {"token_type": token.get("token_type"), "expires_in": token.get("expires_in"),
                       "has_access_token": bool(token.get("access_token"))}
    fields = {
        "providerId": "APPLE",
        "axylReceipt": os.environ["HIVE_RECEIPT"],
        "productId": os.environ["HIVE_PRODUCT_ID"],
        "accountUuid": os.environ["HIVE_ACCOUNT_UUID"],
        "requestType": 1,
    }
    purchase = verify_purchase(token["access_token"], fields)
    report["purchase"] = purchase["body"]
    report["purchase_status"] = purchase["status"]
    report["deliver"] = may_deliver(purchase)

    restore = verify_purchase(token["access_token"], dict(fields, requestType=2), scheme="Bearer ")
    report["restore"] = restore["body"]
    report["deliver_restore"] = may_deliver(restore)

    # Two errors: an app id this client does not have, and a request without an access token.
    wrong_app = verify_purchase(token["access_token"], fields, app_id="not.my.app")
    report["wrong_app"] = {"status": wrong_app["status"], "body": wrong_app["body"]}
    no_token = verify_purchase(None, fields)
    report["no_token"] = {"status": no_token["status"], "www_authenticate": no_token["www_authenticate"], "body": no_token["body"]}
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
