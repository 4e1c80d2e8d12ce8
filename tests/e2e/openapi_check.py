"""The API's description (docs/openapi.yaml) as the end-to-end tests use it: every JSON
answer the harness's Client receives is checked against the schema the description gives
for its method, route and status (`check_answer`), so that the description stays true.

Debian's python3-yaml and python3-jsonschema (Draft 2020-12, as OpenAPI 3.1 uses). The
description is loaded once per process, and each answer's validator is compiled the first
time it is needed.

A request whose path no operation of the description matches is the dashboard's (a path
outside /api/, answered by the web pages) or an unknown path: its answer may only be an
error of the one shape (404 not found, 405 with Allow, 400 a malformed request).
"""

import os
import re
import threading
import urllib.parse

import jsonschema
import yaml

# What a request that matches no operation may be answered (docs/api.md, Errors).
_UNROUTED_STATUSES = (400, 404, 405, 413, 431)


class _JsonLoader(yaml.SafeLoader):
    """YAML's core schema less what JSON cannot carry (dates stay strings), as
    src/platform/api/openapi_to_cc.py reads it for gpunexd."""


_JsonLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def description_path():
    base = os.environ.get("GPUNEX_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..",
                                                               "..")
    return os.path.join(base, "docs", "openapi.yaml")


def load_description(path=None):
    """docs/openapi.yaml as the JSON value gpunexd serves."""
    with open(path or description_path(), encoding="utf-8") as f:
        return yaml.load(f, Loader=_JsonLoader)  # noqa: S506 (a SafeLoader)


class Description:
    """The operations of one description and the validators of their answers."""

    def __init__(self, doc):
        self.doc = doc
        self._resolver = jsonschema.RefResolver("", doc)
        self._validators = {}
        self._lock = threading.Lock()
        # (segments, template): each segment a literal, or None for a parameter.
        self._templates = []
        for template in doc.get("paths", {}):
            segs = [None if re.fullmatch(r"\{[^/{}]+\}", s) else s
                    for s in template.strip("/").split("/")] if template != "/" else []
            self._templates.append((segs, template))

    def match(self, method, path):
        """(template, operation) of the operation `method` `path` reaches, as the router
        chooses it (the most specific: a literal segment before a parameter, from the
        left); (template, None) when the path is described but not with that method;
        (None, None) when no template matches."""
        segments = [] if path.strip("/") == "" else path.strip("/").split("/")
        segments = [urllib.parse.unquote(s) for s in segments]
        best_any, best = None, None
        for segs, template in self._templates:
            if len(segs) != len(segments):
                continue
            if not all(s == seg if s is not None else seg != ""
                       for s, seg in zip(segs, segments)):
                continue
            if best_any is None or _more_specific(segs, best_any[0]):
                best_any = (segs, template)
            if method.lower() in self.doc["paths"][template] and (
                    best is None or _more_specific(segs, best[0])):
                best = (segs, template)
        if best is not None:
            return best[1], self.doc["paths"][best[1]][method.lower()]
        if best_any is not None:
            return best_any[1], None
        return None, None

    def validator(self, schema_key, schema):
        with self._lock:
            v = self._validators.get(schema_key)
            if v is None:
                v = jsonschema.Draft202012Validator(schema, resolver=self._resolver)
                self._validators[schema_key] = v
            return v

    def resolve(self, node):
        """`node` with a $ref (to a response of components) followed."""
        while isinstance(node, dict) and "$ref" in node:
            _, node = self._resolver.resolve(node["$ref"])
        return node

    def problem(self, method, path, status, content_type, raw, body):
        """What is wrong with the answer `status` to `method` `path` (without the query),
        or None when the description allows it. `body` is the parsed JSON, or None."""
        template, op = self.match(method, path)
        is_json = body is not None or (content_type or "").startswith("application/json")
        media = (content_type or "").split(";")[0].strip().lower()
        if op is None:
            if template is None and not path.startswith("/api/") and method in ("GET", "HEAD"):
                return None  # the dashboard's pages
            if status not in _UNROUTED_STATUSES:
                where = ("no operation for this method" if template
                         else "a path that no operation of docs/openapi.yaml describes")
                return f"{where}, answered {status}"
            if is_json and raw:
                return self._schema_problem(("Error",), {"$ref": "#/components/schemas/Error"},
                                            body, raw)
            return None
        responses = op.get("responses", {})
        spec = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or \
            responses.get("default")
        if spec is None:
            return (f"{op.get('operationId')} ({method} {template}) does not list status "
                    f"{status} in docs/openapi.yaml")
        spec = self.resolve(spec)
        content = spec.get("content") or {}
        if method == "HEAD" or not raw:
            if not raw and content and status != 204 and method != "HEAD":
                # An empty body where the description promises one is only fine when the
                # schema allows nothing else anyway; say so.
                return f"status {status}: an empty body where the description gives {sorted(content)}"
            return None
        if not content:
            return f"status {status}: a body ({media or 'no Content-Type'}) where none is described"
        if media not in content:
            return f"status {status}: Content-Type {media!r} is not among {sorted(content)}"
        if media != "application/json":
            return None
        schema = content[media].get("schema")
        if schema is None:
            return None
        return self._schema_problem((template, method, status, media), schema, body, raw)

    def _schema_problem(self, key, schema, body, raw):
        if body is None:
            return f"the answer is not JSON: {raw[:200]!r}"
        v = self.validator(key, schema)
        error = jsonschema.exceptions.best_match(v.iter_errors(body))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(the body)"
        return f"at {where}: {error.message}"


def _more_specific(a, b):
    for x, y in zip(a, b):
        if (x is None) != (y is None):
            return x is not None
    return False


_DESCRIPTION = None
_DESCRIPTION_LOCK = threading.Lock()


def description():
    global _DESCRIPTION
    with _DESCRIPTION_LOCK:
        if _DESCRIPTION is None:
            _DESCRIPTION = Description(load_description())
        return _DESCRIPTION


def check_answer(method, target, status, content_type, raw, body):
    """Raises AssertionError naming the route, the status and the schema's complaint when
    the answer to `method` `target` (a path, with or without its query) is not what
    docs/openapi.yaml describes. GPUNEX_E2E_NO_OPENAPI=1 skips the check, and
    GPUNEX_E2E_OPENAPI_REPORT=FILE appends each problem to FILE instead of failing, to
    collect them all in one run (debugging: updating the description)."""
    if os.environ.get("GPUNEX_E2E_NO_OPENAPI") == "1":
        return
    path = urllib.parse.urlsplit(target).path
    problem = description().problem(method, path, status, content_type, raw, body)
    if problem:
        text = raw[:400].decode("utf-8", errors="replace") if raw else ""
        message = f"docs/openapi.yaml: {method} {path} answered {status}: {problem}"
        report = os.environ.get("GPUNEX_E2E_OPENAPI_REPORT")
        if report:
            with _DESCRIPTION_LOCK, open(report, "a", encoding="utf-8") as f:
                f.write(message.replace("\n", " ") + "\t" + text.replace("\n", " ") + "\n")
            return
        raise AssertionError(f"{message}\n  answer: {text}")

