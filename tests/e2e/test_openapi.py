"""docs/openapi.yaml against gpunexd (issue 27 item 4): every route `gpunexd routes` lists
is described, with the security its declared access implies, and every operation of the
description is routed; each operation has a unique operationId and answers with schemas;
the schemas are valid Draft 2020-12 and their references resolve; and gpunexd serves the
file itself as GET /api/v1/openapi.json. (What the answers hold is checked by every
end-to-end test: the harness validates each answer against the description,
openapi_check.py.)
"""

import json
import re
import subprocess
import unittest

import jsonschema

import openapi_check
from harness import API, ServerTestCase, gpunexd_binary

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# The routes that carry a WebSocket (an API key needs the write scope for them: what flows
# over them can change things), as main.cc's kServerRoutes serves them.
WEBSOCKETS = {
    ("GET", "/api/v1/agent/connect"),
    ("GET", "/api/v1/agent/data"),
    ("GET", "/api/v1/rentals/{id}/ports/{port}/connect"),
    ("GET", "/api/v1/rentals/{id}/exec"),
    ("GET", "/api/v1/cluster/streams"),
}
# The state-changing requests under /api/v1/ that ignore Idempotency-Key (docs/api.md):
# their answer holds a secret shown once or starts a session.
_NO_IDEMPOTENCY = re.compile(r"^/api/v1/(auth/|providers/me/agent-tokens)")


def expected_security(access, method, websocket):
    """The security requirements an operation of a route with `access` lists
    (docs/openapi.yaml's info.description; api.h's route access names)."""
    scope = "read" if method in ("GET", "HEAD") and not websocket else "write"
    session = [{"sessionToken": []}, {"sessionCookie": []}]

    def role(*roles):
        return ([{"sessionToken": [r]} for r in roles] + [{"sessionCookie": [r]} for r in roles]
                + [{"apiKey": [scope, r]} for r in roles])

    return {
        "public": [],
        "public_or_user": [{}] + session + [{"apiKey": [scope]}],
        "user": session + [{"apiKey": [scope]}],
        "provider": role("provider"),
        "admin": role("admin"),
        "provider_or_admin": [{"sessionToken": ["provider"]}, {"sessionToken": ["admin"]},
                              {"sessionCookie": ["provider"]}, {"sessionCookie": ["admin"]},
                              {"apiKey": [scope, "provider"]}, {"apiKey": [scope, "admin"]}],
        "session": session,
        "provider_session": [{"sessionToken": ["provider"]}, {"sessionCookie": ["provider"]}],
        "agent": [{"agentToken": []}],
        "instance": [{"instanceToken": []}],
    }[access]


def is_dashboard(pattern):
    """The web dashboard's catch-alls: "/" and patterns whose every segment is {pN}."""
    segments = pattern.strip("/").split("/")
    return all(s == "" or re.fullmatch(r"\{p\d+\}", s) for s in segments)


_ROUTES = {}


def routes():
    """{(method, pattern): access} of every route `gpunexd routes` lists."""
    if not _ROUTES:
        out = subprocess.run([gpunexd_binary(), "routes"], check=True, capture_output=True,
                             text=True, timeout=60).stdout
        for r in json.loads(out)["routes"]:
            _ROUTES[(r["method"], r["pattern"])] = r["access"]
    return dict(_ROUTES)


def operations(doc):
    """{(METHOD, path): operation} of the description."""
    return {(m.upper(), path): op for path, item in doc["paths"].items()
            for m, op in item.items() if m in _METHODS}


