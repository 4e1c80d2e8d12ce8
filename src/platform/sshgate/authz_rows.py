"""The sshgate module's rows of the authorization matrix (tests/e2e/test_authz.py loads
this file): where the SSH gateway listens and its host key are public (a client checks
the key before it signs in)."""

from authz_expect import everyone
from harness import API

ACCESS = {
    "public": [
        ("GET", "/api/v1/access/ssh"),
    ],
}

MATRIX = [
    dict(route=("GET", "/api/v1/access/ssh"), path=f"{API}/access/ssh", expect=everyone(200)),
]
