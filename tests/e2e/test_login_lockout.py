"""Log-in throttling against a stranger (issue: what an outside probe found, item 2): wrong
passwords for an account from one client address lock that address out of the account,
and slow the owner's other addresses down with a short, growing wait, never a lock. A
real gpunexd; the client addresses are loopback addresses (127.0.0.2, 127.0.0.3) that the
connections are bound to.
"""

import http.client
import json
import time
import unittest

from harness import API, AUTH_FOR_TESTS, ServerTestCase

PASSWORD = "correct-horse-battery-staple"


def login(port, source, email, password):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        c.request("POST", f"{API}/auth/login", json.dumps({"email": email, "password": password}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"{}")
    finally:
        c.close()


class LoginLockoutTest(ServerTestCase):
    SMTP = False
    EXTRA_TOML = "\n".join(["[auth]"] + AUTH_FOR_TESTS[:3] + ["login_max_failures = 5", ""])

    def test_a_stranger_cannot_lock_the_owner_out(self):
        owner = self.srv.signup(password=PASSWORD, name="Owner")  # the user object
        stranger, home = "127.0.0.2", "127.0.0.3"
        for _ in range(5):
            status, _ = login(self.srv.port, stranger, owner["email"], "guess-guess-guess")
            self.assertEqual(status, 401)
        status, body = login(self.srv.port, stranger, owner["email"], PASSWORD)
        self.assertEqual(status, 429, body)
        self.assertIn("from this address", body["error"]["message"])
        # The owner, from home, at most waits out a short delay.
        deadline = time.monotonic() + 5
        while True:
            status, body = login(self.srv.port, home, owner["email"], PASSWORD)
            if status != 429 or time.monotonic() > deadline:
                break
            self.assertIn("try again in", body["error"]["message"])
            time.sleep(0.3)
        self.assertEqual(status, 200, body)
        self.assertTrue(body["token"])


if __name__ == "__main__":
    unittest.main()
