"""Bad requests to the availability, maintenance and reliability routes (issue 12):
a table of malformed, mistyped, out-of-range and otherwise invalid requests, each answered
with the error shape of docs/api.md naming exactly the bad field(s) of the contract, and each
followed by a read-back showing that nothing changed (the schedules of every machine
involved, the maintenance windows of both providers' machines), and - after the whole
table - the tables of schedules and maintenance windows exactly as before. Then the
boundaries on the right side are accepted (so the refusals above are about the one thing
each row breaks), and the 50-upcoming-windows limit holds.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import copy
import datetime as dt
import json
import unittest

from harness import (API, ServerTestCase, fill_placeholders, provider_with_agent_token,
                     wait_until)
from test_agent_channel import L4, FakeAgent

UTC = dt.timezone.utc

# A valid schedule; rows change one thing in it.
SCHEDULE = {"kind": "schedule", "timezone": "Europe/Rome",
            "windows": [{"days": ["mon", "fri"], "start": "08:00", "end": "18:00"},
                        {"days": ["sat"], "start": "22:00", "end": "06:00"}]}


def sched(**changes):
    """{"schedule": SCHEDULE changed}: w_<key> changes windows[0], w1_<key> windows[1];
    a value of DROP removes the key."""
    s = copy.deepcopy(SCHEDULE)
    for k, v in changes.items():
        if k.startswith("w1_"):
            target, key = s["windows"][1], k[3:]
        elif k.startswith("w_"):
            target, key = s["windows"][0], k[2:]
        else:
            target, key = s, k
        if v is DROP:
            target.pop(key, None)
        else:
            target[key] = v
    return {"schedule": s}


DROP = object()
LOCAL = object()


def ts(t):
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now():
    return dt.datetime.now(UTC).replace(microsecond=0)


def mnt(start=None, end=None, hours=2, start_=None, end_=None, **changes):
    """A maintenance body, evaluated when the row runs: `start` a timedelta from now
    (default 3 days), `end` a timedelta from start (default `hours`); `start_`/`end_` set
    start/end to a literal value instead (LOCAL: a time 3 days ahead without an offset);
    other keys replace (DROP removes) members."""
    literal = {k: v for k, v in (("start", start_), ("end", end_)) if v is not None}
    changes.update(literal)

    def body(ctx):
        s = now() + (start if start is not None else dt.timedelta(days=3))
        e = s + (end if end is not None else dt.timedelta(hours=hours))
        b = {"start": ts(s), "end": ts(e), "category": "disk",
             "reason": "Replacing a failing NVMe drive"}
        for k, v in changes.items():
            if v is DROP:
                b.pop(k, None)
            elif v is LOCAL:
                b[k] = (now() + 3 * D).strftime("%Y-%m-%dT%H:%M:%S")
            else:
                b[k] = v
        return b
    return body


def around(key, before, after):
    """A body overlapping the fixture window `key`: from its start + `before` to its end +
    `after` (timedeltas)."""
    def body(ctx):
        w = ctx["windows"][key]
        return {"start": ts(parse_time(w["start"]) + before),
                "end": ts(parse_time(w["end"]) + after),
                "category": "power", "reason": "Electrician rewiring the rack PDU"}
    return body


def parse_time(s):
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    return dt.datetime.fromisoformat(s)


H = dt.timedelta(hours=1)
D = dt.timedelta(days=1)

AV = f"{API}/machines/{{mA}}/availability"
PAV = f"{API}/providers/me/availability"
MN = f"{API}/machines/{{mA}}/maintenance"

V = "validation_failed"

# Who: "owner" (provider A, whose machines are {mA} and {mA2}), "other" (provider B, whose
# machine is {mB}).
# Row: (name, method, path, who, body, status, the exact error.fields keys, error code).
# body: a JSON-able value, a function ctx -> value, or ("raw", str, content type).
ROWS = [
    # --- PUT /machines/{id}/availability: time zones
    ("zone Mars/Olympus", "PUT", AV, "owner", sched(timezone="Mars/Olympus"), 422,
     ["schedule.timezone"], V),
    ("zone empty", "PUT", AV, "owner", sched(timezone=""), 422, ["schedule.timezone"], V),
    ("zone a number", "PUT", AV, "owner", sched(timezone=123), 422, ["schedule.timezone"], V),
    ("zone missing", "PUT", AV, "owner", sched(timezone=DROP), 422, ["schedule.timezone"], V),
    ("zone null", "PUT", AV, "owner", sched(timezone=None), 422, ["schedule.timezone"], V),
    ("zone an offset", "PUT", AV, "owner", sched(timezone="+02:00"), 422,
     ["schedule.timezone"], V),
    # --- kinds
    ("kind sometimes", "PUT", AV, "owner", sched(kind="sometimes"), 422, ["schedule.kind"], V),
    ("kind missing", "PUT", AV, "owner", sched(kind=DROP), 422, ["schedule.kind"], V),
    ("kind a number", "PUT", AV, "owner", sched(kind=1), 422, ["schedule.kind"], V),
    ("kind Always", "PUT", AV, "owner", {"schedule": {"kind": "Always"}}, 422,
     ["schedule.kind"], V),
    # --- days
    ("day unknown", "PUT", AV, "owner", sched(w_days=["mon", "funday"]), 422,
     ["schedule.windows[0].days"], V),
    ("day repeated", "PUT", AV, "owner", sched(w_days=["mon", "mon"]), 422,
     ["schedule.windows[0].days"], V),
    ("days empty", "PUT", AV, "owner", sched(w_days=[]), 422, ["schedule.windows[0].days"], V),
    ("days a string", "PUT", AV, "owner", sched(w_days="mon"), 422,
     ["schedule.windows[0].days"], V),
    ("day capitalised", "PUT", AV, "owner", sched(w_days=["Mon"]), 422,
     ["schedule.windows[0].days"], V),
    ("day a number", "PUT", AV, "owner", sched(w_days=[1]), 422,
     ["schedule.windows[0].days"], V),
    ("days missing", "PUT", AV, "owner", sched(w_days=DROP), 422,
     ["schedule.windows[0].days"], V),
    # --- start and end
    ("start 25:00", "PUT", AV, "owner", sched(w_start="25:00"), 422,
     ["schedule.windows[0].start"], V),
    ("start 8:00", "PUT", AV, "owner", sched(w_start="8:00"), 422,
     ["schedule.windows[0].start"], V),
    ("start 24:00", "PUT", AV, "owner", sched(w_start="24:00"), 422,
     ["schedule.windows[0].start"], V),
    ("start 08:60", "PUT", AV, "owner", sched(w_start="08:60"), 422,
     ["schedule.windows[0].start"], V),
    ("start 08:00:00", "PUT", AV, "owner", sched(w_start="08:00:00"), 422,
     ["schedule.windows[0].start"], V),
    ("window start a number", "PUT", AV, "owner", sched(w_start=800), 422,
     ["schedule.windows[0].start"], V),
    ("start missing", "PUT", AV, "owner", sched(w_start=DROP), 422,
     ["schedule.windows[0].start"], V),
    ("end 24:01", "PUT", AV, "owner", sched(w_end="24:01"), 422,
     ["schedule.windows[0].end"], V),
    ("end 00:00", "PUT", AV, "owner", sched(w_start="20:00", w_end="00:00"), 422,
     ["schedule.windows[0].end"], V),
    ("end 8pm", "PUT", AV, "owner", sched(w_end="8pm"), 422, ["schedule.windows[0].end"], V),
    ("end missing", "PUT", AV, "owner", sched(w_end=DROP), 422,
     ["schedule.windows[0].end"], V),
    ("end equals start", "PUT", AV, "owner", sched(w_start="08:00", w_end="08:00"), 422,
     ["schedule.windows[0].end"], V),
    ("second window end equals start", "PUT", AV, "owner",
     sched(w1_start="22:00", w1_end="22:00"), 422, ["schedule.windows[1].end"], V),
    # --- windows
    ("windows empty", "PUT", AV, "owner", sched(windows=[]), 422, ["schedule.windows"], V),
    ("29 windows", "PUT", AV, "owner",
     sched(windows=[{"days": ["mon"], "start": f"{h:02d}:00", "end": f"{h:02d}:30"}
                    for h in range(23)]
           + [{"days": ["tue"], "start": f"{h:02d}:00", "end": f"{h:02d}:30"} for h in range(6)]),
     422, ["schedule.windows"], V),
    ("windows missing", "PUT", AV, "owner", sched(windows=DROP), 422, ["schedule.windows"], V),
    ("windows an object", "PUT", AV, "owner",
     sched(windows={"days": ["mon"], "start": "08:00", "end": "18:00"}), 422,
     ["schedule.windows"], V),
    ("window a string", "PUT", AV, "owner", sched(windows=["mon 08:00-18:00"]), 422,
     ["schedule.windows[0]"], V),
    # --- unknown members, wrong shapes
    ("unknown schedule member", "PUT", AV, "owner", sched(colour="green"), 422,
     ["schedule.colour"], V),
    ("unknown window member", "PUT", AV, "owner", sched(w_note="lunch"), 422,
     ["schedule.windows[0].note"], V),
    ("unknown top-level member", "PUT", AV, "owner", dict(sched(), force=True), 422,
     ["force"], V),
    ("schedule missing", "PUT", AV, "owner", {}, 422, ["schedule"], V),
    ("schedule a string", "PUT", AV, "owner", {"schedule": "always"}, 422, ["schedule"], V),
    ("schedule bare, not wrapped", "PUT", AV, "owner", {"kind": "always"}, 422,
     ["kind", "schedule"], V),
    ("several bad at once", "PUT", AV, "owner",
     sched(timezone="Mars/Olympus", w_start="25:00", w1_days=["sat", "sat"]), 422,
     ["schedule.timezone", "schedule.windows[0].start", "schedule.windows[1].days"], V),
    ("availability malformed JSON", "PUT", AV, "owner",
     ("raw", '{"schedule": {"kind": ', "application/json"), 400, ["body"], None),
    ("availability array body", "PUT", AV, "owner", [sched()], 422, ["body"], V),
    # --- someone else's machine, no such machine
    ("availability of another provider's machine", "PUT", f"{API}/machines/{{mB}}/availability",
     "owner", sched(), 404, [], "not_found"),
    ("availability read of another provider's machine", "GET",
     f"{API}/machines/{{mB}}/availability", "owner", None, 404, [], "not_found"),
    ("availability of no machine", "PUT", f"{API}/machines/mch_nosuchmachine/availability",
     "owner", sched(), 404, [], "not_found"),
    # --- PUT /providers/me/availability
    ("provider-wide zone Mars/Olympus", "PUT", PAV, "owner", sched(timezone="Mars/Olympus"),
     422, ["schedule.timezone"], V),
    ("provider-wide end equals start", "PUT", PAV, "owner", sched(w_end="08:00"), 422,
     ["schedule.windows[0].end"], V),
    ("provider-wide kind unknown", "PUT", PAV, "owner", {"schedule": {"kind": "weekdays"}},
     422, ["schedule.kind"], V),
    ("provider-wide unknown member", "PUT", PAV, "owner", dict(sched(), machines=["x"]), 422,
     ["machines"], V),
    # --- POST /machines/{id}/maintenance: missing and mistyped
    ("maintenance empty body", "POST", MN, "owner", {}, 422,
     ["start", "end", "category", "reason"], V),
    ("maintenance start missing", "POST", MN, "owner", mnt(start_=DROP), 422, ["start"], V),
    ("maintenance end missing", "POST", MN, "owner", mnt(end_=DROP), 422, ["end"], V),
    ("maintenance category missing", "POST", MN, "owner", mnt(category=DROP), 422,
     ["category"], V),
    ("maintenance reason missing", "POST", MN, "owner", mnt(reason=DROP), 422, ["reason"], V),
    ("start not a time", "POST", MN, "owner", mnt(start_="tomorrow"), 422, ["start"], V),
    ("start month 13", "POST", MN, "owner", mnt(start_="2030-13-01T00:00:00Z"), 422,
     ["start"], V),
    ("start without an offset", "POST", MN, "owner", mnt(start_=LOCAL), 422, ["start"], V),
    ("maintenance start a number", "POST", MN, "owner", mnt(start_=1893456000), 422, ["start"], V),
    ("end not a time", "POST", MN, "owner", mnt(end_="later"), 422, ["end"], V),
    # --- out of range
    ("start in the past", "POST", MN, "owner", mnt(start=-H, end=2 * H), 422, ["start"], V),
    ("start 91 days ahead", "POST", MN, "owner", mnt(start=91 * D), 422, ["start"], V),
    ("end before start", "POST", MN, "owner", mnt(end=-H), 422, ["end"], V),
    ("end equal to start", "POST", MN, "owner", mnt(end=dt.timedelta(0)), 422, ["end"], V),
    ("longer than 7 days", "POST", MN, "owner", mnt(end=7 * D + dt.timedelta(minutes=1)), 422,
     ["end"], V),
    ("category unknown", "POST", MN, "owner", mnt(category="weather"), 422, ["category"], V),
    ("category capitalised", "POST", MN, "owner", mnt(category="Power"), 422, ["category"], V),
    ("category a number", "POST", MN, "owner", mnt(category=3), 422, ["category"], V),
    ("reason 9 characters", "POST", MN, "owner", mnt(reason="Fan swap."), 422, ["reason"], V),
    ("reason 301 characters", "POST", MN, "owner", mnt(reason="r" * 301), 422, ["reason"], V),
    ("reason a number", "POST", MN, "owner", mnt(reason=1234567890123), 422, ["reason"], V),
    ("reason empty", "POST", MN, "owner", mnt(reason=""), 422, ["reason"], V),
    ("maintenance unknown member", "POST", MN, "owner", mnt(severity="high"), 422,
     ["severity"], V),
    ("maintenance state smuggled in", "POST", MN, "owner", mnt(state="cancelled"), 422,
     ["state"], V),
    ("maintenance malformed JSON", "POST", MN, "owner",
     ("raw", '{"start": "2030-01-01T00:00:00Z",', "application/json"), 400, ["body"], None),
    # --- overlaps (the message names the window overlapped)
    ("overlaps the end of an upcoming window", "POST", MN, "owner",
     around("upcoming", H, 3 * H), 422, ["start"], V),
    ("overlaps the start of an upcoming window", "POST", MN, "owner",
     around("upcoming", -3 * H, -H), 422, ["start"], V),
    ("contains an upcoming window", "POST", MN, "owner",
     around("upcoming", -H, H), 422, ["start"], V),
    ("overlaps the window in progress", "POST", MN, "owner",
     around("started", dt.timedelta(minutes=5), H), 422, ["start"], V),
    # --- someone else's machine, no such machine
    ("maintenance on another provider's machine", "POST", f"{API}/machines/{{mB}}/maintenance",
     "owner", mnt(), 404, [], "not_found"),
    ("maintenance list of another provider's machine", "GET",
     f"{API}/machines/{{mB}}/maintenance", "owner", None, 404, [], "not_found"),
    ("maintenance on no machine", "POST", f"{API}/machines/mch_nosuchmachine/maintenance",
     "owner", mnt(), 404, [], "not_found"),
    # --- DELETE /machines/{id}/maintenance/{mid}
    ("cancel one that has started", "DELETE", MN + "/{started}", "owner", None, 409, [], None),
    ("cancel one already cancelled", "DELETE", MN + "/{cancelled}", "owner", None, 409, [], None),
    ("cancel no such window", "DELETE", MN + "/mnt_nosuchwindow", "owner", None, 404, [],
     "not_found"),
    ("cancel another machine's window through this one", "DELETE",
     f"{API}/machines/{{mA2}}/maintenance/{{upcoming}}", "owner", None, 404, [], "not_found"),
    ("cancel another provider's window", "DELETE", MN + "/{upcoming}", "other", None, 404, [],
     "not_found"),
    ("cancel another provider's window, own machine path", "DELETE",
     MN + "/{b_upcoming}", "owner", None, 404, [], "not_found"),
    # --- lists
    ("maintenance limit=0", "GET", MN + "?limit=0", "owner", None, 422, ["limit"], V),
    ("maintenance limit=abc", "GET", MN + "?limit=abc", "owner", None, 422, ["limit"], V),
    ("maintenance cursor garbage", "GET", MN + "?cursor=%25%25garbage%21", "owner", None, 422,
     ["cursor"], V),
    ("reliability limit=0", "GET", f"{API}/machines/{{mA}}/reliability?limit=0", "owner", None,
     422, ["limit"], V),
    ("reliability cursor garbage", "GET", f"{API}/machines/{{mA}}/reliability?cursor=zzz",
     "owner", None, 422, ["cursor"], V),
    ("reliability of another provider's machine", "GET",
     f"{API}/machines/{{mB}}/reliability", "owner", None, 404, [], "not_found"),
    ("provider reliability limit=0", "GET", f"{API}/providers/me/reliability?limit=0", "owner",
     None, 422, ["limit"], V),
]


# The tables that hold schedules and maintenance windows, with the columns a request may
# change (what the platform's own background work updates - when to look at a schedule
# again, whether the "soon" notification went out - is left out).
OWNED_TABLES = {
    "machine_schedules": "machine_id, schedule, source, updated_at, COALESCE(updated_by, '')",
    "maintenance_windows": "id, machine_id, start_at, end_at, category, reason, declared_at, "
                           "declared_by, COALESCE(cancelled_at, -1)",
}


class ScheduleBadInputsMixin:
    ROOT_TOML = "allow_emulated_gpus = true"

    def _rows(self):
        return ROWS

    def test_table_has_enough_rows(self):
        rows = self._rows()
        self.assertGreaterEqual(len(rows), 30)
        names = [r[0] for r in rows]
        self.assertEqual(len(names), len(set(names)), "row names must be unique")
        for r in rows:
            self.assertIsInstance(r[6], list, r[0])

    def _fixture(self):
        srv = self.srv
        admin = srv.admin()
        prov_a, token_a, _ = provider_with_agent_token(srv, admin, name="Anna")
        prov_b, token_b, _ = provider_with_agent_token(srv, admin, name="Bert")
        agents = []
        for token, user in ((token_a, prov_a), (token_a, prov_a), (token_b, prov_b)):
            ag = FakeAgent(srv, token, models=(L4,))
            self.addCleanup(ag.cleanup)
            ag.join()
            agents.append(ag)
        ma, ma2, mb = (ag.machine_id for ag in agents)
        # Fixture windows: one upcoming and one cancelled on A's machine, one in progress
        # (started 1.5 s after its declaration), one upcoming on B's machine.
        windows = {}
        t = now()
        for key, user, mid, start, end in (
                ("upcoming", prov_a, ma, t + D, t + D + 2 * H),
                ("cancelled", prov_a, ma, t + 5 * D, t + 5 * D + H),
                ("b_upcoming", prov_b, mb, t + 3 * D, t + 3 * D + 2 * H)):
            r = user.c.post(f"{API}/machines/{mid}/maintenance",
                            {"start": ts(start), "end": ts(end), "category": "gpu",
                             "reason": f"Fixture window {key}"})
            self.assertStatus(r, 201, key)
            windows[key] = r.body
        start = dt.datetime.now(UTC) + dt.timedelta(seconds=1.5)
        r = prov_a.c.post(f"{API}/machines/{ma}/maintenance",
                          {"start": start.strftime("%Y-%m-%dT%H:%M:%S.")
                           + f"{start.microsecond // 1000:03d}Z",
                           "end": ts(start + 10 * dt.timedelta(minutes=1)),
                           "category": "software", "reason": "Fixture window in progress"})
        self.assertStatus(r, 201)
        windows["started"] = r.body
        r = prov_a.c.delete(f"{API}/machines/{ma}/maintenance/{windows['cancelled']['id']}")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["state"], "cancelled")

        def started():
            items = prov_a.c.get(f"{API}/machines/{ma}/maintenance").body["items"]
            return [w for w in items if w["id"] == windows["started"]["id"]
                    and w["state"] == "active"]

        wait_until(started, 10, "the fixture window in progress")
        ctx = {"mA": ma, "mA2": ma2, "mB": mb, "windows": windows}
        for k, w in windows.items():
            ctx[k] = w["id"]
        return dict(ctx=ctx, prov_a=prov_a, prov_b=prov_b, admin=admin)

    def _state(self, f):
        """What no refused request may change, as the API shows it."""
        ctx, a, b = f["ctx"], f["prov_a"], f["prov_b"]
        out = {}
        for user, mid in ((a, ctx["mA"]), (a, ctx["mA2"]), (b, ctx["mB"])):
            r = user.c.get(f"{API}/machines/{mid}/availability")
            self.assertStatus(r, 200)
            out[f"availability {mid}"] = (r.body["schedule"], r.body["source"],
                                          r.body["updated_at"])
            out[f"maintenance {mid}"] = self._all_windows(user, mid)
        return out

    def _all_windows(self, user, mid, limit=None):
        """Every maintenance window of the machine, following next_cursor."""
        items, cursor = [], None
        while True:
            q = {}
            if limit:
                q["limit"] = str(limit)
            if cursor:
                q["cursor"] = cursor
            r = user.c.get(f"{API}/machines/{mid}/maintenance", query=q or None)
            self.assertStatus(r, 200)
            items += r.body["items"]
            cursor = r.body["next_cursor"]
            if not cursor:
                return items

    def _owned_tables(self):
        b = self.srv.backend
        snap = {}
        for table, columns in OWNED_TABLES.items():
            rows = b.query(f"SELECT {columns} FROM {table}")
            snap[table] = sorted(json.dumps([str(c) for c in r]) for r in rows)
        return snap

    def test_bad_requests_are_refused_and_change_nothing(self):
        f = self._fixture()
        ctx = f["ctx"]
        who = {"owner": f["prov_a"].c, "other": f["prov_b"].c}
        before = self._state(f)
        self.assertEqual(sorted(w["state"] for w in before[f"maintenance {ctx['mA']}"]),
                         ["active", "cancelled", "upcoming"])
        tables_before = self._owned_tables()
        self.assertEqual(len(tables_before["maintenance_windows"]), 4)

        def names_the_window_overlapped(name, resp, err):
            if name.startswith(("overlaps", "contains")):
                key = "started" if "progress" in name else "upcoming"
                self.assertIn("overlaps maintenance window", err["fields"]["start"])
                self.assertIn(ctx[key], err["fields"]["start"],
                              f"[{name}] names the window overlapped")

        self.assertRefusedRows(self._rows(), who, ctx, lambda: self._state(f),
                               check=names_the_window_overlapped)
        self.assertEqual(self._state(f), before)
        self.assertEqual(self._owned_tables(), tables_before,
                         "a rejected request changed the schedule or maintenance tables")

        # The bodies the rows start from are valid: each row's refusal is its one change.
        a = f["prov_a"]
        r = a.c.put(fill_placeholders(AV, ctx), sched())
        self.assertStatus(r, 200)
        r = a.c.put(fill_placeholders(PAV, ctx), sched())
        self.assertStatus(r, 200)
        self.assertEqual(r.body, {"updated": 2})
        r = a.c.post(fill_placeholders(MN, ctx), mnt()(ctx))
        self.assertStatus(r, 201)

    def test_boundaries_are_accepted(self):
        f = self._fixture()
        ctx, a = f["ctx"], f["prov_a"]
        av = fill_placeholders(AV, ctx)
        accepted = {
            "whole day 00:00-24:00": [{"days": ["sun"], "start": "00:00", "end": "24:00"}],
            "past midnight 22:00-06:00": [{"days": ["fri"], "start": "22:00", "end": "06:00"}],
            "00:00-00:01 and 23:59-24:00": [
                {"days": ["mon"], "start": "00:00", "end": "00:01"},
                {"days": ["mon"], "start": "23:59", "end": "24:00"}],
            "all seven days": [{"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                                "start": "09:00", "end": "17:00"}],
            "28 windows": [{"days": [d], "start": f"{h:02d}:00", "end": f"{h:02d}:30"}
                           for d in ("mon", "tue", "wed", "thu") for h in range(7)],
        }
        for label, windows in accepted.items():
            with self.subTest(schedule=label):
                s = {"kind": "schedule", "timezone": "America/Argentina/Buenos_Aires",
                     "windows": windows}
                r = a.c.put(av, {"schedule": s})
                self.assertStatus(r, 200, label)
                self.assertEqual(r.body["schedule"], s, label)
                self.assertEqual(r.body["source"], "provider", label)
                self.assertEqual(a.c.get(av).body["schedule"], s, label)
        r = a.c.put(av, {"schedule": {"kind": "always"}})
        self.assertStatus(r, 200)
        self.assertEqual((r.body["schedule"], r.body["next_change_at"]), ({"kind": "always"}, None))

        mn = fill_placeholders(MN, ctx)
        up = ctx["windows"]["upcoming"]
        cancelled = ctx["windows"]["cancelled"]
        ok = {
            "reason of 10 characters": mnt(start=10 * D, reason="Fan swap!!"),
            "reason of 300 characters": mnt(start=11 * D, reason="r" * 300),
            "reason of 300 non-ASCII characters": mnt(start=12 * D, reason="é" * 300),
            "exactly 7 days long": mnt(start=20 * D, end=7 * D),
            "89 days ahead": mnt(start=89 * D),
            "every category": None,
            "right after another window": lambda c: {
                "start": up["end"], "end": ts(parse_time(up["end"]) + H), "category": "internet",
                "reason": "ISP maintenance right after"},
            "over a cancelled window": lambda c: {
                "start": cancelled["start"], "end": cancelled["end"], "category": "other",
                "reason": "Reusing the slot that was cancelled"},
        }
        for label, body in ok.items():
            if body is None:
                for i, cat in enumerate(("power", "internet", "disk", "gpu", "software", "other")):
                    with self.subTest(window=f"{label}: {cat}"):
                        b = mnt(start=30 * D + i * D, category=cat)(ctx)
                        r = a.c.post(mn, b)
                        self.assertStatus(r, 201, f"{label}: {cat}")
                        self.assertEqual(r.body["category"], cat)
                continue
            with self.subTest(window=label):
                b = body(ctx)
                r = a.c.post(mn, b)
                self.assertStatus(r, 201, label)
                self.assertEqual((r.body["reason"], r.body["category"], r.body["state"]),
                                 (b["reason"], b["category"], "upcoming"), label)
                self.assertEqual(parse_time(r.body["start"]), parse_time(b["start"]), label)
                self.assertEqual(parse_time(r.body["end"]), parse_time(b["end"]), label)
                self.assertIs(r.body["planned"], True, f"{label}: declared days ahead")

    def test_at_most_50_upcoming_windows(self):
        f = self._fixture()
        ctx, a = f["ctx"], f["prov_a"]
        mn = fill_placeholders(f"{API}/machines/{{mA2}}/maintenance", ctx)
        base = now() + 2 * D
        for i in range(50):
            s = base + i * dt.timedelta(hours=25)
            r = a.c.post(mn, {"start": ts(s), "end": ts(s + H), "category": "other",
                              "reason": f"Weekly check number {i}"})
            self.assertStatus(r, 201, f"window {i}")
            last = r.body
        before = self._all_windows(a, ctx["mA2"])
        self.assertEqual(len(before), 50)
        s = base + 50 * dt.timedelta(hours=25)
        r = a.c.post(mn, {"start": ts(s), "end": ts(s + H), "category": "other",
                          "reason": "One window too many"})
        err = self.assertError(r, 422, fields=["start"], code=V)
        self.assertEqual(sorted(err["fields"]), ["start"], r)
        self.assertEqual(self._all_windows(a, ctx["mA2"]), before)
        # Paging: newest start first, all 50 over pages of 20.
        r = a.c.get(mn, query={"limit": "20"})
        self.assertEqual(len(r.body["items"]), 20)
        self.assertTrue(r.body["next_cursor"])
        seen = self._all_windows(a, ctx["mA2"], limit=20)
        self.assertEqual([w["id"] for w in seen], [w["id"] for w in before])
        starts = [parse_time(w["start"]) for w in seen]
        self.assertEqual(starts, sorted(starts, reverse=True))
        self.assertEqual(seen[0]["id"], last["id"])
        # Cancelling one makes room for one more.
        r = a.c.delete(f"{mn}/{last['id']}")
        self.assertStatus(r, 200)
        r = a.c.post(mn, {"start": ts(s), "end": ts(s + H), "category": "other",
                          "reason": "Room for one more now"})
        self.assertStatus(r, 201)


class ScheduleBadInputsSqliteTest(ScheduleBadInputsMixin, ServerTestCase):
    BACKEND = "sqlite"


class ScheduleBadInputsPostgresTest(ScheduleBadInputsMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
