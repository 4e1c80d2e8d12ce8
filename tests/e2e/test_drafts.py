"""Drafts of every shape read back as saved (issue 10, the draft bug).

Release 0.1 stored a draft saved without a contact email (the form sends "email": null
for a blank field; `POST /provider-applications {}` leaves it out too) or without a GPU
location's country with "" in their place, and then re-validated what it read back: the
applicant got 500 on GET and PUT and 409 on a new POST, stuck for good, and the admin's
unfiltered, ?status=draft and ?limit=200 lists answered 500 for everybody.

Here, at the API level: each such draft answers 200 on GET and PUT with what was saved
(absent stays absent or null, never ""), a second POST is refused with 409 as for any open
application, the admin's lists answer 200 and hold them, and the applicant can still
complete and submit the draft.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import copy
import unittest

from harness import API, ServerTestCase, enterprise_application, gpu_entry, unique_email

APPS = f"{API}/provider-applications"
FORM_FIELDS = ("contact", "gpus", "infrastructure")
# Values that, when not saved, must read back absent or null: "" is what release 0.1
# stored for them, and what no longer validated.
NEVER_EMPTY_STRING = ("email", "country")


def _empty(v):
    """Nothing saved: None, "", [] or an object of empty values."""
    if v is None or v == "" or v == []:
        return True
    if isinstance(v, dict):
        return all(_empty(x) for x in v.values())
    return False


def _has_empty_string(v):
    if isinstance(v, dict):
        return any((k in NEVER_EMPTY_STRING and x == "") or _has_empty_string(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_empty_string(x) for x in v)
    return False


def read_back_mismatches(saved, got, path="(form)"):
    """Where `got` differs from what was `saved`: saved values equal, saved nulls null or
    absent, and what was not saved empty - an email or a country null or absent."""
    if saved is None:
        return [] if got is None else [f"{path}: saved null, reads back {got!r}"]
    if isinstance(saved, dict):
        got = {} if got is None else got
        if not isinstance(got, dict):
            return [f"{path}: saved an object, reads back {got!r}"]
        out = []
        for k in sorted(set(saved) | set(got)):
            sub = f"{path}.{k}"
            if k in saved:
                out += read_back_mismatches(saved[k], got.get(k), sub)
            elif k in NEVER_EMPTY_STRING and got.get(k) is not None:
                out.append(f"{sub}: not saved, reads back {got[k]!r} (must be null or absent)")
            elif not _empty(got.get(k)) or _has_empty_string(got.get(k)):
                out.append(f"{sub}: not saved, reads back {got[k]!r}")
        return out
    if isinstance(saved, list):
        if not isinstance(got, list) or len(got) != len(saved):
            return [f"{path}: saved {saved!r}, reads back {got!r}"]
        out = []
        for i, (s, g) in enumerate(zip(saved, got)):
            out += read_back_mismatches(s, g, f"{path}[{i}]")
        return out
    if isinstance(saved, bool) or isinstance(got, bool):
        ok = type(saved) is type(got) and saved == got
    elif isinstance(saved, (int, float)) and isinstance(got, (int, float)):
        ok = abs(saved - got) <= 1e-9 * max(1.0, abs(saved))
    else:
        ok = saved == got
    return [] if ok else [f"{path}: saved {saved!r}, reads back {got!r}"]


def null_email_draft():
    """What the dashboard's form sends with the email field left blank."""
    return {"contact": {"full_name": "Nell Null", "email": None, "company": "Null & Void Ltd"},
            "gpus": [gpu_entry("rtx4090-24gb", 2, 64, 1, 1, city="Vienna", country="AT",
                               region="eu-central")]}


def no_country_draft(email):
    g = gpu_entry("a100-pcie-80gb", 4, 512, 2, 2)
    g["location"] = {"city": "Milan"}
    return {"contact": {"full_name": "Milo Milan", "email": email, "company": "Navigli GPU"},
            "gpus": [g], "infrastructure": {"ups": True, "commitment_months": 6}}


