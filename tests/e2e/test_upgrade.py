"""Upgrade from release 0.1 (UPG): the database release 0.1 wrote reads back.

upgrade/release-0.1.sql is a SQLite database written by release 0.1 of gpunexd (every
table: accounts, applications in every status, providers, agent tokens, machines with
emulated GPUs, telemetry, benchmarks, workloads and logs, notifications, the outbox), and
upgrade/release-0.1-answers.json the answers release 0.1 gave to a fixed list of GET
requests on it (see upgrade/README.md; upgrade/make_fixture.py made both).

This loads the SQL into a fresh data directory, starts the gpunexd under test ($GPUNEXD)
on it (so it migrates the schema), logs in again with the same credentials (passwords, API
keys) and replays every request:

- an answer that was 2xx: the same status, and every field of the old body is present with
  an equal value (new fields may be added; lists item by item, same length), less the
  volatile fields listed in upgrade/README.md (the answers file's "volatile");
- an answer that was 4xx: the same status and error code;
- an answer that was 500 (the three drafts release 0.1 stored badly, and the lists they
  broke): now 200, each broken draft reads back with exactly what was saved (`{}` → an
  empty draft; "email": null → no email, not ""; a location without country → no
  country), and each list holds the applications the database has, in order, the other
  ones as release 0.1 showed them by id.

Also: the schema version is higher than the fixture's (the new release adds migrations)
and /readyz answers 200.

SQLite only (the fixture is a SQLite file).
"""

import datetime
import json
import math
import os
import re
import sqlite3
import unittest

from harness import API, Gpunexd, wait_until
from test_agent_channel import L4
from upgrade.make_fixture import make_agent
from upgrade.volatility import is_volatile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE_DIR = os.path.join(HERE, "upgrade")
SQL_PATH = os.path.join(FIXTURE_DIR, "release-0.1.sql")
ANSWERS_PATH = os.path.join(FIXTURE_DIR, "release-0.1-answers.json")
README_PATH = os.path.join(FIXTURE_DIR, "README.md")

# Fields whose meaning release 0.2 changed on purpose: they are not compared for
# equality but checked for their new meaning (test_what_changed_on_purpose):
# - a GPU's `listed` / `delisted_reason` come from the one listing decision, which now
#   counts an offline machine (after a restart, every machine is offline until its agent
#   says hello) and a GPU model without a price (release 0.1 had no prices, so after the
#   upgrade no GPU has one: "no_price_set" once its machine is back, until its provider
#   sets a price; test_upgraded_gpus_are_listed_once_priced);
# - a list that reached its end has `next_cursor` null (benchmark runs said "");
# - a workload log's position is an opaque cursor (it was a decimal time, "-1" for none);
# - an application's `submitted_at` is its first submission (it was the latest; the
#   latest is `resubmitted_at` now: docs/applications.md).
CHANGED_ON_PURPOSE = [
    {"path": r"^/api/v1/provider-applications(/[^/?]+)?(\?.*)?$", "field": "submitted_at"},
    {"path": r"^/api/v1/provider-applications(\?.*)?$", "field": "items.*.submitted_at"},
    {"path": r"^/api/v1/machines(/[^/]+)?$", "field": "items.*.gpus.*.listed"},
    {"path": r"^/api/v1/machines(/[^/]+)?$", "field": "items.*.gpus.*.delisted_reason"},
    {"path": r"^/api/v1/machines/[^/]+$", "field": "gpus.*.listed"},
    {"path": r"^/api/v1/machines/[^/]+$", "field": "gpus.*.delisted_reason"},
    {"path": r"^/api/v1/machines/[^/]+/benchmarks$", "field": "next_cursor"},
    {"path": r"^/api/v1/workloads/[^/]+/logs$", "field": "next_cursor"},
]

# Body fields of an application (the form); the rest is server-made.
FORM_FIELDS = ("contact", "gpus", "infrastructure")
# Fields that must read back absent or null, never "", when they were not saved.
NO_EMPTY_STRING = ("email", "country")


# --------------------------------------------------------------------------- comparison


def scalar_equal(old, new):
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return math.isclose(old, new, rel_tol=1e-9, abs_tol=1e-12)
    return type(old) is type(new) and old == new


