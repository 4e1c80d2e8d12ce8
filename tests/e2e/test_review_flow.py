"""The review flow (hardening issue, items 11 and 13) through the API of a real gpunexd:

- a resubmission keeps the first submission time (`submitted_at`), with the latest in
  `resubmitted_at`, and the queue's age and order count from the first one;
- the applicant answers a request for information with `reply` on the submission: its own
  "reply" entry in the history, before "resubmitted"; refused on a first submission and
  beyond 4000 characters;
- an edit's "updated" entry lists the fields that changed, old and new; an edit that
  changes nothing writes no entry;
- approving Enterprise against a Community suggestion is refused on `tier` (saying it
  differs from the suggestion and why) unless `override_suggestion` is true; the override
  is in the history and the audit log;
- the queue has a `total`, a search (`q` over name, company, email and id) and a sort
  (`sort=oldest|newest`), and `mine=true` lists only the caller's own applications, also
  for an admin.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import copy
import unittest

from harness import API, ServerTestCase, community_application, enterprise_application, unique_email

APPS = f"{API}/provider-applications"


def not_enterprise(email, full_name="Ada Lovelace", company="Analytical Engines DC"):
    """Enterprise-worthy but for one entry on a weekly schedule: suggested Community, with
    a UPS (so Enterprise is allowed with an override)."""
    body = enterprise_application(email, full_name=full_name, company=company)
    body["gpus"][1]["availability"] = {
        "kind": "schedule", "timezone": "Europe/Rome",
        "windows": [{"days": ["mon", "tue"], "start": "08:00", "end": "20:00"}]}
    return body


class ReviewFlowMixin:
    def _submit(self, user, body):
        body = copy.deepcopy(body)
        body["submit"] = True
        r = user.c.post(APPS, body)
        self.assertStatus(r, 201)
        return r.body

    def test_reply_kept_submission_time_and_diffs(self):
        admin = self.srv.admin()
        ada = self.srv.user("Ada Lovelace")
        contact = unique_email("ada-ops")
        first = self._submit(ada, not_enterprise(contact))
        app_id = first["id"]
        self.assertIsNone(first["resubmitted_at"])
        r = admin.c.post(f"{APPS}/{app_id}/decision",
                         {"decision": "request_info", "message": "Which UPS model?"})
        self.assertStatus(r, 200)

        # Replies are bounded; the refused submission changed nothing.
        r = ada.c.post(f"{APPS}/{app_id}/submit", {"reply": "x" * 4001})
        self.assertError(r, 422, fields=["reply"])
        r = ada.c.post(f"{APPS}/{app_id}/submit", {"reply": 5})
        self.assertError(r, 422, fields=["reply"])
        r = ada.c.post(f"{APPS}/{app_id}/submit", {"reply": "ok", "extra": 1})
        self.assertError(r, 422, fields=["extra"])
        self.assertEqual(ada.c.get(f"{APPS}/{app_id}").body["status"], "needs_info")

        # An edit: the changed fields, old and new.
        edited = not_enterprise(contact)
        edited["contact"]["company"] = "Difference Engines Ltd"
        edited["gpus"][0]["quantity"] = 4
        r = ada.c.put(f"{APPS}/{app_id}", edited)
        self.assertStatus(r, 200)
        entry = r.body["history"][-1]
        self.assertEqual(entry["action"], "updated")
        self.assertEqual(entry["changes"], [
            {"field": "contact.company", "from": "Analytical Engines DC",
             "to": "Difference Engines Ltd"},
            {"field": "gpus[0].quantity", "from": "8", "to": "4"},
        ])
        self.assertEqual(entry["changes_omitted"], 0)
        # The same body again: nothing new in the history.
        r = ada.c.put(f"{APPS}/{app_id}", edited)
        self.assertStatus(r, 200)
        self.assertEqual([h["action"] for h in r.body["history"]].count("updated"), 1)

        reply = "An APC Symmetra PX 100 kW, 40 minutes at full load."
        r = ada.c.post(f"{APPS}/{app_id}/submit", {"reply": reply})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "submitted")
        self.assertEqual(r.body["submitted_at"], first["submitted_at"], "the first submission")
        self.assertIsNotNone(r.body["resubmitted_at"])
        self.assertGreater(r.body["resubmitted_at"], first["submitted_at"])
        actions = [h["action"] for h in r.body["history"]]
        self.assertEqual(actions, ["created", "submitted", "request_info", "updated", "reply",
                                   "resubmitted"])
        got = r.body["history"][4]
        self.assertEqual((got["message"], got["actor_id"], got["from_status"], got["to_status"]),
                         (reply, ada.id, "needs_info", "needs_info"))
        # The reviewer sees the same.
        r = admin.c.get(f"{APPS}/{app_id}")
        self.assertEqual(r.body["history"][4]["message"], reply)
        self.assertEqual(r.body["history"][3]["changes"][0]["field"], "contact.company")

        # A reply on a first submission is refused.
        bob = self.srv.user("Bob Builder")
        r = bob.c.post(APPS, community_application(unique_email("bob")))
        self.assertStatus(r, 201)
        r = bob.c.post(f"{APPS}/{r.body['id']}/submit", {"reply": "hello"})
        self.assertError(r, 422, fields=["reply"])

    def test_override_rule(self):
        admin = self.srv.admin()
        ada = self.srv.user("Ada Lovelace")
        app = self._submit(ada, not_enterprise(unique_email("ada")))
        self.assertEqual(app["suggested_tier"], "community")
        r = admin.c.post(f"{APPS}/{app['id']}/decision", {"decision": "approve", "tier": "enterprise"})
        err = self.assertError(r, 422, fields=["tier"])
        self.assertIn("differs from the suggested tier", err["fields"]["tier"])
        self.assertIn("not available 24/7 on every GPU entry", err["fields"]["tier"])
        r = admin.c.post(f"{APPS}/{app['id']}/decision",
                         {"decision": "approve", "tier": "enterprise", "override_suggestion": "yes"})
        self.assertError(r, 422, fields=["override_suggestion"])
        r = admin.c.post(f"{APPS}/{app['id']}/decision",
                         {"decision": "reject", "message": "no", "override_suggestion": True})
        self.assertError(r, 422, fields=["override_suggestion"])
        self.assertEqual(admin.c.get(f"{APPS}/{app['id']}").body["status"], "submitted")

        r = admin.c.post(f"{APPS}/{app['id']}/decision",
                         {"decision": "approve", "tier": "enterprise", "override_suggestion": True})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["tier"], "enterprise")
        self.assertEqual(r.body["decided_by"], admin.id)
        self.assertEqual(r.body["history"][-1]["overridden_suggestion"], "community")
        self.assertEqual(self.srv.backend.query(
            "SELECT COUNT(*) FROM audit_events WHERE action = 'application.approve' AND subject = ? "
            "AND detail LIKE '%overridden_suggestion%'", (app["id"],))[0][0], 1)

        # Community against an Enterprise suggestion: allowed, and recorded.
        eve = self.srv.user("Eve Enterprise")
        worthy = self._submit(eve, enterprise_application(unique_email("eve")))
        self.assertEqual(worthy["suggested_tier"], "enterprise")
        r = admin.c.post(f"{APPS}/{worthy['id']}/decision", {"decision": "approve", "tier": "community"})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["history"][-1]["overridden_suggestion"], "enterprise")

    def test_queue_count_search_sort_and_mine(self):
        admin = self.srv.admin()
        ids = []
        for name, company in (("Ada Lovelace", "Alpha GPU 100% Srl"), ("Grace Hopper", "Beta Compute"),
                              ("Ava Lovegood", "Gamma_Labs")):
            u = self.srv.user(name)
            body = community_application(unique_email("ops"), full_name=name)
            body["contact"]["company"] = company
            ids.append(self._submit(u, body)["id"])

        def listed(query):
            r = admin.c.get(APPS, query=dict({"status": "submitted"}, **query))
            self.assertStatus(r, 200, query)
            return [it["id"] for it in r.body["items"]], r.body["total"]

        self.assertEqual(listed({}), (ids, 3))
        self.assertEqual(listed({"sort": "oldest"}), (ids, 3))
        self.assertEqual(listed({"sort": "newest"}), (ids[::-1], 3))
        page, total = listed({"limit": "1"})
        self.assertEqual((page, total), ([ids[0]], 3), "the total of the whole list")
        self.assertEqual(listed({"q": "beta COMPUTE"}), ([ids[1]], 1))
        self.assertEqual(listed({"q": "LOVE"}), ([ids[0], ids[2]], 2))
        self.assertEqual(listed({"q": "100%"}), ([ids[0]], 1))
        self.assertEqual(listed({"q": "a_l"}), ([ids[2]], 1))
        self.assertEqual(listed({"q": ids[1].lower()}), ([ids[1]], 1))
        self.assertEqual(listed({"q": "nobody here"}), ([], 0))

        # mine: the admin has none; a user sees their own whatever they ask.
        r = admin.c.get(APPS, query={"mine": "true"})
        self.assertStatus(r, 200)
        self.assertEqual((r.body["items"], r.body["total"]), ([], 0))
        r = admin.c.get(APPS, query={"mine": "false"})
        self.assertEqual(r.body["total"], 3)

        for query, field in (({"sort": "age"}, "sort"), ({"q": "q" * 101}, "q"),
                             ({"mine": "yes"}, "mine")):
            with self.subTest(query=query):
                r = admin.c.get(APPS, query=query)
                self.assertError(r, 422, fields=[field])


class ReviewFlowSqliteTest(ReviewFlowMixin, ServerTestCase):
    BACKEND = "sqlite"


class ReviewFlowPostgresTest(ReviewFlowMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
