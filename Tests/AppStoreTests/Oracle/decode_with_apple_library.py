"""What Apple's official app-store-server-library decodes from signed transactions and renewal infos.

Reads JSON lines {"id", "kind" ("transaction" or "renewal"), "token", "root", "bundle_id",
"environment", "app_apple_id"} on stdin and writes JSON lines {"id", "accepted", "status",
"decoded"} on stdout: "decoded" is the library's model as a JSON object under Apple's field names,
every enumerated value as the raw value Apple sent (the library's raw* fields), absent fields left
out. Judged at the payload's signedDate, offline. The oracle of the commerce differential test;
it is not product code.
"""
import base64
import enum
import json
import sys

import attr

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.LibraryUtility import metadata_key, metadata_type_key
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException


def plain(value):
    """The model as JSON values: raw values for enumerations, None fields dropped."""
    if attr.has(type(value)):
        result = {}
        for field in attr.fields(type(value)):
            kind = field.metadata.get(metadata_type_key)
            if kind == "main":
                continue  # its raw twin carries the value as sent, known or not
            name = field.metadata.get(metadata_key) if kind == "raw" else field.name
            item = plain(getattr(value, field.name))
            if item is not None:
                result[name] = item
        return result
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


def decode(case):
    verifier = SignedDataVerifier(
        root_certificates=[base64.b64decode(case["root"])],
        enable_online_checks=False,
        environment=Environment(case["environment"]),
        bundle_id=case["bundle_id"],
        app_apple_id=case.get("app_apple_id"),
    )
    try:
        if case["kind"] == "transaction":
            model = verifier.verify_and_decode_signed_transaction(case["token"])
        elif case["kind"] == "renewal":
            model = verifier.verify_and_decode_renewal_info(case["token"])
        else:
            raise SystemExit("unknown kind " + case["kind"])
        return True, "OK", plain(model)
    except VerificationException as error:
        return False, error.status.name, None
    except Exception as error:  # anything else the library raises is still a refusal
        return False, type(error).__name__, None


for line in sys.stdin:
    if not line.strip():
        continue
    case = json.loads(line)
    accepted, status, decoded = decode(case)
    print(json.dumps({"id": case["id"], "accepted": accepted, "status": status, "decoded": decoded}), flush=True)
