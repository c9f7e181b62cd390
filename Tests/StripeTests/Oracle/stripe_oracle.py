"""Stripe's official Python library as the oracle of the Stripe tests.

Reads one JSON case per line on stdin and writes one verdict per line on stdout:
- verify: the library's WebhookSignature.verify_header (and Webhook.construct_event) on a payload,
  its Stripe-Signature header and the endpoint secret -> accepted, and the event's type and id.
- sign: the library's WebhookSignature.generate_signature_header for a payload -> header.
- construct: the library's convert_to_stripe_object on an object -> the class it reads it as,
  and the fields the case asks for, read through the library's own attribute access.
"""
import json
import sys

import stripe


def walk(obj, path):
    for part in path.split("."):
        if isinstance(obj, list):
            obj = obj[int(part)]
        else:
            obj = getattr(obj, part)
    return obj


def verdict(case):
    op = case["op"]
    if op == "verify":
        try:
            stripe.WebhookSignature.verify_header(
                case["payload"], case["header"], case["secret"], case.get("tolerance"))
            event = stripe.Webhook.construct_event(
                case["payload"], case["header"], case["secret"], case.get("tolerance") or 0)
            return {"accepted": True, "type": event.type, "event_id": event.id}
        except stripe.SignatureVerificationError as error:
            return {"accepted": False, "status": str(error)}
    if op == "sign":
        return {"header": stripe.WebhookSignature.generate_signature_header(
            case["payload"], case["secret"], case["timestamp"])}
    if op == "construct":
        values = json.loads(case["object"])
        if values.get("object") == "event":
            obj = stripe.Event.construct_from(values, "sk_test_oracle")
        else:
            obj = stripe.convert_to_stripe_object(values)
        fields = {}
        for path in case.get("fields", []):
            try:
                value = walk(obj, path)
                fields[path] = value if isinstance(value, (str, int, bool, type(None))) else type(value).__name__
            except (AttributeError, IndexError, KeyError) as error:
                fields[path] = "missing: %s" % error
        return {"class": type(obj).__name__, "fields": fields}
    raise ValueError("unknown op %s" % op)


for line in sys.stdin:
    case = json.loads(line)
    result = verdict(case)
    result["id"] = case["id"]
    print(json.dumps(result), flush=True)
