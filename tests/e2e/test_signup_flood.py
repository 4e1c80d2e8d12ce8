"""A sign-up flood does not slow the API (issue: what an outside probe found, item 1):
64 sign-ups for an existing address, 16 at a time, against gpunexd's real password cost
(Argon2id, 64 MiB). Sign-ups are limited per client address and password hashing runs in a
small gate of its own (one hash at a time, a few waiting, the rest answered 429 with
Retry-After), so an authenticated GET /me keeps its speed: its median during the flood
stays within twice the idle median (plus 3 ms of scheduling noise on this 2-core machine).
"""

import statistics
import threading
import time
import unittest

from harness import API, PASSWORD, ServerTestCase, unique_email


class SignupFloodTest(ServerTestCase):
    SMTP = False
    # The defaults for hashing and sign-ups; only log-in throttling is relaxed.
    EXTRA_TOML = "[auth]\nlogin_max_failures = 1000\nlogin_max_failures_ip = 100000\n"

    def median_me(self, client, n):
        times = []
        for _ in range(n):
            t = time.perf_counter()
            r = client.get(f"{API}/me")
            times.append(time.perf_counter() - t)
            self.assertStatus(r, 200)
        return statistics.median(times)

    def test_a_signup_flood_keeps_the_api_fast(self):
        email = unique_email("owner")
        self.srv.signup(email)
        me = self.srv.client(self.srv.login(email).body["token"])
        self.median_me(me, 10)  # warm up
        idle = self.median_me(me, 40)

        answers = []
        lock = threading.Lock()
        queue = list(range(64))

        def flood():
            c = self.srv.client()
            while True:
                with lock:
                    if not queue:
                        return
                    queue.pop()
                r = c.post(f"{API}/auth/signup",
                           {"email": email, "password": PASSWORD, "name": "Flood"})
                with lock:
                    answers.append((r.status, r.header("Retry-After")))

        threads = [threading.Thread(target=flood) for _ in range(16)]
        for t in threads:
            t.start()
        during = []
        while any(t.is_alive() for t in threads) and len(during) < 200:
            t0 = time.perf_counter()
            self.assertStatus(me.get(f"{API}/me"), 200)
            during.append(time.perf_counter() - t0)
        for t in threads:
            t.join(120)
        self.assertEqual(len(answers), 64)
        statuses = {s for s, _ in answers}
        # A taken email gets the same 201 as a free one (the owner is told by email).
        self.assertLessEqual(statuses, {201, 429}, answers)
        refused = [(s, ra) for s, ra in answers if s == 429]
        self.assertTrue(refused, "the flood was limited")
        for _, retry_after in refused:
            self.assertTrue(retry_after and int(retry_after) >= 1, refused)
        self.assertGreaterEqual(len(during), 5, "GET /me ran during the flood")
        flood_median = statistics.median(during)
        self.assertLessEqual(flood_median, 2 * idle + 0.003,
                             f"GET /me median {flood_median * 1000:.1f} ms during the flood, "
                             f"{idle * 1000:.1f} ms idle")


if __name__ == "__main__":
    unittest.main()