def superset_mismatches(old, new, req_path="", volatile=(), path=(), parent=None):
    """Where `new` fails to hold `old`: every key of an old object present with an equal
    value (recursively), lists of the same length item by item; volatile fields skipped.
    Returns a list of strings."""
    where = ".".join(path) or "(body)"
    if path and is_volatile(volatile, req_path, path, parent):
        return []
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{where}: was an object, now {json.dumps(new)[:200]}"]
        out = []
        for k, v in old.items():
            sub = path + (k,)
            if k not in new:
                if not is_volatile(volatile, req_path, sub, old):
                    out.append(f"{'.'.join(sub)}: missing (was {json.dumps(v)[:200]})")
                continue
            out += superset_mismatches(v, new[k], req_path, volatile, sub, old)
        return out
    if isinstance(old, list):
        if not isinstance(new, list):
            return [f"{where}: was a list, now {json.dumps(new)[:200]}"]
        out = []
        if len(old) != len(new):
            out.append(f"{where}: {len(old)} items before, {len(new)} now")
        for i, (o, n) in enumerate(zip(old, new)):
            out += superset_mismatches(o, n, req_path, volatile, path + (str(i),), old)
        return out
    if not scalar_equal(old, new):
        return [f"{where}: was {json.dumps(old)}, now {json.dumps(new)[:200]}"]
    return []


def is_empty(v):
    """Nothing saved: absent (None), "", [] or an object of empty values."""
    if v is None or v == "" or v == []:
        return True
    if isinstance(v, dict):
        return all(is_empty(x) for x in v.values())
    return False


def saved_mismatches(saved, new, path=()):
    """Whether `new` (a form value read back) is exactly what was `saved`: saved values
    equal, saved nulls absent or null, and nothing that was not saved (empty values
    only; an email or a country absent or null, never "")."""
    where = ".".join(path) or "(form)"
    if saved is None:
        return [] if new is None else [f"{where}: saved null, reads back {json.dumps(new)[:200]}"]
    if isinstance(saved, dict):
        if new is None:
            new = {}
        if not isinstance(new, dict):
            return [f"{where}: saved an object, reads back {json.dumps(new)[:200]}"]
        out = []
        for k in sorted(set(saved) | set(new)):
            sub = path + (k,)
            if k in saved:
                out += saved_mismatches(saved[k], new.get(k), sub)
            elif k in NO_EMPTY_STRING and new.get(k) is not None:
                out.append(f"{'.'.join(sub)}: not saved, reads back {json.dumps(new[k])} "
                           "(must be absent or null)")
            elif not is_empty(new.get(k)) or _has_empty_string_field(new.get(k)):
                out.append(f"{'.'.join(sub)}: not saved, reads back {json.dumps(new[k])[:200]}")
        return out
    if isinstance(saved, list):
        if not isinstance(new, list):
            return [f"{where}: saved a list, reads back {json.dumps(new)[:200]}"]
        out = []
        if len(saved) != len(new):
            out.append(f"{where}: saved {len(saved)} items, reads back {len(new)}")
        for i, (s, n) in enumerate(zip(saved, new)):
            out += saved_mismatches(s, n, path + (str(i),))
        return out
    if not scalar_equal(saved, new):
        return [f"{where}: saved {json.dumps(saved)}, reads back {json.dumps(new)[:200]}"]
    return []


def _has_empty_string_field(v):
    """An unsaved object that carries an email or country of "" (the 0.1 bug)."""
    if isinstance(v, dict):
        return any((k in NO_EMPTY_STRING and x == "") or _has_empty_string_field(x)
                   for k, x in v.items())
    if isinstance(v, list):
        return any(_has_empty_string_field(x) for x in v)
    return False


def draft_mismatches(draft, new, volatile, in_list=False):
    """A broken draft read back: its form is what was saved; the server-made fields are
    what release 0.1 answered when it was created (less history in a list)."""
    if not isinstance(new, dict):
        return [f"not an object: {new!r}"[:300]]
    out = []
    form = {k: new.get(k) for k in FORM_FIELDS}
    out += saved_mismatches({k: draft["saved"].get(k) for k in FORM_FIELDS if k in draft["saved"]},
                            {k: v for k, v in form.items() if v is not None or k in draft["saved"]})
    created = {k: v for k, v in draft["created_answer"]["body"].items() if k not in FORM_FIELDS}
    if in_list:
        created.pop("history", None)
    out += superset_mismatches(created, new, f"{API}/provider-applications/{draft['id']}", volatile)
    return out


