"""Verdicts of Apple's official app-store-server-library on a corpus of signed tokens.

Reads JSON lines {"id", "kind", "token", "root", "bundle_id", "environment", "app_apple_id",
"online"} (root: base64 DER) on stdin and writes JSON lines {"id", "accepted", "status"} on
stdout. Online checks are on only for a case that says so: then the library asks the OCSP
responders the certificates name and judges validity now; otherwise at the payload's signedDate.
This file is the oracle for ReceiptGate's differential tests; it is not product code.
"""
import base64
import json
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException


def verdict(case):
    verifier = SignedDataVerifier(
        root_certificates=[base64.b64decode(case["root"])],
        enable_online_checks=bool(case.get("online")),
        environment=Environment(case["environment"]),
        bundle_id=case["bundle_id"],
        app_apple_id=case.get("app_apple_id"),
    )
    kind = case["kind"]
    try:
        if kind == "transaction":
            verifier.verify_and_decode_signed_transaction(case["token"])
        elif kind == "notification":
            verifier.verify_and_decode_notification(case["token"])
        elif kind == "app_transaction":
            verifier.verify_and_decode_app_transaction(case["token"])
        else:
            raise SystemExit("unknown kind " + kind)
        return True, "OK"
    except VerificationException as error:
        return False, error.status.name
    except Exception as error:  # anything else the library raises is still a refusal
        return False, type(error).__name__


for line in sys.stdin:
    if not line.strip():
        continue
    case = json.loads(line)
    accepted, status = verdict(case)
    print(json.dumps({"id": case["id"], "accepted": accepted, "status": status}), flush=True)
