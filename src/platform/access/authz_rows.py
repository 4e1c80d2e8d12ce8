"""The access module's rows of the authorization matrix (tests/e2e/test_authz.py loads
this file): only a rental's customer holds its access tokens; its provider and admins
are told there is no such rental."""

from authz_expect import only
from harness import API


def fixture(srv, who):
    """A token of the customer's first rental (rnt_C1), made while it still runs: the
    DELETE row names it. (The matrix's earlier rows stop both rentals.)"""
    r = who["customer"].c.get(f"{API}/rentals")
    assert r.status == 200, r
    first = min(item["id"] for item in r.body["items"])
    r = who["customer"].c.post(f"{API}/rentals/{first}/access-tokens", {})
    assert r.status == 201, r
    return {"atk_C": r.body["id"]}


ACCESS = {
    "user": [
        ("POST", "/api/v1/rentals/{id}/access-tokens"),
        ("GET", "/api/v1/rentals/{id}/access-tokens"),
        ("DELETE", "/api/v1/rentals/{id}/access-tokens/{token_id}"),
    ],
}

MATRIX = [
    # By now the rental is stopped: its customer is told it is gone (410), everyone else
    # that there is no such rental.
    dict(route=("POST", "/api/v1/rentals/{id}/access-tokens"),
         path=f"{API}/rentals/{{rnt_C1}}/access-tokens", body={},
         expect=only(["customer"], 410, 404)),
    dict(route=("GET", "/api/v1/rentals/{id}/access-tokens"),
         path=f"{API}/rentals/{{rnt_C1}}/access-tokens", expect=only(["customer"], 200, 404)),
    dict(route=("DELETE", "/api/v1/rentals/{id}/access-tokens/{token_id}"),
         path=f"{API}/rentals/{{rnt_C1}}/access-tokens/{{atk_C}}",
         expect=only(["customer"], 204, 404), once=True),
]
