"""Verdicts and decoded fields of Apple's app-store-server-library on app data: notifications
whose appData replaces data (RESCIND_CONSENT and any later type in that shape) and signed app
transactions (JWSAppTransaction).

Reads JSON lines {"id", "kind", "token", "root", "bundle_id", "environment", "app_apple_id"}
(root: base64 DER; kind "notification" or "app_transaction") on stdin and writes JSON lines
{"id", "accepted", "status", "fields", "app_transaction"} on stdout. For an accepted notification
the library leaves the nested signedAppTransactionInfo unverified, as every nested datum; its
caller verifies it, and so does this script (the "app_transaction" member: the nested verdict and
fields), because ReceiptGate verifies it before reading anything from it.
This file is an oracle for ReceiptGate's differential tests; it is not product code.
"""
import base64
import json
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException


def verifier_for(case):
    return SignedDataVerifier(
        root_certificates=[base64.b64decode(case["root"])],
        enable_online_checks=False,
        environment=Environment(case["environment"]),
        bundle_id=case["bundle_id"],
        app_apple_id=case.get("app_apple_id"),
    )


def text(fields):
    """Every value as text (None stays None), so both sides compare values, not JSON types."""
    def one(value):
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    return {key: one(value) for key, value in fields.items()}


def app_transaction_fields(decoded):
    return text({
        "appTransactionId": decoded.appTransactionId,
        "bundleId": decoded.bundleId,
        "appAppleId": decoded.appAppleId,
        "receiptType": decoded.rawReceiptType,
        "applicationVersion": decoded.applicationVersion,
        "originalApplicationVersion": decoded.originalApplicationVersion,
        "originalPurchaseDate": decoded.originalPurchaseDate,
        "receiptCreationDate": decoded.receiptCreationDate,
        "originalPlatform": decoded.rawOriginalPlatform,
    })


def judge(verify):
    try:
        return True, "OK", verify()
    except VerificationException as error:
        return False, error.status.name, None
    except Exception as error:  # anything else the library raises is still a refusal
        return False, type(error).__name__, None


def verdict(case):
    verifier = verifier_for(case)
    if case["kind"] == "app_transaction":
        accepted, status, decoded = judge(lambda: verifier.verify_and_decode_app_transaction(case["token"]))
        return {"accepted": accepted, "status": status,
                "fields": app_transaction_fields(decoded) if decoded else None}
    accepted, status, decoded = judge(lambda: verifier.verify_and_decode_notification(case["token"]))
    answer = {"accepted": accepted, "status": status, "fields": None, "app_transaction": None}
    if not decoded:
        return answer
    app_data = decoded.appData
    answer["fields"] = text({
        "notificationType": decoded.rawNotificationType,
        "notificationUUID": decoded.notificationUUID,
        "hasData": decoded.data is not None,
        "bundleId": app_data.bundleId if app_data else None,
        "appAppleId": app_data.appAppleId if app_data else None,
        "environment": app_data.rawEnvironment if app_data else None,
    })
    nested = app_data.signedAppTransactionInfo if app_data else None
    if nested:
        nested_accepted, nested_status, nested_decoded = judge(lambda: verifier.verify_and_decode_app_transaction(nested))
        answer["app_transaction"] = {
            "accepted": nested_accepted, "status": nested_status,
            "fields": app_transaction_fields(nested_decoded) if nested_decoded else None,
        }
    return answer


for line in sys.stdin:
    if not line.strip():
        continue
    case = json.loads(line)
    answer = verdict(case)
    answer["id"] = case["id"]
    print(json.dumps(answer), flush=True)
