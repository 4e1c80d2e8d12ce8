"""The sshkeys module's rows of the authorization matrix (tests/e2e/test_authz.py loads
this file): each user reaches their own SSH keys only."""

import base64
import os
import struct

from authz_expect import only, users
from harness import API


def new_key_line(comment=""):
    """A well-formed ssh-ed25519 public key line nobody holds yet."""
    def string(b):
        return struct.pack(">I", len(b)) + b
    blob = string(b"ssh-ed25519") + string(os.urandom(32))
    return ("ssh-ed25519 " + base64.b64encode(blob).decode() + " " + comment).strip()


def fixture(srv, who):
    """The customer's key, which the DELETE row names."""
    r = who["customer"].c.post(f"{API}/me/ssh-keys", {"name": "fixture",
                                                      "public_key": new_key_line()})
    assert r.status == 201, r
    return {"ssh_C": r.body["id"]}


def _key_body(ctx, who):
    return {"name": f"{who}'s key", "public_key": new_key_line(f"{who}@authz")}


ACCESS = {
    "user": [
        ("GET", "/api/v1/me/ssh-keys"),
        ("POST", "/api/v1/me/ssh-keys"),
        ("DELETE", "/api/v1/me/ssh-keys/{id}"),
    ],
}

MATRIX = [
    dict(route=("GET", "/api/v1/me/ssh-keys"), path=f"{API}/me/ssh-keys", expect=users(200)),
    dict(route=("POST", "/api/v1/me/ssh-keys"), path=f"{API}/me/ssh-keys", body=_key_body,
         expect=users(201)),
    dict(route=("DELETE", "/api/v1/me/ssh-keys/{id}"), path=f"{API}/me/ssh-keys/{{ssh_C}}",
         expect=only(["customer"], 204, 404), once=True),
]
