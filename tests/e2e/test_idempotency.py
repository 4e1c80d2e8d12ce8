"""Idempotent writes (Idempotency-Key), end to end: a state-changing request sent again
with its key gets the first answer and has no second effect, on both backends.

- the same POST repeated (also concurrently) makes one application, and every answer is
  the first one (repeats carry "Idempotent-Replayed: true");
- the same key with another body is 422 naming Idempotency-Key, and changes nothing;
- keys are per user: another user's same key is another request;
- a malformed key is 422; requests without a key are not affected;
- decisions are idempotent too: a repeated approval is answered as the first, not 409;
- requests whose answer holds a secret shown once (a new API key) ignore the key: their
  answer is never stored.
"""

import threading
import unittest

from harness import API, ServerTestCase, community_application, unique_email


class IdempotencySqliteTest(ServerTestCase):
    BACKEND = "sqlite"

    def count(self, table):
        return self.srv.backend.query(f"SELECT COUNT(*) FROM {table}")[0][0]

    def test_a_repeat_gets_the_first_answer_and_no_second_effect(self):
        u = self.srv.user("Ida Idem")
        body = community_application(unique_email("ida"))
        key = {"Idempotency-Key": "create-application-1"}
        first = u.c.post(f"{API}/provider-applications", body, headers=key)
        self.assertStatus(first, 201)
        self.assertIsNone(first.header("Idempotent-Replayed"))
        for _ in range(3):
            again = u.c.post(f"{API}/provider-applications", body, headers=key)
            self.assertStatus(again, 201)
            self.assertEqual(again.body, first.body)
            self.assertEqual(again.header("Idempotent-Replayed"), "true")
        self.assertEqual(self.count("provider_applications"), 1)

        # Without the key the same request is a new one (and refused: one open application).
        self.assertError(u.c.post(f"{API}/provider-applications", body), 409)

        # The same key with another body: refused, nothing changes.
        other = dict(body, infrastructure=dict(body["infrastructure"], commitment_months=6))
        self.assertError(u.c.post(f"{API}/provider-applications", other, headers=key), 422,
                         fields=["Idempotency-Key"])
        self.assertEqual(self.count("provider_applications"), 1)

        # Malformed keys.
        for bad in ("has space", "x" * 256):
            self.assertError(u.c.post(f"{API}/provider-applications", body,
                                      headers={"Idempotency-Key": bad}), 422, fields=["Idempotency-Key"])

        # Keys belong to their user.
        v = self.srv.user("Vic Other")
        r = v.c.post(f"{API}/provider-applications", community_application(unique_email("vic")), headers=key)
        self.assertStatus(r, 201)
        self.assertNotEqual(r.body["id"], first.body["id"])
        self.assertEqual(self.count("provider_applications"), 2)

    def test_concurrent_repeats_make_one(self):
        u = self.srv.user("Con Current")
        body = community_application(unique_email("con"))
        key = {"Idempotency-Key": "concurrent-1"}
        answers = []
        lock = threading.Lock()

        def send():
            r = u.c.post(f"{API}/provider-applications", body, headers=key)
            with lock:
                answers.append(r)

        threads = [threading.Thread(target=send) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(self.count("provider_applications"), 1)
        ids = {a.body["id"] for a in answers if a.status == 201}
        self.assertEqual(len(ids), 1, answers)
        # A repeat that could not wait for the first answer is told to retry (409), never
        # a second application.
        self.assertTrue(all(a.status in (201, 409) for a in answers), answers)

    def test_a_repeated_decision_is_answered_as_the_first(self):
        admin = self.srv.admin()
        u = self.srv.user("Deci Sion")
        body = community_application(unique_email("deci"))
        body["submit"] = True
        app = u.c.post(f"{API}/provider-applications", body)
        self.assertStatus(app, 201)
        decision = {"decision": "approve", "tier": "community"}
        key = {"Idempotency-Key": "approve-" + app.body["id"]}
        first = admin.c.post(f"{API}/provider-applications/{app.body['id']}/decision", decision, headers=key)
        self.assertStatus(first, 200)
        again = admin.c.post(f"{API}/provider-applications/{app.body['id']}/decision", decision, headers=key)
        self.assertStatus(again, 200)
        self.assertEqual(again.body["status"], "approved")
        self.assertEqual(self.count("providers"), 1)
        self.assertEqual(self.count("agent_tokens"), 1)
        # Without the key the repeat is a new request: the application is decided already.
        self.assertError(admin.c.post(f"{API}/provider-applications/{app.body['id']}/decision", decision), 409)

    def test_answers_with_a_secret_are_never_stored(self):
        u = self.srv.user("Key Maker")
        key = {"Idempotency-Key": "new-api-key"}
        a = u.c.post(f"{API}/api-keys", {"name": "ci"}, headers=key)
        b = u.c.post(f"{API}/api-keys", {"name": "ci"}, headers=key)
        self.assertStatus(a, 201)
        self.assertStatus(b, 201)
        self.assertNotEqual(a.body["key"], b.body["key"])
        self.assertEqual(self.count("idempotency_keys"), 0)


class IdempotencyPostgresTest(IdempotencySqliteTest):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