# --------------------------------------------------------------------------- the test


def load_sql(sql_path, db_path):
    with open(sql_path, encoding="utf-8") as f:
        sql = f.read()
    conn = sqlite3.connect(db_path)
    try:
        conn.executescript(sql)
        conn.commit()
    finally:
        conn.close()


RFC3339 = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')


def recorded_at(answers_text):
    """The latest time the recorded answers hold: when the fixture was made."""
    times = [datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
             for t in RFC3339.findall(answers_text)]
    return max(times)


class FixtureTimeGpunexd(Gpunexd):
    """gpunexd whose clock reads the time the fixture was recorded (GPUNEX_TEST_CLOCK_FILE
    holds the offset from the system clock), so that answers which age with the calendar,
    such as the reliability notices of machines offline since the recording, compare with
    what release 0.1 answered then."""

    def __init__(self, *args, at, **kwargs):
        super().__init__(*args, **kwargs)
        now = datetime.datetime.now(datetime.timezone.utc)
        self.clock_path = os.path.join(self.tmp, "clock")
        with open(self.clock_path, "w", encoding="utf-8") as f:
            f.write(str(math.floor((at - now).total_seconds()) + 60))

    def env(self):
        env = super().env()
        env["GPUNEX_TEST_CLOCK_FILE"] = self.clock_path
        return env