class DraftsMixin:

    def _form(self, body):
        return {k: body.get(k) for k in FORM_FIELDS}

    def assertReadsBack(self, saved, answer, msg=""):
        saved_form = {k: v for k, v in saved.items() if k in FORM_FIELDS}
        got = {k: v for k, v in self._form(answer).items() if v is not None or k in saved_form}
        self.assertEqual(read_back_mismatches(saved_form, got), [], f"{msg}: {answer!r}")

    def _draft_round_trip(self, owner, body, what):
        """Saves `body` as a draft and checks GET, PUT and a second POST; returns the id."""
        r = owner.c.post(APPS, body)
        self.assertStatus(r, 201, what)
        self.assertEqual(r.body["status"], "draft")
        app_id = r.body["id"]
        self.assertReadsBack(body, r.body, f"{what}: POST answer")

        r = owner.c.get(f"{APPS}/{app_id}")
        self.assertStatus(r, 200, f"{what}: GET")
        self.assertReadsBack(body, r.body, f"{what}: GET")
        self.assertEqual(r.body["status"], "draft")
        self.assertEqual([h["action"] for h in r.body["history"]], ["created"])

        r = owner.c.put(f"{APPS}/{app_id}", body)
        self.assertStatus(r, 200, f"{what}: PUT")
        self.assertReadsBack(body, r.body, f"{what}: PUT answer")
        r = owner.c.get(f"{APPS}/{app_id}")
        self.assertStatus(r, 200, f"{what}: GET after PUT")
        self.assertReadsBack(body, r.body, f"{what}: GET after PUT")

        r = owner.c.post(APPS, body)
        err = self.assertError(r, 409, msg=f"{what}: second POST")
        self.assertIn("already have an open application", err["message"])
        self.assertIn(app_id, err["message"])
        return app_id

    def _admin_lists(self, admin, ids):
        for query in ({}, {"status": "draft"}, {"limit": "200"}, {"status": "draft", "limit": "200"}):
            with self.subTest(query=query):
                r = admin.c.get(APPS, query=query)
                self.assertStatus(r, 200, f"admin list {query}")
                listed = {item["id"]: item for item in r.body["items"]}
                for app_id, body in ids.items():
                    self.assertIn(app_id, listed, f"admin list {query}")
                    self.assertReadsBack(body, listed[app_id], f"admin list {query}, {app_id}")
                    self.assertNotIn("history", listed[app_id])

    def test_empty_body(self):
        admin = self.srv.admin()
        owner = self.srv.user("Emma Empty")
        app_id = self._draft_round_trip(owner, {}, "POST {}")
        r = owner.c.get(f"{APPS}/{app_id}")
        self.assertIsNone(r.body["contact"]["email"])
        self.assertEqual(r.body["gpus"], [])
        self.assertIsNone(r.body["submitted_at"])
        self.assertIsNone(r.body["age_business_days"])
        self._admin_lists(admin, {app_id: {}})

    def test_null_email(self):
        admin = self.srv.admin()
        owner = self.srv.user("Nell Null")
        body = null_email_draft()
        app_id = self._draft_round_trip(owner, body, "email null")
        r = owner.c.get(f"{APPS}/{app_id}")
        self.assertIsNone(r.body["contact"]["email"])
        self.assertEqual(r.body["contact"]["full_name"], "Nell Null")
        self.assertEqual(r.body["gpus"][0]["location"]["country"], "AT")
        self._admin_lists(admin, {app_id: body})
        # The owner's own list too.
        r = owner.c.get(APPS)
        self.assertStatus(r, 200)
        self.assertEqual([i["id"] for i in r.body["items"]], [app_id])

    def test_location_without_country(self):
        admin = self.srv.admin()
        owner = self.srv.user("Milo Milan")
        body = no_country_draft(unique_email("milo"))
        app_id = self._draft_round_trip(owner, body, "location without country")
        r = owner.c.get(f"{APPS}/{app_id}")
        loc = r.body["gpus"][0]["location"]
        self.assertEqual(loc["city"], "Milan")
        self.assertIsNone(loc["country"])
        self.assertIsNone(loc["region"])
        self._admin_lists(admin, {app_id: body})

    def test_all_three_in_one_list_and_none_is_stuck(self):
        admin = self.srv.admin()
        drafts = {}
        owners = {}
        for name, body in (("Emma Empty", {}), ("Nell Null", null_email_draft()),
                           ("Milo Milan", no_country_draft(unique_email("milo")))):
            u = self.srv.user(name)
            r = u.c.post(APPS, body)
            self.assertStatus(r, 201, name)
            drafts[r.body["id"]] = body
            owners[r.body["id"]] = u
        self._admin_lists(admin, drafts)

        # Submitting an incomplete draft names what is missing (not a 500) ...
        for app_id, u in owners.items():
            r = u.c.post(f"{APPS}/{app_id}/submit")
            err = self.assertError(r, 422, msg=f"submit {app_id}")
            self.assertIsInstance(err.get("fields"), dict)
        nell = next(i for i, b in drafts.items() if b and b["contact"]["full_name"] == "Nell Null")
        r = owners[nell].c.post(f"{APPS}/{nell}/submit")
        self.assertIn("contact.email", r.body["error"]["fields"])

        # ... and each draft can be completed and submitted.
        for app_id, u in owners.items():
            full = enterprise_application(unique_email("done"))
            r = u.c.put(f"{APPS}/{app_id}", full)
            self.assertStatus(r, 200, f"complete {app_id}")
            r = u.c.post(f"{APPS}/{app_id}/submit")
            self.assertStatus(r, 200, f"submit {app_id}")
            self.assertEqual(r.body["status"], "submitted")
        r = admin.c.get(APPS, query={"status": "submitted"})
        self.assertStatus(r, 200)
        self.assertEqual({i["id"] for i in r.body["items"]}, set(owners))

    def test_a_corrupt_row_cannot_fail_a_list(self):
        """One stored application that cannot be read (its document is not JSON) is
        skipped by lists, logged and counted in /metrics; everyone else's lists answer."""
        admin = self.srv.admin()
        good = self.srv.user("Gina Good")
        r = good.c.post(APPS, null_email_draft())
        self.assertStatus(r, 201)
        good_id = r.body["id"]
        bad = self.srv.user("Bert Broken")
        r = bad.c.post(APPS, {})
        self.assertStatus(r, 201)
        broken_id = r.body["id"]
        self.srv.backend.query("UPDATE provider_applications SET body = ? WHERE id = ?",
                               ("{not json", broken_id))
        for query in ({}, {"status": "draft"}, {"limit": "200"}):
            r = admin.c.get(APPS, query=query)
            self.assertStatus(r, 200, f"admin list {query}")
            ids = [i["id"] for i in r.body["items"]]
            self.assertIn(good_id, ids)
            self.assertNotIn(broken_id, ids)
        r = good.c.get(APPS)
        self.assertStatus(r, 200)
        self.assertEqual([i["id"] for i in r.body["items"]], [good_id])
        metrics = self.srv.client().get("/metrics").raw.decode()
        line = [l for l in metrics.splitlines() if l.startswith("gpunex_unreadable_application_rows ")]
        self.assertEqual(len(line), 1, metrics[-2000:])
        self.assertGreaterEqual(float(line[0].split()[1]), 1)
        self.assertIn("applications.unreadable_row", self.srv.logs())

    def test_blank_email_is_still_refused(self):
        """Absent is fine in a draft; a present but invalid value is not."""
        owner = self.srv.user("Bea Blank")
        body = copy.deepcopy(null_email_draft())
        body["contact"]["email"] = ""
        self.assertError(owner.c.post(APPS, body), 422, fields=["contact.email"])
        g = no_country_draft(unique_email("x"))
        g["gpus"][0]["location"]["country"] = ""
        self.assertError(owner.c.post(APPS, g), 422, fields=["gpus[0].location.country"])
        r = owner.c.get(APPS)
        self.assertStatus(r, 200)
        self.assertEqual(r.body["items"], [])

    def test_every_bad_field_is_named_at_once(self):
        """Type errors and value errors in one answer (decoding and the domain's checks)."""
        owner = self.srv.user("Tom Types")
        body = enterprise_application(unique_email("tom"))
        body["gpus"][0]["quantity"] = "eight"              # a type error
        body["gpus"][1]["location"]["country"] = "XX"      # a value error
        body["gpus"][2] = "h100"                           # not an object
        body["infrastructure"]["commitment_months"] = 7    # a value error
        r = owner.c.post(APPS, body)
        err = self.assertError(r, 422, fields=["gpus[0].quantity", "gpus[1].location.country", "gpus[2]",
                                                "infrastructure.commitment_months"])
        self.assertEqual(len(err["fields"]), 4, err)


class DraftsSqliteTest(DraftsMixin, ServerTestCase):
    BACKEND = "sqlite"


class DraftsPostgresTest(DraftsMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
