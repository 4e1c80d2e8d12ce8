#!/usr/bin/env python3
"""Converts docs/openapi.yaml to the C++ source that embeds it as JSON, so that gpunexd
serves GET /api/v1/openapi.json without reading docs/ at run time.

    openapi_to_cc.py docs/openapi.yaml OUT.cc

Needs Debian's python3-yaml. Fails on YAML that has no JSON form (a timestamp or a
non-string key would be one: quote it in the YAML).
"""

import json
import sys

import yaml


class _JsonLoader(yaml.SafeLoader):
    """YAML's core schema less what JSON cannot carry: dates stay strings."""


_JsonLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _check_keys(value, where="$"):
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise SystemExit(f"openapi_to_cc: {where}: the key {k!r} is not a string")
            _check_keys(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_keys(v, f"{where}[{i}]")


def main(argv):
    if len(argv) != 3:
        raise SystemExit("usage: openapi_to_cc.py OPENAPI.yaml OUT.cc")
    with open(argv[1], encoding="utf-8") as f:
        doc = yaml.load(f, Loader=_JsonLoader)  # noqa: S506 (a SafeLoader)
    _check_keys(doc)
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    # Raw string pieces, each well under the 65536 characters a compiler must take in one
    # literal (clang's -Woverlength-strings counts them after concatenation): joined at
    # run time.
    delim = "gpunexopenapi"
    if f"){delim}\"" in text:
        raise SystemExit("openapi_to_cc: the description holds the literal's delimiter")
    step = 8000
    pieces = [text[i:i + step] for i in range(0, len(text), step)]
    body = ",\n".join(f'    R"{delim}({p}){delim}"' for p in pieces)
    out = ("// Generated at build time from docs/openapi.yaml by openapi_to_cc.py. Do not edit.\n"
           "#include <string>\n"
           "\n"
           "namespace gpunex::platform::api {\n"
           "namespace {\n"
           f"constexpr const char* kOpenApiJsonPieces[] = {{\n{body}}};\n"
           "}  // namespace\n"
           "\n"
           "std::string OpenApiJson() {\n"
           "  std::string json;\n"
           "  for (const char* piece : kOpenApiJsonPieces) json += piece;\n"
           "  return json;\n"
           "}\n"
           "}  // namespace gpunex::platform::api\n")
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(out)


if __name__ == "__main__":
    main(sys.argv)
