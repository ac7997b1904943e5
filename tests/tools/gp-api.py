#!/usr/bin/env python3
"""gp-api: one request to gschedd's REST API, authenticated as the calling user with MUNGE.

usage: gp-api [--url http://127.0.0.1:7821] [--token T] [--cred-for TEXT] [--check api.yaml]
              METHOD TARGET [BODY]

The credential's payload is "METHOD TARGET", plus "\\n" and the body's SHA-256 (hex) when
there is a body (docs/api.md). Prints the HTTP status on the first line, then the body.
--cred-for signs another payload (to check that the server refuses it); --replay sends the
same credential twice (prints both answers). --check validates the answer against the OpenAPI
document: its status must be listed for the path and method, and a JSON body must match the
response's schema (python3-jsonschema; exit 3 and the reason on stderr when it does not).
"""
import argparse
import json
import re
import hashlib
import os
import subprocess
import sys
import urllib.error
import urllib.request


def credential(payload):
    return subprocess.run(["munge", "-s", payload], check=True, capture_output=True,
                          text=True).stdout.strip()


def send(url, method, target, body, auth, key=None):
    req = urllib.request.Request(url + target, method=method,
                                 data=body.encode() if body else None)
    if auth:
        req.add_header("Authorization", auth)
    if key is not None:
        req.add_header("Idempotency-Key", key)
    if body:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def check(spec_path, method, target, status, text):
    import jsonschema
    import yaml
    with open(spec_path) as f:
        spec = yaml.safe_load(f)
    path = target.split("?", 1)[0]
    op = None
    for tmpl, item in spec["paths"].items():
        rx = "^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(tmpl)) + "$"
        if re.match(rx, path) and method.lower() in item:
            op = item[method.lower()]
            break
    if op is None:
        return "%s %s: not in the OpenAPI document" % (method, path)
    resp = op["responses"].get(str(status))
    if resp is None:
        return "%s %s: status %d not documented" % (method, path, status)
    if "$ref" in resp:
        resp = spec["components"]["responses"][resp["$ref"].rsplit("/", 1)[1]]
    content = resp.get("content", {})
    if "application/json" in content:
        try:
            doc = json.loads(text)
        except ValueError as e:
            return "%s %s: body is not JSON: %s" % (method, path, e)
        schema = dict(content["application/json"]["schema"])
        schema["components"] = spec["components"]
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError as e:
            return "%s %s %d: %s at %s" % (method, path, status, e.message,
                                           "/".join(str(x) for x in e.absolute_path))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default=os.environ.get("GPOOL_API", "http://127.0.0.1:7821"))
    ap.add_argument("--token")
    ap.add_argument("--no-auth", action="store_true")
    ap.add_argument("--cred-for")
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--check")
    ap.add_argument("--idempotency-key")
    ap.add_argument("method")
    ap.add_argument("target")
    ap.add_argument("body", nargs="?", default="")
    a = ap.parse_args()
    payload = a.method + " " + a.target
    if a.body:
        payload += "\n" + hashlib.sha256(a.body.encode()).hexdigest()
    if a.no_auth:
        auth = None
    elif a.token:
        auth = "Bearer " + a.token
    else:
        auth = "MUNGE " + credential(a.cred_for if a.cred_for is not None else payload)
    status, text = send(a.url, a.method, a.target, a.body, auth, a.idempotency_key)
    print(status)
    print(text)
    if a.check:
        why = check(a.check, a.method, a.target, status, text)
        if why:
            print("gp-api: " + why, file=sys.stderr)
            return 3
    if a.replay:
        status, text = send(a.url, a.method, a.target, a.body, auth, a.idempotency_key)
        print(status)
        print(text)


if __name__ == "__main__":
    sys.exit(main())