class UpgradeFromRelease01(unittest.TestCase):
    """One gpunexd under test on a copy of the release 0.1 database; the requests are
    replayed once, in the recorded order, and each test checks a part of the answers."""

    @classmethod
    def setUpClass(cls):
        with open(ANSWERS_PATH, encoding="utf-8") as f:
            text = f.read()
        cls.fixture = json.loads(text)
        cfg = cls.fixture["server_config"]
        cls.srv = FixtureTimeGpunexd("sqlite", None, extra_toml=cfg["extra_toml"],
                                     root_toml=cfg["root_toml"], at=recorded_at(text))
        try:
            load_sql(SQL_PATH, cls.srv.backend.db_path)
            cls.srv.start()
            cls.tokens = {}
            cls.login_errors = {}
            cls.replies = [cls._send(a) for a in cls.fixture["requests"]]
        except BaseException:
            print("\n--- gpunexd logs ---\n" + cls.srv.logs()[-6000:])
            cls.srv.cleanup(keep=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    @classmethod
    def _token(cls, who):
        if who is None:
            return ""
        if who not in cls.tokens:
            cred = cls.fixture["credentials"][who]
            if "api_key" in cred:
                cls.tokens[who] = cred["api_key"]
            else:
                r = cls.srv.client().post(f"{API}/auth/login",
                                          {"email": cred["email"], "password": cred["password"]})
                if r.status != 200:
                    cls.login_errors[who] = repr(r)
                cls.tokens[who] = (r.body or {}).get("token") or "login-failed"
        return cls.tokens[who]

    @classmethod
    def _send(cls, a):
        return cls.srv.client().request(a["method"], a["path"], token=cls._token(a["as"]))

    def where(self, a):
        return f"{a['method']} {a['path']} as {a['as']}"

    def volatile(self):
        return self.fixture["volatile"]

    def not_compared(self):
        return self.fixture["volatile"] + CHANGED_ON_PURPOSE

    def old_answer_by_id(self):
        """Application id → release 0.1's answer to the admin's GET by id (when 200)."""
        out = {}
        prefix = f"{API}/provider-applications/"
        for a in self.fixture["requests"]:
            if a["path"].startswith(prefix) and a["as"] == "admin" and a["status"] == 200:
                out[a["path"][len(prefix):]] = a["body"]
        return out

    # ------------------------------------------------------------------ tests

    def test_readyz(self):
        r = self.srv.client().get("/readyz")
        self.assertEqual(r.status, 200, r)

    def test_schema_version_is_newer_than_the_fixture(self):
        version = self.srv.backend.query("SELECT MAX(version) FROM schema_migrations")[0][0]
        self.assertGreater(version, self.fixture["schema_version"],
                           "the new release adds migrations; the schema is still the fixture's")

    def test_logins_still_work(self):
        for who in self.fixture["credentials"]:
            self._token(who)
        self.assertEqual(self.login_errors, {})

    def test_answers_that_worked_are_unchanged(self):
        """2xx: same status, the old body held by the new one; 4xx: same status and code."""
        for a, r in zip(self.fixture["requests"], self.replies):
            if a["status"] == 500:
                continue
            with self.subTest(self.where(a)):
                self.assertEqual(r.status, a["status"], f"{self.where(a)}: {r!r}")
                if 200 <= a["status"] < 300:
                    bad = superset_mismatches(a["body"], r.body, a["path"], self.not_compared())
                    self.assertEqual(bad, [], f"{self.where(a)} differs from release 0.1")
                else:
                    self.assertIsInstance(r.body, dict, r)
                    self.assertEqual((r.body.get("error") or {}).get("code"), a["body"]["error"]["code"], r)

    def test_broken_drafts_read_back_as_saved(self):
        """Each broken draft by id (owner and admin): 200 with exactly what was saved."""
        drafts = {d["id"]: d for d in self.fixture["broken_drafts"]}
        seen = set()
        for a, r in zip(self.fixture["requests"], self.replies):
            app_id = (a.get("expect") or {}).get("application")
            if a["status"] != 500 or not app_id:
                continue
            seen.add(app_id)
            with self.subTest(f"{self.where(a)} ({drafts[app_id]['kind']})"):
                self.assertEqual(r.status, 200, f"{self.where(a)}: {r!r}")
                bad = draft_mismatches(drafts[app_id], r.body, self.volatile())
                self.assertEqual(bad, [], f"{self.where(a)} ({drafts[app_id]['kind']}) reads back wrong")
        self.assertEqual(seen, set(drafts), "every broken draft is replayed")

    def test_lists_the_broken_drafts_broke(self):
        """Each list release 0.1 answered 500: 200, the database's applications in order,
        broken drafts as saved, the others as release 0.1 showed them by id."""
        drafts = {d["id"]: d for d in self.fixture["broken_drafts"]}
        by_id = self.old_answer_by_id()
        for a, r in zip(self.fixture["requests"], self.replies):
            ids = (a.get("expect") or {}).get("application_ids")
            if a["status"] != 500 or ids is None:
                continue
            with self.subTest(self.where(a)):
                self.assertEqual(r.status, 200, f"{self.where(a)}: {r!r}")
                items = r.body["items"]
                self.assertEqual([x.get("id") for x in items], ids, self.where(a))
                bad = []
                for i, item in enumerate(items):
                    if item["id"] in drafts:
                        bad += [f"items.{i}: {m}" for m in
                                draft_mismatches(drafts[item["id"]], item, self.volatile(), in_list=True)]
                    else:
                        old = {k: v for k, v in by_id[item["id"]].items() if k != "history"}
                        bad += [f"items.{i}.{m}" for m in
                                superset_mismatches(old, item, f"{API}/provider-applications/{item['id']}",
                                                    self.not_compared())]
                self.assertEqual(bad, [], f"{self.where(a)}: items differ")

    def test_what_changed_on_purpose(self):
        """The fields CHANGED_ON_PURPOSE describes, checked for their new meaning."""
        checked = 0
        for a, r in zip(self.fixture["requests"], self.replies):
            if a["status"] != 200:
                continue
            path = a["path"]
            with self.subTest(self.where(a)):
                if re.search(r"^/api/v1/machines(/[^/]+)?$", path):
                    machines = r.body["items"] if "items" in r.body else [r.body]
                    for m in machines:
                        self.assertEqual(m["status"], "offline", "no agent has said hello since the start")
                        for g in m["gpus"]:
                            want = ("missing_from_machine" if not g["present"] else
                                    "disabled_by_provider" if not g["enabled"] else "machine_offline")
                            self.assertEqual(g["listing_state"], want, g)
                            self.assertIs(g["listed"], False, g)
                            self.assertEqual(g["delisted_reason"], g["listing_note"], g)
                            checked += 1
                elif re.search(r"^/api/v1/machines/[^/]+/benchmarks$", path):
                    self.assertEqual(a["body"]["next_cursor"], "")
                    self.assertIsNone(r.body["next_cursor"], "the end of a list is null")
                    checked += 1
                elif re.search(r"^/api/v1/provider-applications", path):
                    # The first submission: the history's "submitted"; the latest, after a
                    # resubmission, in resubmitted_at.
                    by_id = self.old_answer_by_id()
                    olds = a["body"]["items"] if "items" in a["body"] else [a["body"]]
                    news = {x["id"]: x for x in (r.body["items"] if "items" in r.body else [r.body])}
                    for old in olds:
                        new = news.get(old.get("id"))
                        if new is None or old.get("submitted_at") is None:
                            continue
                        history = by_id.get(old["id"], {}).get("history") or []
                        if any(h["action"] == "resubmitted" for h in history):
                            first = [h["at"] for h in history if h["action"] == "submitted"][0]
                            self.assertEqual(new["submitted_at"], first, "the first submission")
                            self.assertEqual(new["resubmitted_at"], old["submitted_at"], "the latest")
                        else:
                            self.assertEqual(new["submitted_at"], old["submitted_at"])
                            self.assertIsNone(new["resubmitted_at"])
                        checked += 1
                elif re.search(r"^/api/v1/workloads/[^/]+/logs$", path):
                    if a["body"]["items"]:
                        self.assertIsInstance(r.body["next_cursor"], str)
                        # The position follows on from the last chunk: nothing after it.
                        more = self.srv.client().get(path, query={"after": r.body["next_cursor"]},
                                                     token=self._token(a["as"]))
                        self.assertEqual((more.status, more.body["items"]), (200, []), more)
                        self.assertEqual(more.body["next_cursor"], r.body["next_cursor"])
                    else:
                        self.assertIsNone(r.body["next_cursor"], "no chunks, no position")
                    checked += 1
        self.assertGreater(checked, 10)

    def test_upgraded_gpus_are_listed_once_priced(self):
        """Release 0.1 had no prices, and this release lists only GPUs whose model has a
        price (PRC-1): after the upgrade no provider has a price, so machine A's GPU that
        passed its benchmark is "no_price_set" when its agent is back (not "listed" as in
        0.1), and listed once Pia prices the L4. This is the intended change, not a
        regression: 0.1's `listed: true` for that GPU does not carry over."""
        machine_a = self.fixture["meta"]["machines"]["a"]
        passed, failed = machine_a["gpus"]
        pia = self.srv.client(self._token("pia"))
        for who in ("pia", "ada"):
            r = self.srv.client(self._token(who)).get(f"{API}/providers/me/prices")
            self.assertEqual((r.status, r.body), (200, {"items": []}), who)
        r = pia.post(f"{API}/providers/me/agent-tokens", {"name": "after the upgrade"})
        self.assertEqual(r.status, 201, r)
        agent = make_agent(self.srv, r.body["token"], "a", (L4, L4))
        self.addCleanup(agent.cleanup)
        self.assertEqual(agent.join()["machine_id"], machine_a["id"], "the same machine")

        def states():
            gpus = pia.get(f"{API}/machines/{machine_a['id']}").body["gpus"]
            return {g["id"]: (g["listing_state"], g["listing_note"]) for g in gpus}

        want = {passed: ("no_price_set", "no price set for NVIDIA L4"),
                failed: states()[failed]}
        self.assertEqual(want[failed][0], "failed_benchmark", "the failed verdict comes first")
        wait_until(lambda: states() == want, 5, f"machine A's GPUs {want}")
        self.assertEqual(self.srv.client().get(f"{API}/offers").body["items"], [])
        r = pia.put(f"{API}/providers/me/prices",
                    {"items": [{"gpu_model": "l4-24gb", "price_micro": 400000}]})
        self.assertEqual(r.status, 200, r)
        wait_until(lambda: states()[passed] == ("listed", None), 5, "the priced GPU listed")
        self.assertEqual(states()[failed][0], "failed_benchmark")
        offers = wait_until(lambda: self.srv.client().get(f"{API}/offers").body["items"], 5,
                            "machine A's offer")
        self.assertEqual([(o["gpu_model"], o["gpus_available"], o["price_micro"]) for o in offers],
                         [("l4-24gb", 1, 400000)])

    def test_benchmark_verdicts_survive_as_listing_facts(self):
        """What release 0.1 kept as delisted_reason ("awaiting its first benchmark",
        "benchmark: ...") is now the benchmarks' verdict, a fact the listing decides from."""
        old = {}
        for a in self.fixture["requests"]:
            if re.search(r"^/api/v1/machines/[^/]+$", a["path"]) and a["status"] == 200:
                for g in a["body"]["gpus"]:
                    old[g["id"]] = g["delisted_reason"]
        rows = dict((r[0], (r[1], r[2])) for r in self.srv.backend.query(
            "SELECT id, benchmark_verdict, benchmark_note FROM machine_gpus"))
        self.assertEqual(set(rows), set(old))
        for gid, reason in old.items():
            with self.subTest(gid):
                if reason == "awaiting its first benchmark":
                    self.assertEqual(rows[gid], ("awaiting_first", None))
                elif reason and reason.startswith("benchmark: "):
                    self.assertEqual(rows[gid], ("failed", reason))
                else:
                    self.assertEqual(rows[gid][0], "passed")
        scores = dict(self.srv.backend.query("SELECT gpu_id, performance_score FROM gpu_benchmark_status"))
        for a in self.fixture["requests"]:
            if re.search(r"^/api/v1/machines/[^/]+$", a["path"]) and a["status"] == 200:
                for g in a["body"]["gpus"]:
                    self.assertEqual(scores.get(g["id"]), g["performance_score"], g["id"])

    def test_every_500_has_an_expectation(self):
        lost = [self.where(a) for a in self.fixture["requests"]
                if a["status"] == 500 and not a.get("expect")]
        self.assertEqual(lost, [])

    def test_readme_lists_the_volatile_fields(self):
        with open(README_PATH, encoding="utf-8") as f:
            readme = f.read()
        missing = [v["field"] for v in self.volatile() if f"`{v['field']}`" not in readme]
        self.assertEqual(missing, [], "upgrade/README.md and the answers file disagree")


class ComparisonMachinery(unittest.TestCase):
    """The comparison helpers themselves (no gpunexd)."""

    def test_superset(self):
        vol = [{"path": "^/x$", "field": "items.*.t"},
               {"path": "^/x$", "field": "**.age", "when_null": "decided_at"}]
        old = {"items": [{"a": 1, "t": "old", "b": [1, 2]}], "n": 2.0,
               "age": 3, "decided_at": None, "k": {"age": 4, "decided_at": "2026"}}
        new = {"items": [{"a": 1, "t": "new", "b": [1, 2], "extra": 5}], "n": 2, "more": True,
               "age": 9, "decided_at": None, "k": {"age": 4, "decided_at": "2026"}}
        self.assertEqual(superset_mismatches(old, new, "/x", vol), [])
        new["k"]["age"] = 5  # decided: not volatile
        new["items"][0]["b"] = [1, 2, 3]
        del new["items"][0]["a"]
        self.assertEqual(len(superset_mismatches(old, new, "/x", vol)), 3)
        self.assertEqual(len(superset_mismatches({"v": True}, {"v": 1})), 1)

    def test_saved(self):
        saved = {"contact": {"full_name": "N", "email": None}}
        self.assertEqual(saved_mismatches(saved, {"contact": {"full_name": "N", "company": ""}}), [])
        self.assertEqual(saved_mismatches(saved, {"contact": {"full_name": "N", "email": None}}), [])
        self.assertEqual(len(saved_mismatches(saved, {"contact": {"full_name": "N", "email": ""}})), 1)
        loc = {"gpus": [{"model": "x", "location": {"city": "Milan"}}]}
        self.assertEqual(saved_mismatches(loc, {"gpus": [{"model": "x", "quantity": None,
                                                          "location": {"city": "Milan", "region": None}}]}), [])
        self.assertEqual(len(saved_mismatches(loc, {"gpus": [{"model": "x",
                                                              "location": {"city": "Milan", "country": ""}}]})), 1)
        self.assertEqual(saved_mismatches({}, {"contact": {"full_name": "", "company": ""}, "gpus": [],
                                               "infrastructure": {"ups": None}}), [])
        self.assertEqual(len(saved_mismatches({}, {"contact": {"full_name": "", "email": ""}})), 1)


if __name__ == "__main__":
    unittest.main()
