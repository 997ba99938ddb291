#!/usr/bin/env python3
"""Trim GitHub's REST API description to the endpoints the fake answers.

Usage: trim-openapi.py API_JSON ROUTES_TXT VERSION SHA256 > internal/ghfake/testdata/github-rest-trimmed.json

API_JSON is generated/api.github.com.json of the npm package @octokit/openapi
(GitHub's description from github/rest-api-description with Octokit's
extensions); ROUTES_TXT lists the fake's routes ("GET /repos/{owner}/{repo}"),
one a line, as ghfake.Fake.Routes returns them. Kept per operation: its
operationId and its documented response statuses (what the check needs).
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
    for path in sorted(api["paths"]):
        for method, op in sorted(api["paths"][path].items()):
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            if not any(m == method and matches(r, path) for m, r in routes):
                continue
            responses = {code: {"description": (r or {}).get("description", "")} for code, r in sorted(op.get("responses", {}).items())}
            out["paths"].setdefault(path, {})[method] = {"operationId": op.get("operationId", ""), "responses": responses}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
