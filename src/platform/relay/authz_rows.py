"""The relay module's rows of the authorization matrix (tests/e2e/test_authz.py loads this
file): a rental's TCP ports, files and exec are its customer's alone; its provider and
admins are told there is no such rental. By the time these rows run the customer's first
rental (rnt_C1) has ended: its files and exec answer 410; its TCP connection (a port it
did not declare) 404. A WebSocket's API key needs the write scope. The cluster's peer
connection (another instance's streams) takes an instance's secret alone: every user,
key and anonymous caller gets 401."""

from authz_expect import everyone, only
from harness import API

ACCESS = {
    "user": [
        ("GET", "/api/v1/rentals/{id}/ports/{port}/connect"),
        ("GET", "/api/v1/rentals/{id}/files"),
        ("PUT", "/api/v1/rentals/{id}/files"),
        ("GET", "/api/v1/rentals/{id}/exec"),
    ],
    "instance": [
        ("GET", "/api/v1/cluster/streams"),
    ],
}

MATRIX = [
    dict(route=("GET", "/api/v1/rentals/{id}/ports/{port}/connect"),
         path=f"{API}/rentals/{{rnt_C1}}/ports/8080/connect", ws=True,
         expect=only(["customer"], 404, 404)),
    dict(route=("GET", "/api/v1/rentals/{id}/files"),
         path=f"{API}/rentals/{{rnt_C1}}/files?path=/scratch",
         expect=only(["customer"], 410, 404)),
    dict(route=("PUT", "/api/v1/rentals/{id}/files"),
         path=f"{API}/rentals/{{rnt_C1}}/files?path=/scratch", body="a tar",
         expect=only(["customer"], 410, 404)),
    dict(route=("GET", "/api/v1/rentals/{id}/exec"),
         path=f"{API}/rentals/{{rnt_C1}}/exec?command=true", ws=True,
         expect=only(["customer"], 410, 404)),
    dict(route=("GET", "/api/v1/cluster/streams"),
         path=f"{API}/cluster/streams", ws=True, expect=everyone(401)),
]
