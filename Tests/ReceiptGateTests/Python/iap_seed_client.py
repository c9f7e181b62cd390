"""Test client for POST /iap, written ONLY from the contract document
/work/shared/seeds/004_226fa051a47a9225.txt (no project code or README was read).

Usage: python3 iap_seed_client.py BASE_URL BUNDLE_ID JWS_A JWS_B

Checks, with the required x-client-* / x-sdk-version headers filled as free text:
  1. flow (d): no token, no customer details, JWS_A -> 200, non-empty access_token and
     refresh_token, auto_account_created true, email_confirmation_required false,
     account_switched false.
  2. flow (2a): Bearer token from step 1, no customer details, JWS_B -> 200,
     account_switched false, auto_account_created false.
  3. no token, JWS_A again, x-forwarded-for 192.168.1.1 -> 200, account_switched false.
  4. broken body {"apple": {}} -> a 4xx status (not 5xx) with a JSON body.
Prints {"ok": true, "steps": [...]} and exits 0 on success; otherwise reports to stderr, exits 1.
"""
import json
import sys
import urllib.error
import urllib.request

# Generous: every suite of the test process runs at once on a small machine.
TIMEOUT = 60


def base_headers():
    return {
        "x-client-app-version": "8.10.123 (456)",
        "x-client-device-model": "iPhone15,2",
        "x-client-os": "iOS 17.4",
        "x-client-os-version": "17.4.1",
        "x-sdk-version": "5.0.123",
        "Content-Type": "application/json",
        "Accept": "*/*",
    }


def post_iap(base_url, body, extra_headers=None):
    """POST {base_url}/iap; return (status, raw_text, parsed_json_or_None)."""
    headers = base_headers()
    headers.update(extra_headers or {})
    data = json.dumps(body).encode("utf-8")
    req = urllib.request.Request(base_url + "/iap", data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    except (urllib.error.URLError, OSError) as err:  # refused, timeout, reset
        return None, f"no HTTP answer: {err!r}", None
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return status, text, parsed


def fail(step, why, status, text):
    print(f"step {step} failed: {why}\n  status: {status}\n  body: {text[:2000]}", file=sys.stderr)
    sys.exit(1)


def expect_200(step, status, text, obj, **flags):
    if status != 200:
        fail(step, "expected HTTP 200", status, text)
    if not isinstance(obj, dict):
        fail(step, "expected a JSON object", status, text)
    for key, want in flags.items():
        got = obj.get(key)
        if not isinstance(got, bool) or got != want:
            fail(step, f"expected {key} == {json.dumps(want)}, got {json.dumps(got)}", status, text)
    return obj


def main(argv):
    if len(argv) != 5:
        print("usage: iap_seed_client.py BASE_URL BUNDLE_ID JWS_A JWS_B", file=sys.stderr)
        return 2
    base_url, bundle_id, jws_a, jws_b = argv[1].rstrip("/"), argv[2], argv[3], argv[4]
    apple = lambda jws: {"apple": {"bundle_id": bundle_id, "subscription_transaction_jws": jws}}
    steps = []

    # Step 1: flow (d) - no token, no customer details -> new auto-created account.
    status, text, obj = post_iap(base_url, apple(jws_a))
    expect_200(1, status, text, obj, account_switched=False,
               email_confirmation_required=False, auto_account_created=True)
    for key in ("access_token", "refresh_token"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            fail(1, f"expected non-empty string {key}", status, text)
    token = obj["access_token"]
    steps.append(status)

    # Step 2: flow (2a) - token, no customer details -> purchase on existing account.
    status, text, obj = post_iap(base_url, apple(jws_b), {"Authorization": "Bearer " + token})
    expect_200(2, status, text, obj, account_switched=False, auto_account_created=False)
    steps.append(status)

    # Step 3: JWS_A again, no token, with x-forwarded-for -> no switch.
    status, text, obj = post_iap(base_url, apple(jws_a), {"x-forwarded-for": "192.168.1.1"})
    expect_200(3, status, text, obj, account_switched=False)
    steps.append(status)

    # Step 4: broken body -> 4xx with a JSON body.
    status, text, obj = post_iap(base_url, {"apple": {}})
    if status is None or not 400 <= status < 500:
        fail(4, "expected a 4xx status", status, text)
    if obj is None:
        fail(4, "expected a JSON body", status, text)
    steps.append(status)

    print(json.dumps({"ok": True, "steps": steps}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
