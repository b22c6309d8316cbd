#!/usr/bin/env python3
"""Checks schemas/openapi.yaml against the routes storecast-api registers.

Usage: check_openapi.py ROUTES   where ROUTES has one `METHOD /v1/path/:param ACCESS` per line
(ControlAPI.routes(), as the test writes them). Every route must be an operation of the
document with the same `x-storecast-access`, and every operation a route; exits 1 with the
differences otherwise. Needs PyYAML (the test tools' venv has it)."""
import re, sys, yaml

doc = yaml.safe_load(open(sys.argv[2] if len(sys.argv) > 2 else "schemas/openapi.yaml", encoding="utf-8"))
assert doc.get("openapi", "").startswith("3.1"), "the document must be OpenAPI 3.1"
# A comma in an unquoted text inside a flow mapping ({..., description: a, b}) splits it: YAML
# reads "b" as one more key with no value, and the text is cut short (swift-openapi-generator
# then refuses the document). The document has no key without a value otherwise.
def keys_without_value(node, where):
    if isinstance(node, dict):
        for key, value in node.items():
            if value is None:
                yield f"{where}/{key}"
            else:
                yield from keys_without_value(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from keys_without_value(item, f"{where}/{i}")
split = list(keys_without_value(doc, ""))
for key in split:
    print("a key without a value (quote the text before it, which has a comma):", key)
if split:
    sys.exit(1)
documented = set()
for path, item in doc["paths"].items():
    for method in ("get", "put", "post", "delete", "patch"):
        if method in item:
            op = item[method]
            if "operationId" not in op:
                sys.exit(f"{method.upper()} {path} has no operationId")
            documented.add((method.upper(), re.sub(r"\{(\w+)\}", r":\1", path), op.get("x-storecast-access", "?")))
registered = set()
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip():
        method, path, access = line.split()
        registered.add((method, path, access))
missing, extra = sorted(registered - documented), sorted(documented - registered)
for m in missing:
    print("registered but not in the document (or with other access):", *m)
for e in extra:
    print("in the document but not registered (or with other access):", *e)
if missing or extra:
    sys.exit(1)
print(f"{len(registered)} routes match the document")
