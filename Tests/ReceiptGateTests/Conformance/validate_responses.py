"""Checks recorded HTTP responses against Deploy/openapi.yaml with an independent validator
(openapi-schema-validator, OpenAPI 3.0 rules: nullable, enum, required, $ref, allOf).

Usage: validate_responses.py OPENAPI_YAML < responses.jsonl
Each input line: {"path": "/v1/verify", "method": "post", "status": 200, "body": {...}}
(path is the documented template). Prints one line per problem; exits 1 if there is any.
"""
import json
import sys

import yaml
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

spec = yaml.safe_load(open(sys.argv[1]))


def absolute(node):
    """Makes every "#/components/..." reference point into the registered document."""
    if isinstance(node, dict):
        return {k: ("urn:openapi" + v if k == "$ref" and isinstance(v, str) and v.startswith("#") else absolute(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [absolute(v) for v in node]
    return node


raw_spec = spec
spec = absolute(spec)
registry = Registry().with_resource("urn:openapi", Resource.from_contents(spec, default_specification=DRAFT4))
spec = raw_spec


def resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        pointer = node["$ref"].lstrip("#/").split("/")
        node = spec
        for part in pointer:
            node = node[part]
    return node


problems = 0
checked = 0
for line in sys.stdin:
    if not line.strip():
        continue
    record = json.loads(line)
    operation = spec["paths"].get(record["path"], {}).get(record["method"])
    where = f'{record["method"].upper()} {record["path"]} {record["status"]}'
    if operation is None:
        print(f"{where}: operation not documented")
        problems += 1
        continue
    response = operation["responses"].get(str(record["status"]))
    if response is None:
        print(f"{where}: status not documented")
        problems += 1
        continue
    response = resolve(response)
    # application/json, or a JSON subtype such as application/jwk-set+json.
    schema = next((media.get("schema") for kind, media in response.get("content", {}).items()
                   if kind == "application/json" or kind.endswith("+json")), None)
    if schema is None:
        continue
    validator = OAS30Validator(absolute(schema), registry=registry)
    errors = sorted(validator.iter_errors(record["body"]), key=lambda e: list(e.path))
    for error in errors:
        print(f"{where}: {'/'.join(map(str, error.path)) or '(body)'}: {error.message}")
        problems += 1
    checked += 1

print(f"checked {checked} responses, {problems} problems")
sys.exit(1 if problems else 0)
