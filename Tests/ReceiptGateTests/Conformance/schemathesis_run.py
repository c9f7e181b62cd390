#!/usr/bin/env python3
"""Schema-driven testing of a running ReceiptGate with schemathesis: every operation of
Deploy/openapi.yaml gets generated requests (valid ones by the schema, and with --negative also
ones that break it), sent as a real client sends them -- signed with the client's HMAC secret
over the exact body bytes, the admin token on admin routes -- and every response must be no 5xx
and conform to the document (status documented, content type, body schema, headers).

usage: schemathesis_run.py SPEC BASE_URL CLIENT_ID SECRET ADMIN_TOKEN MAX_EXAMPLES [--negative]
Prints one line per operation and `schemathesis: N requests, M failures`; exits 1 on any failure.
"""
import hashlib
import urllib.parse
import hmac
import json
import sys
import time

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_headers_conformance,
                                               response_schema_conformance, status_code_conformance)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]


def signed(kwargs, client_id, secret, admin_token):
    """The request as the client sends it: the body serialized once, and signed over those bytes."""
    headers = {k: v for k, v in (kwargs.pop("headers", None) or {}).items()
               if k.lower() not in ("x-client-id", "x-timestamp", "x-signature", "authorization")}
    if "json" in kwargs:
        kwargs["data"] = json.dumps(kwargs.pop("json")).encode()
        headers["Content-Type"] = "application/json"
    body = kwargs.get("data") or b""
    if isinstance(body, dict):  # a form: encoded once, here, so the signature covers the bytes sent
        body = urllib.parse.urlencode(body, doseq=True)
        headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
    if isinstance(body, str):
        body = body.encode()
    if body:
        kwargs["data"] = body
    path = kwargs["url"].split("//", 1)[-1].split("/", 1)[-1]
    if path.startswith("admin/"):
        headers["Authorization"] = f"Bearer {admin_token}"
    elif not path.startswith("v1/notifications/"):
        stamp = str(int(time.time()))
        method = kwargs.get("method", "GET").upper()
        # Signature version 2 (method and target signed, exactly as the request line will carry them):
        # every signed route accepts it; reads and routes with a parameter in their path require it.
        target = requests.Request(method, kwargs["url"], params=kwargs.get("params")).prepare().path_url
        message = f"v2\n{client_id}\n{stamp}\n{method}\n{target}\n{hashlib.sha256(body).hexdigest()}".encode()
        headers["X-Signature-Version"] = "2"
        headers.update({"X-Client-ID": client_id, "X-Timestamp": stamp,
                        "X-Signature": hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()})
    kwargs["headers"] = headers
    kwargs["timeout"] = 30
    return kwargs


def main():
    spec, base_url, client_id, secret, admin_token, examples = sys.argv[1:7]
    modes = [GenerationMode.POSITIVE] + ([GenerationMode.NEGATIVE] if "--negative" in sys.argv[7:] else [])
    schema = schemathesis.openapi.from_path(spec)
    session = requests.Session()
    total, failures = 0, []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in modes:
            sent = [0]
            statuses = {}

            @settings(max_examples=int(examples), deadline=None, database=None, derandomize=False,
                      suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
            @given(case=operation.as_strategy(generation_mode=mode))
            def run(case):
                kwargs = signed(case.as_transport_kwargs(base_url=base_url), client_id, secret, admin_token)
                response = session.request(**kwargs)
                sent[0] += 1
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                try:
                    case.validate_response(response, checks=CHECKS)
                except BaseException as error:  # schemathesis raises groups of failures; one report per kind is enough
                    if isinstance(error, KeyboardInterrupt):
                        raise
                    key = (operation.method, operation.path, response.status_code, type(error).__name__)
                    if key not in {f[0] for f in failures}:
                        failures.append((key, f"{case.method} {kwargs['url']} -> {response.status_code} "
                                              f"{response.text[:300]!r}\n    {str(error)[:800]}"))

            try:
                run()
            except Unsatisfiable:
                pass  # nothing in this operation can be made invalid (no parameters, no body)
            except Exception as error:
                failures.append(((operation.method, operation.path, "generation", type(error).__name__),
                                 f"{operation.method} {operation.path}: {str(error)[:500]}"))
            total += sent[0]
            print(f"schemathesis: {operation.method.upper()} {operation.path} [{mode.value}]: {sent[0]} requests, statuses {dict(sorted(statuses.items()))}", flush=True)
    for _, text in failures:
        print("FAILURE", text)
    print(f"schemathesis: {total} requests, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
