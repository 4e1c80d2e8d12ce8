"""The provider path end to end (APP-1..5, REV-1..4, NTF-1, ACC-1):

sign-up → draft application with several GPU entries, edited with PUT → submit → the
reviewer's queue (suggested tier, age in business days) → request_info with a message →
the applicant sees needs_info and the message, edits and resubmits → approve as
Enterprise → provider role, tier, one active agent token; the emails at the SMTP sink
(submitted, needs-info, resubmitted, approved with the agent token and install command),
the in-dashboard notifications (never the token), token create/rotate/revoke, and the
outbox keeping no body once sent. Plus the reject path and cookie sessions with CSRF.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import copy
import json
import time
import unittest

from harness import (AGENT_TOKEN_RE, API, PUBLIC_URL, ServerTestCase, community_application,
                     enterprise_application, gpu_entry, sha256, unique_email)

SUBJECT_SUBMITTED = "gpunex: your provider application was received"
SUBJECT_NEEDS_INFO = "gpunex: more information needed for your provider application"
SUBJECT_RESUBMITTED = "gpunex: your updated provider application was received"
SUBJECT_APPROVED = "gpunex: your provider application is approved"
SUBJECT_REJECTED = "gpunex: your provider application was not approved"
SUBJECT_VERIFY = "gpunex: confirm your email address"

REVIEWER_MESSAGE = ("Please tell us the make and model of your UPS and how long it holds the "
                    "H100 rack at full load.")
REJECT_REASON = "Residential connection below 1 Gbps and no UPS: not suitable at this time."


class FullPathMixin:

    def test_apply_review_approve_enterprise(self):
        srv, sink = self.srv, self.sink
        admin = srv.admin()
        ada = srv.user("Ada Lovelace")
        contact = unique_email("ada-contact")  # notifications go here, not to the login email
        self.assertNotEqual(contact, ada.email)

        r = ada.c.get(f"{API}/me")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["roles"], ["customer"])
        self.assertEqual(r.body["email"], ada.email)

        # --- a draft: partial, then edited with PUT until complete
        full = enterprise_application(contact, full_name="Ada Lovelace")
        draft = {"contact": {"full_name": "Ada Lovelace", "email": contact},
                 "gpus": [gpu_entry("h100-sxm-80gb", 8, 1024, 10, 10)]}
        r = ada.c.post(f"{API}/provider-applications", draft)
        self.assertStatus(r, 201)
        app_id = r.body["id"]
        self.assertEqual(r.body["status"], "draft")
        self.assertIsNone(r.body["submitted_at"])

        # A draft with something missing cannot be submitted; the error names the gaps.
        r = ada.c.post(f"{API}/provider-applications/{app_id}/submit")
        self.assertError(r, 422, fields=["infrastructure.ups", "infrastructure.commitment_months"])

        edit1 = copy.deepcopy(draft)
        edit1["gpus"].append(full["gpus"][1])
        r = ada.c.put(f"{API}/provider-applications/{app_id}", edit1)
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "draft")
        self.assertEqual(len(r.body["gpus"]), 2)

        r = ada.c.put(f"{API}/provider-applications/{app_id}", full)
        self.assertStatus(r, 200)
        self.assertEqual(len(r.body["gpus"]), 3)
        self.assertEqual(r.body["suggested_tier"], "enterprise")
        self.assertTrue(r.body["has_unlisted_models"])
        self.assertEqual(r.body["total_gpus"], 14)
        self.assertEqual(r.body["contact"]["email"], contact)
        self.assertEqual(r.body["gpus"][2]["model_other"], "NVIDIA B200 192GB")
        self.assertEqual(r.body["infrastructure"]["commitment_months"], 12)

        # No email for drafts.
        self.assertEqual(sink.for_addr(contact), [])

        # --- submit
        r = ada.c.post(f"{API}/provider-applications/{app_id}/submit")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "submitted")
        # Submitted: no more edits, no second submit.
        r = ada.c.put(f"{API}/provider-applications/{app_id}", full)
        self.assertError(r, 409)
        r = ada.c.post(f"{API}/provider-applications/{app_id}/submit")
        self.assertError(r, 409)
        # Nor a second application while this one is open.
        r = ada.c.post(f"{API}/provider-applications", full)
        self.assertError(r, 409)

        # --- the review queue
        item = self._queue_item(admin, app_id)
        self.assertEqual(item["suggested_tier"], "enterprise")
        self.assertIsInstance(item["age_business_days"], int)
        self.assertGreaterEqual(item["age_business_days"], 0)
        self.assertLessEqual(item["age_business_days"], 1)
        self.assertFalse(item["overdue"])
        self.assertEqual(item["status"], "submitted")
        self.assertEqual(item["user_id"], ada.id)

        # --- request_info with a message
        r = admin.c.post(f"{API}/provider-applications/{app_id}/decision",
                         {"decision": "request_info", "message": REVIEWER_MESSAGE})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "needs_info")
        self.assertIsNone(self._queue_item(admin, app_id, must=False))

        r = ada.c.get(f"{API}/provider-applications/{app_id}")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "needs_info")
        asked = [h for h in r.body["history"] if h["action"] == "request_info"]
        self.assertEqual(len(asked), 1, r.body["history"])
        self.assertEqual(asked[0]["message"], REVIEWER_MESSAGE)
        self.assertEqual(asked[0]["actor_id"], admin.id)
        self.assertEqual(asked[0]["from_status"], "submitted")
        self.assertEqual(asked[0]["to_status"], "needs_info")
        self.assertTrue(asked[0]["at"])

        # --- edit and resubmit
        edited = copy.deepcopy(full)
        edited["infrastructure"]["maintenance_notes"] = (
            "UPS: APC Symmetra PX 100 kW, 40 minutes at full load.\n"
            "2-hour window on the first Sunday of each month")
        r = ada.c.put(f"{API}/provider-applications/{app_id}", edited)
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "needs_info")
        r = ada.c.post(f"{API}/provider-applications/{app_id}/submit")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "submitted")
        item = self._queue_item(admin, app_id)
        self.assertEqual(item["suggested_tier"], "enterprise")

        # --- approve as Enterprise
        r = admin.c.post(f"{API}/provider-applications/{app_id}/decision",
                         {"decision": "approve", "tier": "enterprise"})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "approved")
        self.assertEqual(r.body["tier"], "enterprise")
        self.assertTrue(r.body["decided_at"])
        self.assertNotIn("gpx_a_", json.dumps(r.body), "the token is only for the applicant")
        # Decided: nothing more to decide, nothing to edit.
        r = admin.c.post(f"{API}/provider-applications/{app_id}/decision",
                         {"decision": "reject", "message": "changed my mind"})
        self.assertError(r, 409)
        r = ada.c.put(f"{API}/provider-applications/{app_id}", edited)
        self.assertError(r, 409)

        r = ada.c.get(f"{API}/provider-applications/{app_id}")
        actions = [h["action"] for h in r.body["history"]]
        self.assertEqual(actions, ["created", "updated", "updated", "submitted", "request_info",
                                   "updated", "resubmitted", "approve"])
        approve = r.body["history"][-1]
        self.assertEqual(approve["actor_id"], admin.id)
        self.assertEqual(approve["tier"], "enterprise")

        r = ada.c.get(f"{API}/me")
        self.assertStatus(r, 200)
        self.assertIn("provider", r.body["roles"])
        self.assertIn("customer", r.body["roles"])
        self.assertNotIn("admin", r.body["roles"])

        r = ada.c.get(f"{API}/providers/me")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["tier"], "enterprise")
        self.assertEqual(r.body["status"], "active")
        self.assertEqual(r.body["application_id"], app_id)
        # The operators' list of providers shows her, with no machine yet.
        listed = admin.c.get(f"{API}/admin/providers", query={"limit": "200"})
        self.assertStatus(listed, 200)
        mine = [p for p in listed.body["items"] if p["user_id"] == ada.id]
        self.assertEqual(len(mine), 1, listed.body)
        self.assertEqual({k: mine[0][k] for k in ("email", "name", "tier", "status", "application_id",
                                                  "machines", "machines_online", "gpus")},
                         {"email": ada.email, "name": ada.c.get(f"{API}/me").body["name"],
                          "tier": "enterprise",
                          "status": "active", "application_id": app_id, "machines": 0,
                          "machines_online": 0, "gpus": 0})
        self.assertEqual(mine[0]["commission_bps"], r.body["commission_bps"])
        self.assertError(ada.c.get(f"{API}/admin/providers"), 403)
        self.assertError(admin.c.get(f"{API}/admin/providers", query={"limit": "201"}), 422)

        r = ada.c.get(f"{API}/providers/me/agent-tokens")
        self.assertStatus(r, 200)
        tokens = r.body["items"]
        self.assertEqual(len(tokens), 1, tokens)
        first = tokens[0]
        self.assertTrue(first["active"])
        self.assertIsNone(first["revoked_at"])
        self.assertNotIn("token", first)
        self.assertNotIn("token_hash", first)

        # --- the emails, in order, all to the contact email: first only the link that
        # verifies it, the others held until it is opened
        first_mail = sink.wait_for_addr(contact, 1, timeout=15)
        self.assertEqual([m.subject for m in first_mail], [SUBJECT_VERIFY])
        self.assertIn("the gpunex account " + ada.email, first_mail[0].body)
        held = srv.backend.query("SELECT status FROM email_outbox WHERE to_addr = ? AND "
                                 "kind <> 'email.verify'", (contact,))
        self.assertEqual([r[0] for r in held], ["held"] * 4)
        time.sleep(0.5)
        self.assertEqual(len(sink.for_addr(contact)), 1, "only the link before verification")
        srv.verify_address(ada.id, contact)
        msgs = sink.wait_for_addr(contact, 5, timeout=15)[1:]
        self.assertEqual([m.subject for m in msgs],
                         [SUBJECT_SUBMITTED, SUBJECT_NEEDS_INFO, SUBJECT_RESUBMITTED,
                          SUBJECT_APPROVED])
        for m in msgs:
            self.assertEqual(m.rcpt_tos, [contact])
            self.assertRegex(m.message_id, r"^<eml_[0-9A-Z]+@gpunex\.test>$")
            self.assertIn(app_id, m.body)
        self.assertEqual(len({m.message_id for m in msgs}), 4)
        self.assertEqual([m.subject for m in sink.for_addr(ada.email)], [SUBJECT_VERIFY],
                         "only the sign-up's link goes to the login email")
        self.assertIn("Ada Lovelace", msgs[0].body)
        self.assertIn(REVIEWER_MESSAGE, msgs[1].body)
        approved = msgs[3]
        found = AGENT_TOKEN_RE.findall(approved.body)
        self.assertTrue(found, approved.body)
        token = found[0]
        self.assertTrue(all(t == token for t in found))
        self.assertIn(f"curl -fsSL {PUBLIC_URL}/agent/install.sh", approved.body)
        self.assertIn("Enterprise", approved.body)
        for m in msgs[:3]:
            self.assertNotIn("gpx_a_", m.body)

        # The token in the email is the stored one (only its hash is stored).
        self.assertEqual(first["prefix"], token[:len(first["prefix"])])
        rows = srv.backend.query("SELECT id, token_hash FROM agent_tokens")
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][0], first["id"])
        self.assertEqual(rows[0][1], sha256(token))
        # ... and is an agent credential only: refused on the REST API.
        r = srv.client(token).get(f"{API}/me")
        self.assertError(r, 401)

        # --- in-dashboard notifications: the same events, never the token
        r = ada.c.get(f"{API}/notifications")
        self.assertStatus(r, 200)
        kinds = [n["kind"] for n in r.body["items"]]
        self.assertEqual(kinds, ["application.approved", "application.resubmitted",
                                 "application.needs_info", "application.submitted"])
        self.assertEqual(r.body["unread_count"], 4)
        needs = r.body["items"][2]
        self.assertIn(REVIEWER_MESSAGE, needs["body"])
        self.assertNotIn(token, r.raw.decode())
        self.assertNotIn("gpx_a_", r.raw.decode())
        for n in r.body["items"]:
            self.assertIn(app_id, n["link"] or "")

        # --- the outbox keeps no body once sent, and the token is nowhere at rest
        self._wait_outbox_sent(contact, 5)
        rows = srv.backend.query(
            "SELECT status, CASE WHEN body IS NULL THEN 1 ELSE 0 END, message_id "
            "FROM email_outbox WHERE to_addr = ? AND kind <> 'email.verify'", (contact,))
        self.assertEqual(len(rows), 4)
        for status, body_is_null, message_id in rows:
            self.assertEqual(status, "sent")
            self.assertEqual(body_is_null, 1, "the body of a sent email must be scrubbed")
        self.assertEqual(sorted(r[2] for r in rows), sorted(m.message_id for m in msgs))
        self._assert_secret_not_stored(token)

        # --- more tokens: create, rotate, revoke
        r = ada.c.post(f"{API}/providers/me/agent-tokens", {"name": "rack 2"})
        self.assertStatus(r, 201)
        second = r.body
        self.assertRegex(second["token"], AGENT_TOKEN_RE)
        self.assertNotEqual(second["token"], token)
        self.assertEqual(second["name"], "rack 2")
        self.assertTrue(second["active"])
        self.assertIn(f"curl -fsSL {PUBLIC_URL}/agent/install.sh", second["install_command"])
        self.assertIn(second["token"], second["install_command"])
        states = self._token_states(ada)
        self.assertEqual(states, {first["id"]: (True, None), second["id"]: (True, None)})

        r = ada.c.post(f"{API}/providers/me/agent-tokens/{first['id']}/rotate")
        self.assertStatus(r, 201)
        rotated = r.body
        self.assertRegex(rotated["token"], AGENT_TOKEN_RE)
        self.assertNotIn(rotated["token"], (token, second["token"]))
        self.assertEqual(rotated["name"], first["name"])
        states = self._token_states(ada)
        self.assertEqual(states, {first["id"]: (False, rotated["id"]),
                                  second["id"]: (True, None),
                                  rotated["id"]: (True, None)})

        r = ada.c.delete(f"{API}/providers/me/agent-tokens/{second['id']}")
        self.assertStatus(r, 204)
        states = self._token_states(ada)
        self.assertEqual(states, {first["id"]: (False, rotated["id"]),
                                  second["id"]: (False, None),
                                  rotated["id"]: (True, None)})
        # Revoked tokens cannot be revoked or rotated again.
        self.assertError(ada.c.delete(f"{API}/providers/me/agent-tokens/{second['id']}"), 404)
        self.assertError(ada.c.post(f"{API}/providers/me/agent-tokens/{first['id']}/rotate"),
                         404)
        self.assertError(ada.c.delete(f"{API}/providers/me/agent-tokens/atk_nosuchtoken"), 404)
        for t in (second["token"], rotated["token"]):
            self._assert_secret_not_stored(t)

        # Token operations send no email and add no notification about tokens.
        self.assertEqual(len(sink.for_addr(contact)), 5)
        self.assertNotIn("gpx_a_", ada.c.get(f"{API}/notifications").raw.decode())

    def test_reject_path(self):
        srv, sink = self.srv, self.sink
        admin = srv.admin()
        bob = srv.user("Bob Builder")
        contact = unique_email("bob-contact")
        body = community_application(contact)
        body["submit"] = True
        r = bob.c.post(f"{API}/provider-applications", body)
        self.assertStatus(r, 201)
        self.assertEqual(r.body["status"], "submitted")
        app_id = r.body["id"]
        item = self._queue_item(admin, app_id)
        self.assertEqual(item["suggested_tier"], "community")

        # Enterprise needs a UPS: refused, nothing changes.
        r = admin.c.post(f"{API}/provider-applications/{app_id}/decision",
                         {"decision": "approve", "tier": "enterprise"})
        self.assertError(r, 422, fields=["tier"])
        self.assertEqual(bob.c.get(f"{API}/provider-applications/{app_id}").body["status"],
                         "submitted")

        r = admin.c.post(f"{API}/provider-applications/{app_id}/decision",
                         {"decision": "reject", "message": REJECT_REASON})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"], "rejected")
        self.assertIsNone(r.body["tier"])

        r = bob.c.get(f"{API}/provider-applications/{app_id}")
        self.assertEqual(r.body["status"], "rejected")
        rejected = [h for h in r.body["history"] if h["action"] == "reject"]
        self.assertEqual(len(rejected), 1)
        self.assertEqual(rejected[0]["message"], REJECT_REASON)
        self.assertEqual(rejected[0]["actor_id"], admin.id)

        # The link is opened once it has arrived, as a person would: a link opened before
        # the outbox sent it makes the address verified and the link is then never sent.
        sink.wait_for_addr(contact, 1, timeout=15)
        srv.verify_address(bob.id, contact)
        msgs = sink.wait_for_addr(contact, 3, timeout=15)
        self.assertEqual([m.subject for m in msgs],
                         [SUBJECT_VERIFY, SUBJECT_SUBMITTED, SUBJECT_REJECTED])
        msgs = msgs[1:]
        self.assertIn(REJECT_REASON, msgs[1].body)
        self.assertNotIn("gpx_a_", msgs[1].body)

        r = bob.c.get(f"{API}/notifications")
        self.assertEqual([n["kind"] for n in r.body["items"]],
                         ["application.rejected", "application.submitted"])
        self.assertIn(REJECT_REASON, r.body["items"][0]["body"])

        r = bob.c.get(f"{API}/me")
        self.assertNotIn("provider", r.body["roles"])
        self.assertError(bob.c.get(f"{API}/providers/me"), 403)
        self.assertError(bob.c.get(f"{API}/providers/me/agent-tokens"), 403)
        self.assertEqual(srv.backend.query("SELECT COUNT(*) FROM agent_tokens")[0][0], 0)
        self.assertEqual(srv.backend.query("SELECT COUNT(*) FROM providers")[0][0], 0)

        # A rejected applicant may apply again.
        r = bob.c.post(f"{API}/provider-applications", community_application(contact))
        self.assertStatus(r, 201)
        self.assertEqual(r.body["status"], "draft")

        self._wait_outbox_sent(contact, 3)

    def test_cookie_session_and_csrf(self):
        srv = self.srv
        u = srv.user("Cora Cookie")
        r = srv.login(u.email)
        cookies = r.header_all("Set-Cookie")
        session = [c for c in cookies if c.startswith("gpunex_session=")]
        self.assertEqual(len(session), 1, cookies)
        attrs = [a.strip().lower() for a in session[0].split(";")]
        self.assertIn("httponly", attrs)
        self.assertIn("samesite=strict", attrs)
        self.assertIn("secure", attrs, "the public URL is https: the cookie must be Secure")
        self.assertIn("path=/", attrs)
        session_value = session[0].split(";")[0].split("=", 1)[1]
        self.assertEqual(session_value, r.body["token"])
        csrf = r.body["csrf_token"]
        self.assertTrue(csrf)
        self.assertEqual(r.body["csrf_header"], "X-CSRF-Token")
        csrf_cookie = [c for c in cookies if c.startswith("gpunex_csrf=")]
        self.assertEqual(len(csrf_cookie), 1, cookies)
        self.assertNotIn("httponly", [a.strip().lower() for a in csrf_cookie[0].split(";")])

        anon = srv.client()
        jar = {"Cookie": f"gpunex_session={session_value}; gpunex_csrf={csrf}"}
        # Reads need no CSRF header.
        r = anon.get(f"{API}/me", headers=jar)
        self.assertStatus(r, 200)
        self.assertEqual(r.body["email"], u.email)
        # A state-changing request without the header, or with a wrong one: 403.
        r = anon.post(f"{API}/api-keys", {"name": "cli"}, headers=jar)
        self.assertError(r, 403)
        r = anon.post(f"{API}/api-keys", {"name": "cli"},
                      headers={**jar, "X-CSRF-Token": "csrf_wrong" + csrf[10:]})
        self.assertError(r, 403)
        r = anon.post(f"{API}/provider-applications",
                      {"contact": {"full_name": "Cora"}}, headers=jar)
        self.assertError(r, 403)
        self.assertEqual(srv.backend.query(
            "SELECT COUNT(*) FROM api_keys WHERE user_id = ?", (u.id,))[0][0], 0)
        self.assertEqual(srv.backend.query(
            "SELECT COUNT(*) FROM provider_applications WHERE user_id = ?", (u.id,))[0][0], 0)
        # With it: OK.
        r = anon.post(f"{API}/api-keys", {"name": "cli"}, headers={**jar, "X-CSRF-Token": csrf})
        self.assertStatus(r, 201)
        key = r.body["key"]
        self.assertTrue(key.startswith("gpx_k_"))
        # The API key works as a bearer token, but not as a cookie.
        r = srv.client(key).get(f"{API}/me")
        self.assertStatus(r, 200)
        r = anon.get(f"{API}/me", headers={"Cookie": f"gpunex_session={key}"})
        self.assertError(r, 401)
        # Bearer-authenticated writes need no CSRF header.
        r = u.c.post(f"{API}/api-keys", {"name": "bearer"})
        self.assertStatus(r, 201)
        # Logging out through the cookie ends the session.
        r = anon.post(f"{API}/auth/logout", headers=jar)
        self.assertError(r, 403)
        r = anon.post(f"{API}/auth/logout", headers={**jar, "X-CSRF-Token": csrf})
        self.assertStatus(r, 204)
        cleared = [c for c in r.header_all("Set-Cookie") if c.startswith("gpunex_session=")]
        self.assertTrue(cleared and "max-age=0" in cleared[0].lower(), r.headers)
        self.assertError(anon.get(f"{API}/me", headers=jar), 401)
        self.assertError(srv.client(session_value).get(f"{API}/me"), 401)
        # The other session (bearer) lives on.
        self.assertStatus(u.c.get(f"{API}/me"), 200)

    # -- helpers

    def _queue_item(self, admin, app_id, must=True):
        r = admin.c.get(f"{API}/provider-applications", query={"status": "submitted"})
        self.assertStatus(r, 200)
        for it in r.body["items"]:
            self.assertEqual(it["status"], "submitted")
            self.assertIn("age_business_days", it)
            self.assertIn("suggested_tier", it)
        items = [it for it in r.body["items"] if it["id"] == app_id]
        if must:
            self.assertEqual(len(items), 1, r.body)
            return items[0]
        return items[0] if items else None

    def _token_states(self, user):
        r = user.c.get(f"{API}/providers/me/agent-tokens")
        self.assertStatus(r, 200)
        for t in r.body["items"]:
            self.assertEqual(t["active"], t["revoked_at"] is None)
            self.assertNotIn("token", t)
        return {t["id"]: (t["active"], t["replaced_by"]) for t in r.body["items"]}

    def _wait_outbox_sent(self, to_addr, count, timeout=10):
        import time
        deadline = time.monotonic() + timeout
        while True:
            rows = self.srv.backend.query(
                "SELECT status FROM email_outbox WHERE to_addr = ?", (to_addr,))
            if len(rows) == count and all(r[0] == "sent" for r in rows):
                return
            if time.monotonic() > deadline:
                self.fail(f"outbox rows for {to_addr} not all sent: {rows}")
            time.sleep(0.1)

    def _assert_secret_not_stored(self, secret):
        """The secret appears in no column of any table (hashes only)."""
        for table in self.srv.backend.tables():
            for row in self.srv.backend.query(f"SELECT * FROM {table}"):
                for cell in row:
                    self.assertNotIn(secret, str(cell), f"secret stored in {table}")


class FullPathSqliteTest(FullPathMixin, ServerTestCase):
    BACKEND = "sqlite"


class FullPathPostgresTest(FullPathMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
