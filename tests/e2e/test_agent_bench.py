"""The agent's network throughput benchmark (BEN-4) end to end against a real gpunexd.

GET /api/v1/agent/bench/download?bytes=N and POST /api/v1/agent/bench/upload are stream
routes (src/platform/http/stream.h), not router routes, so test_authz's route table does
not list them: their authorization is checked here. Only an agent token opens them (as
the agent channel): no credentials, a malformed or unknown token, a revoked one, a user's
session token or API key get 401; bad sizes 422 or 413; a token gets at most two
transfers at a time (429). Then the real `gpunex-agent bench network` (GPUNEX_AGENT)
measures through them.
"""

import http.client
import json
import os
import socket
import subprocess
import time
import unittest

from harness import API, ServerTestCase, provider_with_agent_token

DOWNLOAD = f"{API}/agent/bench/download"
UPLOAD = f"{API}/agent/bench/upload"
GIB = 1 << 30
AGENT = os.environ.get("GPUNEX_AGENT", "")


class AgentBenchTest(ServerTestCase):
    SMTP = False

    def setUp(self):
        super().setUp()
        self.admin = self.srv.admin()
        self.prov, self.token, self.token_id = provider_with_agent_token(self.srv, self.admin, "Bench")

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)

    def raw(self, request_head):
        """Sends a request head on a raw socket; returns the socket and the answer's head."""
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=30)
        s.sendall(request_head.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        return s, head.split(b"\r\n\r\n")[0].decode()

    def test_download_streams_the_bytes_asked_for(self):
        c = self.conn()
        n = 3 * (1 << 20) + 7
        c.request("GET", f"{DOWNLOAD}?bytes={n}", headers={"Authorization": f"Bearer {self.token}",
                                                          "Accept-Encoding": "gzip"})
        r = c.getresponse()
        body = r.read()
        self.assertEqual(r.status, 200)
        self.assertEqual(len(body), n)
        self.assertEqual(r.getheader("Content-Type"), "application/octet-stream")
        self.assertIsNone(r.getheader("Content-Encoding"))  # never compressed
        self.assertGreater(len(set(body[:4096])), 200)     # not a constant fill
        # The connection carries the next request.
        c.request("GET", f"{DOWNLOAD}?bytes=1", headers={"Authorization": f"Bearer {self.token}"})
        r = c.getresponse()
        self.assertEqual((r.status, len(r.read())), (200, 1))
        c.close()

    def test_upload_counts_and_discards_the_body(self):
        auth = {"Authorization": f"Bearer {self.token}"}
        c = self.conn()
        n = 5 * (1 << 20) + 3  # over the 1 MiB limit of ordinary requests
        c.request("POST", UPLOAD, body=os.urandom(n), headers=auth)
        r = c.getresponse()
        answer = json.loads(r.read())
        self.assertEqual(r.status, 200, answer)
        self.assertEqual(answer["bytes"], n)
        self.assertGreaterEqual(answer["seconds"], 0)
        # Chunked, as the agent sends it.
        pieces = [os.urandom(100_000) for _ in range(7)]
        c.request("POST", UPLOAD, body=iter(pieces), headers=auth, encode_chunked=True)
        r = c.getresponse()
        self.assertEqual(json.loads(r.read())["bytes"], 700_000)
        c.close()

    def test_only_agent_tokens_open_the_endpoints(self):
        r = self.srv.client().post(f"{API}/providers/me/agent-tokens", {"name": "revoked"},
                                   token=self.prov.token)
        self.assertStatus(r, 201)
        revoked = r.body["token"]
        self.assertStatus(self.srv.client().delete(f"{API}/providers/me/agent-tokens/{r.body['id']}",
                                                   token=self.prov.token), 204)
        r = self.prov.c.post(f"{API}/api-keys", {"name": "not an agent"})
        self.assertStatus(r, 201)
        api_key = r.body["key"]
        refused = {"none": "", "malformed": "not-a-token", "unknown": "gpx_a_" + "x" * 43,
                   "revoked": revoked, "session": self.prov.token, "api key": api_key}
        client = self.srv.client()
        for who, tok in refused.items():
            with self.subTest(who=who):
                r = client.get(DOWNLOAD, query={"bytes": "10"}, token=tok)
                self.assertError(r, 401, msg=who)
                r = client.request("POST", UPLOAD, raw=b"x" * 10, token=tok)
                self.assertError(r, 401, msg=who)
        # The agent token itself works, also on a GET without credentials in the query.
        self.assertStatus(client.get(DOWNLOAD, query={"bytes": "10"}, token=self.token), 200)

    def test_sizes_and_methods_are_bounded(self):
        client = self.srv.client(self.token)
        for bad in ("0", "-1", "abc", "", str(GIB + 1), "99999999999"):
            with self.subTest(bytes=bad):
                self.assertError(client.get(DOWNLOAD, query={"bytes": bad}), 422, fields=["bytes"])
        self.assertError(client.get(DOWNLOAD), 422, fields=["bytes"])
        self.assertStatus(client.request("POST", DOWNLOAD, raw=b""), 405)
        self.assertStatus(client.get(UPLOAD), 405)
        # A body announced over 1 GiB is refused before it is sent.
        s, head = self.raw(f"POST {UPLOAD} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {self.token}\r\n"
                           f"Content-Length: {GIB + 1}\r\nExpect: 100-continue\r\n\r\n")
        s.close()
        self.assertTrue(head.startswith("HTTP/1.1 413"), head)

    def test_two_transfers_at_a_time_per_token(self):
        # Two downloads of 1 GiB that nobody reads stay in progress.
        busy = []
        for _ in range(2):
            s, head = self.raw(f"GET {DOWNLOAD}?bytes={GIB} HTTP/1.1\r\nHost: x\r\n"
                               f"Authorization: Bearer {self.token}\r\n\r\n")
            self.assertTrue(head.startswith("HTTP/1.1 200"), head)
            busy.append(s)
        client = self.srv.client(self.token)
        self.assertError(client.get(DOWNLOAD, query={"bytes": "10"}), 429)
        self.assertError(client.request("POST", UPLOAD, raw=b"x"), 429)
        # Another token of the same provider has its own allowance.
        r = self.prov.c.post(f"{API}/providers/me/agent-tokens", {"name": "second"})
        self.assertStatus(client.get(DOWNLOAD, query={"bytes": "10"}, token=r.body["token"]), 200)
        # A transfer that ends frees its slot.
        busy.pop().close()
        deadline = time.monotonic() + 10
        while True:
            r = client.get(DOWNLOAD, query={"bytes": "10"})
            if r.status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertStatus(r, 200)
        for s in busy:
            s.close()

    @unittest.skipUnless(AGENT, "GPUNEX_AGENT (the gpunex-agent binary) is not set")
    def test_agent_measures_through_gpunexd(self):
        base = f"http://127.0.0.1:{self.srv.port}"
        p = subprocess.run([AGENT, "bench", "network", "--url", base, "--token", self.token,
                            "--mb", "64", "--json"], capture_output=True, text=True, timeout=120,
                           env={"PATH": os.environ.get("PATH", "")})
        self.assertEqual(p.returncode, 0, p.stderr)
        figures = json.loads(p.stdout)
        self.assertEqual(figures["download_bytes"], 64 << 20)
        self.assertEqual(figures["upload_bytes"], 64 << 20)
        self.assertGreater(figures["download_mbit_s"], 0)
        self.assertGreater(figures["upload_mbit_s"], 0)
        # A session token is not an agent token.
        p = subprocess.run([AGENT, "bench", "network", "--url", base, "--token", self.prov.token,
                            "--mb", "1"], capture_output=True, text=True, timeout=60,
                           env={"PATH": os.environ.get("PATH", "")})
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("401", p.stderr)


if __name__ == "__main__":
    unittest.main()
