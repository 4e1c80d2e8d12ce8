"""Which fields of an API answer may differ between two runs of the same requests: the
rules both the fixture generator and the upgrade test read VOLATILE and CHANGED_ON_PURPOSE
with. A rule is {"path": regex over the request path, "field": a pattern over the field's
path, "when_null": optional sibling that must be null for the rule to apply}."""

import re


def field_matches(pattern, path):
    """pattern: parts joined by "." ("*" one part, "**" any number); path: tuple of str."""
    pat = pattern.split(".")

    def m(i, j):
        if i == len(pat):
            return j == len(path)
        if pat[i] == "**":
            return any(m(i + 1, k) for k in range(j, len(path) + 1))
        if j == len(path):
            return False
        return (pat[i] == "*" or pat[i] == path[j]) and m(i + 1, j + 1)

    return m(0, 0)


def is_volatile(rules, req_path, field_path, parent):
    """Whether a rule covers the field at field_path (parent: the object holding it)."""
    for v in rules:
        if not re.search(v["path"], req_path) or not field_matches(v["field"], field_path):
            continue
        cond = v.get("when_null")
        if cond and isinstance(parent, dict) and parent.get(cond) is not None:
            continue
        return True
    return False