class DescriptionTest(unittest.TestCase):
    """Needs the gpunexd binary, not a server."""

    @classmethod
    def setUpClass(cls):
        cls.doc = openapi_check.load_description()
        cls.ops = operations(cls.doc)

    def test_every_route_is_described_and_every_operation_routed(self):
        routed = routes()
        self.assertGreaterEqual(len(routed), 100, "gpunexd listed too few routes")
        api = {r for r in routed if not is_dashboard(r[1])}
        self.assertEqual(sorted(api - set(self.ops)), [],
                         "routes that docs/openapi.yaml does not describe")
        self.assertEqual(sorted(set(self.ops) - set(routed)), [],
                         "operations in docs/openapi.yaml that gpunexd does not route")
        for route, access in routed.items():
            if is_dashboard(route[1]):
                self.assertEqual(access, "public", route)

    def test_each_operation_has_the_security_its_route_declares(self):
        routed = routes()
        for (method, path), op in sorted(self.ops.items()):
            with self.subTest(route=f"{method} {path}"):
                access = routed.get((method, path))
                self.assertIsNotNone(access)
                self.assertIn("security", op, "say who may call it; public: security: []")
                self.assertEqual(op["security"],
                                 expected_security(access, method, (method, path) in WEBSOCKETS))

    def test_operation_ids_are_unique_camel_case(self):
        ids = [op.get("operationId") for op in self.ops.values()]
        self.assertNotIn(None, ids, "an operation without an operationId")
        self.assertEqual(len(ids), len(set(ids)),
                         sorted(i for i in ids if ids.count(i) > 1))
        for i in ids:
            self.assertRegex(i, r"^[a-z][a-zA-Z0-9]*$")

    def test_each_operation_answers_with_schemas(self):
        d = openapi_check.Description(self.doc)
        for (method, path), op in sorted(self.ops.items()):
            with self.subTest(route=f"{method} {path}"):
                responses = op.get("responses", {})
                self.assertTrue(any(s.startswith("2") or s == "101" for s in responses),
                                "no success answer")
                for status, spec in responses.items():
                    self.assertRegex(status, r"^[1-5][0-9][0-9]$", "explicit statuses only")
                    spec = d.resolve(spec)
                    self.assertTrue(spec.get("description"), status)
                    for media, c in (spec.get("content") or {}).items():
                        self.assertIn("schema", c, f"{status} {media}")
                    if status >= "400":
                        self.assertIn("application/json", spec.get("content", {}), status)
                if method != "GET" and method != "HEAD":
                    self.assertIn("400", responses)
                if "{" in path:
                    self.assertIn("404", responses)
                if op["security"]:
                    self.assertIn("401", responses)
                    self.assertIn("403", responses)

    def test_idempotency_key_is_listed_where_it_is_kept(self):
        for (method, path), op in sorted(self.ops.items()):
            refs = [p.get("$ref", "") for p in op.get("parameters", [])]
            keyed = "#/components/parameters/IdempotencyKey" in refs
            expected = (method in ("POST", "PUT", "PATCH", "DELETE") and path.startswith(f"{API}/")
                        and not _NO_IDEMPOTENCY.match(path)
                        and (method, path) != ("POST", f"{API}/api-keys")
                        and not path.startswith(f"{API}/agent/"))
            self.assertEqual(keyed, expected, f"{method} {path}")

    def test_paged_lists_take_limit_and_cursor(self):
        for (method, path), op in sorted(self.ops.items()):
            refs = {p.get("$ref", "") for p in op.get("parameters", [])}
            ok = op["responses"].get("200", {}).get("content", {}).get("application/json", {})
            ref = ok.get("schema", {}).get("$ref", "")
            if ref.endswith("Page"):
                self.assertIn("#/components/parameters/cursor", refs, f"{method} {path}")

    def test_schemas_are_valid_and_references_resolve(self):
        meta = jsonschema.Draft202012Validator
        resolver = jsonschema.RefResolver("", self.doc)
        refs = set()

        def walk(node):
            if isinstance(node, dict):
                if isinstance(node.get("$ref"), str):
                    refs.add(node["$ref"])
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(self.doc)
        for ref in sorted(refs):
            with self.subTest(ref=ref):
                resolver.resolve(ref)
        for name, schema in self.doc["components"]["schemas"].items():
            with self.subTest(schema=name):
                meta.check_schema(schema)

    def test_the_checker_refuses_what_the_description_does_not_allow(self):
        d = openapi_check.Description(self.doc)
        ok = json.dumps({"status": "ok"}).encode()
        self.assertIsNone(d.problem("GET", "/healthz", 200, "application/json", ok,
                                    {"status": "ok"}))
        self.assertIn("does not list status 418",
                      d.problem("GET", "/healthz", 418, "application/json", ok, {"status": "ok"}))
        self.assertIn("status", d.problem("GET", "/healthz", 200, "application/json", b"{}", {}))
        self.assertIn("no operation",
                      d.problem("GET", "/api/v1/nothing-here", 200, "application/json", ok, {}))
        error = {"error": {"code": "not_found", "message": "no such route"}}
        self.assertIsNone(d.problem("GET", "/api/v1/nothing-here", 404, "application/json",
                                    json.dumps(error).encode(), error))
        # The most specific route wins, as in the router.
        self.assertEqual(d.match("POST", f"{API}/me/sessions/revoke-others")[0],
                         f"{API}/me/sessions/revoke-others")
        self.assertEqual(d.match("DELETE", f"{API}/me/sessions/ses_1")[0],
                         f"{API}/me/sessions/{{id}}")


class ServedDescriptionMixin:
    SMTP = False

    def test_gpunexd_serves_the_description_as_json(self):
        r = self.srv.client().get(f"{API}/openapi.json")
        self.assertStatus(r, 200)
        self.assertTrue(r.header("Content-Type").startswith("application/json"),
                        r.header("Content-Type"))
        self.assertEqual(r.body, openapi_check.load_description(),
                         "GET /api/v1/openapi.json is not docs/openapi.yaml: rebuild gpunexd")
        self.assertEqual(r.body["openapi"], "3.1.0")


class ServedDescriptionSqliteTest(ServedDescriptionMixin, ServerTestCase):
    BACKEND = "sqlite"


if __name__ == "__main__":
    unittest.main()
