"""Strict HTTP framing (issue: what an outside probe found, item 4): a request whose body
end is ambiguous under RFC 9112 §6.1–6.3 - a Transfer-Encoding other than exactly
"chunked" ("xchunked", "gzip", "chunked, identity"), two Transfer-Encoding fields,
Transfer-Encoding together with Content-Length, or any Transfer-Encoding on HTTP/1.0 - is
answered 400 and the connection closed, against a real gpunexd over a raw socket. The
bytes that follow such a request (here a second request, as a smuggling attempt would
put there) are never answered. Plain chunked bodies on HTTP/1.1 still work.
"""

import socket
import unittest

from harness import API, ServerTestCase

SMUGGLED = b"GET /api/v1/gpu-models HTTP/1.1\r\nHost: x\r\n\r\n"
BODY = b'{"email": "a@example.com", "password": "wrong-password"}'
CHUNKED_BODY = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)

BAD_HEADS = {
    "xchunked": b"Transfer-Encoding: xchunked\r\n",
    "gzip": b"Transfer-Encoding: gzip\r\n",
    "chunked, identity": b"Transfer-Encoding: chunked, identity\r\n",
    "gzip, chunked": b"Transfer-Encoding: gzip, chunked\r\n",
    "two fields": b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    "with Content-Length": b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % len(BODY),
    "Content-Length first": b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % len(BODY),
}


def exchange(port, raw, timeout=5.0):
    """Sends raw bytes; returns everything the server sent until it closed (or timed out)
    and whether it closed."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(raw)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return data, False
            if not chunk:
                return data, True
            data += chunk
    finally:
        s.close()


class HttpFramingTest(ServerTestCase):
    SMTP = False

    def request(self, version, head):
        return (b"POST %s/auth/login %s\r\nHost: x\r\nContent-Type: application/json\r\n"
                % (API.encode(), version)) + head + b"\r\n"

    def test_ambiguous_framing_is_refused_and_the_connection_closed(self):
        cases = dict((name, self.request(b"HTTP/1.1", h)) for name, h in BAD_HEADS.items())
        cases["HTTP/1.0 chunked"] = self.request(b"HTTP/1.0", b"Transfer-Encoding: chunked\r\n")
        for name, head in cases.items():
            with self.subTest(name):
                data, closed = exchange(self.srv.port, head + CHUNKED_BODY + SMUGGLED)
                self.assertTrue(data.startswith(b"HTTP/1.1 400 "), data[:200])
                self.assertTrue(closed, "the connection must be closed")
                self.assertEqual(data.count(b"HTTP/1.1 "), 1,
                                 f"only one answer, the smuggled request unread: {data!r}")
                self.assertNotIn(b"gpu-models", data)

    def test_plain_chunked_still_works_and_keeps_the_connection(self):
        raw = self.request(b"HTTP/1.1", b"Transfer-Encoding: chunked\r\n") + CHUNKED_BODY
        data, closed = exchange(self.srv.port, raw + SMUGGLED, timeout=2.0)
        self.assertTrue(data.startswith(b"HTTP/1.1 401 "), data[:200])  # wrong password
        self.assertEqual(data.count(b"HTTP/1.1 "), 2, "both requests answered on one connection")
        self.assertIn(b"HTTP/1.1 200 ", data)


if __name__ == "__main__":
    unittest.main()
