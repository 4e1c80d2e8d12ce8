"""What the authorization matrix (test_authz.py) expects of each principal, shared with
the rows a module keeps in its own folder (src/platform/<folder>/authz_rows.py)."""

PRINCIPALS = ("anon", "customer", "provA", "provB", "admin")
ALL_USERS = ("customer", "provA", "provB", "admin")


def everyone(status):
    return {p: status for p in PRINCIPALS}


def users(status, anon=401):
    d = {p: status for p in ALL_USERS}
    d["anon"] = anon
    return d


def only(allowed, status, others, anon=401, **overrides):
    """`allowed` principals get `status`, other users `others`, anon `anon`."""
    d = {p: (status if p in allowed else others) for p in ALL_USERS}
    d["anon"] = anon
    d.update(overrides)
    return d
