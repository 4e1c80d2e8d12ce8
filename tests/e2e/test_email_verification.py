"""Email addresses are verified before gpunex mails them, sign-up does not tell which
addresses have accounts, and weak passwords are refused (the hardening issue, items 5-7).

- A contact email that differs from the account's gets nothing but the link that verifies
  it; opening the link (taken from the email the SMTP sink received) sends what waited.
- An account's own address is verified the same way; until then its emails wait, /me says
  so and /me/emails lists what waits. Log-in and drafting do not wait for it.
- Links are signed and expire: a changed or expired one is refused naming `token`; a new
  one can be asked for, not more often than every 10 minutes.
- A sign-up with a taken address is answered exactly as a new one; the owner gets an email
  and the account is unchanged.
- Passwords made of the email or name, common ones and repetitive ones are refused, and
  invisible characters are taken out of names.
"""

import re
import time
import unittest
import urllib.parse

from harness import API, PASSWORD, PUBLIC_URL, ServerTestCase, community_application, unique_email

LINK_RE = re.compile(re.escape(PUBLIC_URL) + r"/#/verify-email\?token=([A-Za-z0-9_\-.]+)")
SUBJECT_VERIFY = "gpunex: confirm your email address"
SUBJECT_SUBMITTED = "gpunex: your provider application was received"


