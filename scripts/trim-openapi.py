#!/usr/bin/env python3
"""Trim GitHub's REST API description to the endpoints the fake answers.

Usage: trim-openapi.py API_JSON ROUTES_TXT VERSION SHA256 > internal/ghfake/testdata/github-rest-trimmed.json

API_JSON is generated/api.github.com.json of the npm package @octokit/openapi
(GitHub's description from github/rest-api-description with Octokit's
extensions); ROUTES_TXT lists the fake's routes ("GET /repos/{owner}/{repo}"),
one a line, as ghfake.Fake.Routes returns them. Kept per operation: its
operationId, its documented response statuses and their JSON schemas'
shapes (types, required properties, nullable; no prose or examples), with
the component schemas they refer to (what the checks need).
"""
import json
import sys


def segs(path):
    return [s for s in path.strip("/").split("/") if s]


def matches(route, path):
    r, p = segs(route), segs(path)
    for i, s in enumerate(r):
        if s.startswith("{") and s.endswith("...}"):
            return len(p) > i
        if i >= len(p):
            return False
        if s.startswith("{") and p[i].startswith("{"):
            continue
        if s != p[i]:
            return False
    return len(r) == len(p)


# What the response check needs of a schema: the shape, not the prose.
SHAPE_KEYS = ("$ref", "type", "nullable", "required", "properties", "items", "allOf", "oneOf", "anyOf", "additionalProperties")


def resolve(api, r):
    while "$ref" in r:
        kind, name = r["$ref"].split("/")[-2:]
        r = api["components"][kind][name]
    return r


def shape(schema):
    if isinstance(schema, list):
        return [shape(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k in SHAPE_KEYS:
        if k not in schema:
            continue
        v = schema[k]
        if k == "properties":
            out[k] = {name: shape(p) for name, p in v.items()}
        elif k in ("items", "additionalProperties") and isinstance(v, dict):
            out[k] = shape(v)
        elif k in ("allOf", "oneOf", "anyOf"):
            out[k] = [shape(s) for s in v]
        else:
            out[k] = v
    return out


def collect(api, schema, used):
    """Adds the component schemas schema refers to, transitively."""
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, list):
            stack.extend(s)
            continue
        if not isinstance(s, dict):
            continue
        ref = s.get("$ref")
        if ref and ref.startswith("#/components/schemas/"):
            name = ref.split("/")[-1]
            if name not in used:
                used.add(name)
                stack.append(api["components"]["schemas"][name])
        for k, v in s.items():
            if k in ("properties",):
                stack.extend(v.values())
            elif k in ("items", "additionalProperties", "allOf", "oneOf", "anyOf"):
                stack.append(v)


def main():
    api_file, routes_file, version, sha = sys.argv[1:5]
    with open(api_file) as f:
        api = json.load(f)
    routes = []
    with open(routes_file) as f:
        for line in f:
            method, _, path = line.strip().partition(" ")
            if path:
                routes.append((method.lower(), path))
    out = {
        "openapi": api["openapi"],
        "info": {
            "title": api["info"]["title"] + " (trimmed to the endpoints of internal/ghfake)",
            "version": api["info"]["version"],
            "x-source": "npm @octokit/openapi@" + version + " generated/api.github.com.json",
            "x-source-sha256": sha,
        },
        "paths": {},
    }
    used = set()
    for path in sorted(api["paths"]):
        for method, op in sorted(api["paths"][path].items()):
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            if not any(m == method and matches(r, path) for m, r in routes):
                continue
            responses = {}
            for code, r in sorted(op.get("responses", {}).items()):
                r = resolve(api, r or {})
                one = {"description": r.get("description", "")}
                schema = r.get("content", {}).get("application/json", {}).get("schema")
                if schema is not None:
                    one["schema"] = shape(schema)
                    collect(api, schema, used)
                responses[code] = one
            out["paths"].setdefault(path, {})[method] = {"operationId": op.get("operationId", ""), "responses": responses}
    out["components"] = {"schemas": {name: shape(api["components"]["schemas"][name]) for name in sorted(used)}}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