class EmailVerificationTest(ServerTestCase):

    def link_token(self, address, count=1):
        """The token of the latest verification link the sink received for `address`."""
        msgs = [m for m in self.sink.wait_for_addr(address, count, timeout=15)
                if m.subject == SUBJECT_VERIFY]
        self.assertTrue(msgs, f"no verification email to {address}")
        found = LINK_RE.search(msgs[-1].body)
        self.assertTrue(found, msgs[-1].body)
        return urllib.parse.unquote(found.group(1))

    def test_a_contact_email_gets_only_its_link_until_verified(self):
        ada = self.srv.user("Ada Lovelace")  # its own address verified (harness)
        contact = unique_email("ada-contact")
        body = community_application(contact)
        body["submit"] = True
        r = ada.c.post(f"{API}/provider-applications", body)
        self.assertStatus(r, 201)

        # Only the link reaches the contact address; the confirmation of receipt waits.
        token = self.link_token(contact)
        time.sleep(1.0)  # two more outbox passes
        self.assertEqual([m.subject for m in self.sink.for_addr(contact)], [SUBJECT_VERIFY])
        r = ada.c.get(f"{API}/me/emails")
        self.assertStatus(r, 200)
        by_email = {i["email"]: i for i in r.body["items"]}
        self.assertTrue(by_email[ada.email]["account"])
        self.assertTrue(by_email[ada.email]["verified"])
        self.assertFalse(by_email[contact]["account"])
        self.assertFalse(by_email[contact]["verified"])
        self.assertEqual(by_email[contact]["waiting_emails"], 1)
        self.assertEqual(r.body["items"][0]["email"], ada.email, "the account's own first")

        # The contact's owner opens the link, logged in or not: what waited is sent.
        r = self.srv.client().post(f"{API}/auth/verify-email", {"token": token})
        self.assertStatus(r, 200)
        self.assertEqual(r.body, {"email": contact, "verified": True, "already_verified": False,
                                  "released_emails": 1})
        msgs = self.sink.wait_for_addr(contact, 2, timeout=15)
        self.assertEqual([m.subject for m in msgs], [SUBJECT_VERIFY, SUBJECT_SUBMITTED])
        # Opening it again changes nothing.
        r = self.srv.client().post(f"{API}/auth/verify-email", {"token": token})
        self.assertStatus(r, 200)
        self.assertTrue(r.body["already_verified"])
        self.assertEqual(r.body["released_emails"], 0)
        by_email = {i["email"]: i for i in ada.c.get(f"{API}/me/emails").body["items"]}
        self.assertTrue(by_email[contact]["verified"])
        self.assertEqual(by_email[contact]["waiting_emails"], 0)

    def test_an_unverified_account_logs_in_and_drafts_but_its_mail_waits(self):
        email = unique_email("una")
        self.srv.signup(email, name="Una Verified", verify=False)
        una_token = self.srv.login(email).body["token"]
        una = self.srv.client(una_token)
        me = una.get(f"{API}/me")
        self.assertStatus(me, 200)
        self.assertFalse(me.body["email_verified"])
        # Drafting does not wait; submitting with the account's own address as contact
        # queues a confirmation that waits for the verification.
        r = una.post(f"{API}/provider-applications", community_application(email))
        self.assertStatus(r, 201)
        r = una.post(f"{API}/provider-applications/{r.body['id']}/submit")
        self.assertStatus(r, 200)
        token = self.link_token(email)
        time.sleep(1.0)
        self.assertEqual([m.subject for m in self.sink.for_addr(email)], [SUBJECT_VERIFY])
        items = una.get(f"{API}/me/emails").body["items"]
        self.assertEqual(len(items), 1)
        self.assertEqual(items[0]["email"], email)
        self.assertFalse(items[0]["verified"])
        self.assertEqual(items[0]["waiting_emails"], 1)
        self.assertIsNotNone(items[0]["last_link_at"])

        # A new link is not sent within 10 minutes of the last.
        r = una.post(f"{API}/me/emails/resend", {"email": email})
        self.assertError(r, 429)
        self.assertTrue(1 <= int(r.header("Retry-After")) <= 600, r.header("Retry-After"))
        # Only the user's own recorded addresses.
        self.assertError(una.post(f"{API}/me/emails/resend", {"email": "x@example.com"}), 404)
        self.assertError(una.post(f"{API}/me/emails/resend", {"email": ""}), 422,
                         fields=["email"])
        self.assertError(una.post(f"{API}/me/emails/resend", {"email": email, "x": 1}), 422,
                         fields=["x"])

        # Bad links are refused naming the token, and change nothing.
        payload, mac = token.split(".")
        forged = self.srv.verification_token("usr_01FORGED00000000000000000", email)
        for bad in (payload + "." + mac[:-2] + ("AA" if not mac.endswith("AA") else "BB"),
                    payload, "", "not-a-token", forged.split(".")[0] + "." + mac):
            r = self.srv.client().post(f"{API}/auth/verify-email", {"token": bad})
            self.assertError(r, 422, fields=["token"], msg=bad)
        expired = self.srv.verification_token(me.body["id"], email, expires=int(time.time()) - 1)
        r = self.srv.client().post(f"{API}/auth/verify-email", {"token": expired})
        self.assertError(r, 422, fields=["token"])
        self.assertIn("expired", r.body["error"]["fields"]["token"])
        self.assertFalse(una.get(f"{API}/me").body["email_verified"])

        r = self.srv.client().post(f"{API}/auth/verify-email", {"token": token})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["released_emails"], 1)
        self.assertTrue(una.get(f"{API}/me").body["email_verified"])
        msgs = self.sink.wait_for_addr(email, 2, timeout=15)
        self.assertEqual([m.subject for m in msgs], [SUBJECT_VERIFY, SUBJECT_SUBMITTED])
        self.assertError(una.post(f"{API}/me/emails/resend", {"email": email}), 409)

    def test_sign_up_does_not_tell_which_addresses_have_accounts(self):
        owner_email = unique_email("owner")
        owner = self.srv.signup(owner_email, name="Olive Owner")
        fresh_email = unique_email("fresh")

        def attempt(email):
            return self.srv.client().post(f"{API}/auth/signup", {
                "email": email, "password": "another-long-password", "name": "Mallory"})
        taken, fresh = attempt(owner_email), attempt(fresh_email)
        self.assertEqual(taken.status, 201)
        self.assertEqual(fresh.status, 201)
        self.assertEqual(set(taken.body["user"]), set(fresh.body["user"]))
        self.assertEqual(taken.body["user"]["roles"], fresh.body["user"]["roles"])
        self.assertEqual(taken.body["user"]["name"], "Mallory")
        self.assertNotEqual(taken.body["user"]["id"], owner["id"])
        self.assertEqual(taken.header("Content-Type"), fresh.header("Content-Type"))
        # No second account, and the owner's password is the one that logs in.
        self.assertEqual(self.srv.backend.query(
            "SELECT COUNT(*) FROM users WHERE email = ?", (owner_email,))[0][0], 1)
        self.assertEqual(self.srv.client().post(f"{API}/auth/login", {
            "email": owner_email, "password": "another-long-password"}).status, 401)
        self.srv.login(owner_email)
        # The owner is told.
        msgs = self.sink.wait_for_addr(owner_email, 2, timeout=15)
        told = [m for m in msgs if m.subject == "gpunex: a sign-up with your email address"]
        self.assertEqual(len(told), 1, [m.subject for m in msgs])
        self.assertIn(PUBLIC_URL + "/#/login", told[0].body)
        self.assertNotIn("Mallory", told[0].body, "nothing the stranger typed")

    def test_weak_passwords_are_refused_and_names_cleaned(self):
        c = self.srv.client()
        email = unique_email("wanda")
        cases = [
            ("aaaaaaaaaa", "uses too few different characters"),
            (email, "must not be based on your email address or name"),
            ("WandaWeak2024", "must not be based on your email address or name"),
            ("Password123!", "is one of the most common passwords"),
            ("qwertyuiop", "is one of the most common passwords"),
            ("short", "must be at least 10 characters"),
        ]
        for password, message in cases:
            r = c.post(f"{API}/auth/signup",
                       {"email": email, "password": password, "name": "Wanda Weak"})
            self.assertError(r, 422, fields=["password"], msg=password)
            self.assertIn(message, r.body["error"]["fields"]["password"], password)
        self.assertEqual(self.srv.backend.query(
            "SELECT COUNT(*) FROM users WHERE email = ?", (email,))[0][0], 0)
        # Bidirectional overrides and zero-width characters are taken out of the name.
        r = c.post(f"{API}/auth/signup", {"email": email, "password": PASSWORD,
                                          "name": "Wanda\u202e\u200b Weak\u2066\u2069"})
        self.assertStatus(r, 201)
        self.assertEqual(r.body["user"]["name"], "Wanda Weak")
        self.assertEqual(self.srv.backend.query(
            "SELECT name FROM users WHERE email = ?", (email,))[0][0], "Wanda Weak")
        # A password change follows the same rules.
        token = self.srv.login(email).body["token"]
        r = self.srv.client(token).post(f"{API}/me/password", {
            "current_password": PASSWORD, "new_password": "WandaWeak!!"})
        self.assertError(r, 422, fields=["new_password"])


if __name__ == "__main__":
    unittest.main()
