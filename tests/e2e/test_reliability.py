"""Availability schedules, maintenance windows and the reliability score (issue 12, PRC-2,
REL-1..4, SPEC §13a) end to end, with a real gpunexd and a real gpunex-agent reporting
EMULATED GPUs (benchmarks off: the harness turns them off, so the GPUs are listed at once
and B has no history to go by).

- uptime: the agent runs, is SIGKILLed for a measured time (long enough for the platform
  to notice: offline_after_s is 2 here), and comes back. The machine's own status
  intervals (GET /machines/{id} recent_intervals) give the online and the scheduled
  seconds; with the "always" schedule the API's components.uptime must equal
  online_s / scheduled_s within 0.5 %, the score 100·U^0.5·C^0.3·B^0.2 of its own
  components (and of the measured U), and the outage is listed as an event;
- a schedule that excludes now hides the GPUs ("outside_schedule", with when they are
  listed again) and says when inside_schedule flips; one that includes now lists them
  again; one whose window opens at the next minute lists them when it opens (this test
  waits up to a minute for that);
- a maintenance window that starts in 2 s hides them ("in_maintenance") once it starts,
  and can no longer be cancelled (409).

SQLite only: the arithmetic is the same on both backends and the time budget is short.
"""

import datetime as dt
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import API, ServerTestCase, provider_with_agent_token, wait_until

AGENT = os.environ.get("GPUNEX_AGENT", "")

HEARTBEAT_S = 1
OFFLINE_AFTER_S = 2
FLEET_TOML = f"""
[fleet]
heartbeat_interval_s = {HEARTBEAT_S}
offline_after_s = {OFFLINE_AFTER_S}
hello_timeout_s = 3
"""

UTC = dt.timezone.utc
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
C_PRIOR = 0.95  # C = (Σw·ok + 5·0.95) / (Σw·ended + 5): no workloads → 0.95


def parse_time(s):
    """RFC 3339 (as gpunexd writes it: ...T12:00:00.123Z) → aware datetime."""
    if s is None:
        return None
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    return dt.datetime.fromisoformat(s)


def rfc3339(t):
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def hhmm(t, end=False):
    """"HH:MM" of a UTC time; midnight as an end is "24:00"."""
    if end and t.hour == 0 and t.minute == 0:
        return "24:00"
    return t.strftime("%H:%M")




def formula(u, c, b):
    return 100.0 * u ** 0.5 * c ** 0.3 * b ** 0.2


@unittest.skipUnless(AGENT, "GPUNEX_AGENT (the gpunex-agent binary) is not set")
class ReliabilityRealAgent(ServerTestCase):
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = FLEET_TOML

    def setUp(self):
        super().setUp()
        admin = self.srv.admin()
        self.prov, self.token, _ = provider_with_agent_token(self.srv, admin, name="Rel")
        self.admin = admin
        self.state_dir = tempfile.mkdtemp(prefix="gpunex-agent-")
        self.addCleanup(shutil.rmtree, self.state_dir, True)
        self.agent = None
        self.agent_starts = 0

    # -- the agent

    def start_agent(self):
        self.agent_starts += 1
        log = open(os.path.join(self.state_dir, f"agent-{self.agent_starts}.log"), "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNEX_")}
        env.update({"GPUNEX_PLATFORM_URL": f"http://127.0.0.1:{self.srv.port}",
                    "GPUNEX_TOKEN": self.token, "GPUNEX_STATE_DIR": self.state_dir,
                    "GPUNEX_DOCKER_SOCKET": os.path.join(self.state_dir, "no-docker.sock")})
        p = subprocess.Popen([AGENT, "run", "--emulate-gpus", "l4-24gb:2"], env=env,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log)

        def stop():
            if p.poll() is None:
                p.kill()
            p.wait()
            log.close()

        self.addCleanup(stop)
        self.agent = p
        return p

    def kill_agent(self):
        self.agent.send_signal(signal.SIGKILL)
        self.agent.wait(10)

    def online_machine(self):
        """Starts the agent and waits for its machine to be online with both GPUs listed;
        returns the machine."""
        self.start_agent()

        def ready():
            items = self.prov.c.get(f"{API}/machines").body["items"]
            if not items or items[0]["status"] != "online":
                return None
            m = self.machine(items[0]["id"])
            if len(m["gpus"]) == 2 and all(g["listing_state"] == "listed" for g in m["gpus"]):
                return m
            return None

        return wait_until(ready, 15, "the agent's machine online with its GPUs listed")

    # -- reading

    def machine(self, mid):
        r = self.prov.c.get(f"{API}/machines/{mid}")
        self.assertStatus(r, 200)
        return r.body

    def availability(self, mid):
        r = self.prov.c.get(f"{API}/machines/{mid}/availability")
        self.assertStatus(r, 200)
        return r.body

    def reliability(self, mid, user=None):
        r = (user or self.prov).c.get(f"{API}/machines/{mid}/reliability")
        self.assertStatus(r, 200)
        return r.body

    def listing_states(self, mid):
        return [g["listing_state"] for g in self.machine(mid)["gpus"]]

    def assertScoreMatchesComponents(self, rel):
        comp = rel["components"]
        for k in ("uptime", "completion", "benchmark"):
            self.assertIsInstance(comp[k], (int, float), rel)
            self.assertGreaterEqual(comp[k], 0.0, rel)
            self.assertLessEqual(comp[k], 1.0, rel)
            self.assertAlmostEqual(comp[k], round(comp[k], 4), places=9,
                                   msg=f"components.{k} has at most 4 decimals: {comp}")
        want = formula(comp["uptime"], comp["completion"], comp["benchmark"])
        # The components are rounded to 4 decimals, the score to 2.
        self.assertAlmostEqual(rel["score"], want, delta=0.011,
                               msg=f"score != 100·U^0.5·C^0.3·B^0.2 of {comp}: {rel['score']}")
        self.assertAlmostEqual(rel["score"], round(rel["score"], 2), places=9)

    # -- the tests

    def test_outage_lowers_uptime_to_online_over_scheduled(self):
        m = self.online_machine()
        mid = m["id"]
        av = self.availability(mid)
        self.assertEqual(av["schedule"], {"kind": "always"}, av)
        self.assertEqual(av["source"], "application", av)
        self.assertEqual((av["inside_schedule"], av["in_maintenance"], av["next_change_at"]),
                         (True, False, None), av)

        # Online for a while: nothing lost yet.
        time.sleep(5)
        rel = self.reliability(mid)
        self.assertEqual(rel["machine_id"], mid)
        self.assertEqual(rel["status"], "new", "under 24 scheduled hours")
        self.assertEqual(rel["components"]["uptime"], 1.0, rel)
        self.assertEqual(rel["components"]["completion"], C_PRIOR, "no workloads: the prior")
        self.assertEqual(rel["components"]["benchmark"], 1.0,
                         "no benchmark history, no throttling (emulated GPUs)")
        self.assertScoreMatchesComponents(rel)
        self.assertEqual(rel["score"], round(formula(1.0, C_PRIOR, 1.0), 2), rel)
        self.assertEqual(rel["outages"], {"count": 0, "total_s": 0}, rel)
        self.assertEqual([e for e in rel["events"] if e["kind"] == "outage"], [], rel)

        # Killed: no goodbye, the platform notices the missed heartbeats.
        killed_at = time.time()
        self.kill_agent()
        wait_until(lambda: self.machine(mid)["status"] == "offline", OFFLINE_AFTER_S + 5,
                   "the machine offline after the SIGKILL")
        detected_at = time.time()
        time.sleep(5)
        self.start_agent()
        wait_until(lambda: self.machine(mid)["status"] == "online", 15, "the machine back online")
        back_at = time.time()
        time.sleep(2)

        # The machine's own intervals: online, offline, online.
        m = self.machine(mid)
        ivs = sorted(m["recent_intervals"], key=lambda iv: iv["started_at"])
        ivs = [iv for iv in ivs if parse_time(iv["ended_at"]) != parse_time(iv["started_at"])]
        self.assertEqual([iv["state"] for iv in ivs], ["online", "offline", "online"], ivs)
        self.assertIsNone(ivs[-1]["ended_at"], ivs)
        off_start, off_end = parse_time(ivs[1]["started_at"]), parse_time(ivs[1]["ended_at"])
        offline_s = (off_end - off_start).total_seconds()
        # What the intervals say matches what was done: the kill lasted from killed_at to
        # back_at; the platform noticed it offline_after_s (± a heartbeat and a sweep) later.
        killed_s = back_at - killed_at
        self.assertGreater(offline_s, 4.0, ivs)
        self.assertLess(offline_s, killed_s, (ivs, killed_s))
        self.assertGreater(offline_s, killed_s - (OFFLINE_AFTER_S + HEARTBEAT_S + 2.5),
                           (ivs, killed_s, detected_at - killed_at))

        # The score is refreshed on the status change (or within the minute): the one that
        # knows about the whole outage.
        def refreshed():
            r = self.reliability(mid)
            if parse_time(r["computed_at"]) < off_end:
                return None
            return r if any(e["kind"] == "outage" for e in r["events"]) else None

        rel = wait_until(refreshed, 10, "a score computed after the machine came back",
                         interval=0.25)
        horizon = parse_time(rel["computed_at"])
        t0 = parse_time(ivs[0]["started_at"])
        created = parse_time(m["created_at"])
        self.assertLess(abs((created - t0).total_seconds()), 1.0, (m["created_at"], ivs))
        scheduled_s = (horizon - t0).total_seconds()
        online_s = 0.0
        for iv in ivs:
            if iv["state"] != "online":
                continue
            a = parse_time(iv["started_at"])
            b = min(parse_time(iv["ended_at"]) or horizon, horizon)
            online_s += max(0.0, (b - a).total_seconds())
        u = online_s / scheduled_s
        detail = (f"online {online_s:.3f} s of {scheduled_s:.3f} s scheduled "
                  f"(offline {offline_s:.3f} s) = {u:.5f}; API: {rel}")
        self.assertLess(u, 0.9, f"the outage is a real share of the time: {detail}")
        self.assertAlmostEqual(rel["components"]["uptime"], u, delta=0.005 * u, msg=detail)
        for k in ("uptime_24h", "uptime_7d", "uptime_30d"):
            self.assertIsNotNone(rel[k], f"{k}: {detail}")
            self.assertAlmostEqual(rel[k], u, delta=0.005 * u + 0.00005, msg=f"{k}: {detail}")
        self.assertEqual(rel["components"]["completion"], C_PRIOR, rel)
        self.assertEqual(rel["components"]["benchmark"], 1.0, rel)
        self.assertScoreMatchesComponents(rel)
        # ... and the score is what the formula gives for the measured U.
        want = formula(u, C_PRIOR, 1.0)
        self.assertAlmostEqual(rel["score"], want, delta=0.003 * want, msg=detail)
        self.assertEqual(rel["status"], "new", rel)
        self.assertAlmostEqual(rel["scheduled_hours"], scheduled_s / 3600, delta=0.01, msg=detail)
        self.assertEqual(rel["outages"]["count"], 1, rel)
        self.assertAlmostEqual(rel["outages"]["total_s"], offline_s, delta=1.0, msg=detail)
        self.assertEqual(rel["threshold"], 80, rel)

        # The outage, explained.
        outages = [e for e in rel["events"] if e["kind"] == "outage"]
        self.assertEqual(len(outages), 1, rel["events"])
        ev = outages[0]
        self.assertEqual(ev["machine_id"], mid, ev)
        self.assertIsNone(ev["gpu_id"], ev)
        self.assertAlmostEqual(ev["duration_s"], offline_s, delta=1.0, msg=f"{ev} {detail}")
        self.assertTrue(ev["description"].startswith("Offline"), ev)
        self.assertIn("scheduled", ev["description"], ev)
        # "Offline 14:02–14:19 UTC ...": from the interval's start to its end, in UTC.
        self.assertIn(off_start.strftime("%H:%M"), ev["description"], ev)
        self.assertIn(off_end.strftime("%H:%M"), ev["description"], ev)
        self.assertGreater(ev["weight"], 0.999, "an outage of a minute ago weighs about 1")
        self.assertLessEqual(ev["weight"], 1.0, ev)
        # The only thing that moved the score: its impact is all of the loss.
        self.assertAlmostEqual(ev["impact"], rel["score"] - round(formula(1.0, C_PRIOR, 1.0), 2),
                               delta=0.02, msg=ev)
        at = parse_time(ev["at"])
        self.assertGreaterEqual(at, off_start - dt.timedelta(seconds=1), ev)
        self.assertLessEqual(at, off_end + dt.timedelta(seconds=1), ev)
        times = [parse_time(e["at"]) for e in rel["events"]]
        self.assertEqual(times, sorted(times, reverse=True), "events newest first")
        self.assertTrue(rel["advice"], "advice on how to recover")

        # History: the last entry is today, live.
        self.assertTrue(rel["history"], rel)
        last = rel["history"][-1]
        self.assertEqual(last["day"], dt.datetime.now(UTC).strftime("%Y-%m-%d"), rel["history"])
        self.assertEqual(last["status"], "new", rel["history"])
        self.assertAlmostEqual(last["score"], rel["score"], delta=0.011, msg=rel["history"])

        # The admin reads the same; the provider's own view has the one machine in it.
        self.assertAlmostEqual(self.reliability(mid, self.admin)["components"]["uptime"],
                               rel["components"]["uptime"], delta=0.002)
        r = self.prov.c.get(f"{API}/providers/me/reliability")
        self.assertStatus(r, 200)
        pr = r.body
        self.assertEqual([x["machine_id"] for x in pr["machines"]], [mid], pr)
        pm = pr["machines"][0]
        self.assertEqual(pm["gpus"], 2, pm)
        self.assertEqual(pm["status"], "new", pm)
        self.assertAlmostEqual(pm["components"]["uptime"], u, delta=0.005 * u, msg=str(pm))
        # One machine: the GPU-weighted mean is that machine's score.
        self.assertAlmostEqual(pr["score"], pm["score"], delta=0.011, msg=str(pr))
        self.assertEqual(pr["status"], "new", pr)
        self.assertEqual(len([e for e in pr["events"] if e["kind"] == "outage"]), 1, pr)

    def test_schedule_that_excludes_now_hides_the_gpus_and_one_that_includes_now_lists_them(self):
        m = self.online_machine()
        mid = m["id"]
        now = dt.datetime.now(UTC)
        # A one-hour window 12 hours from now, on that day only (UTC).
        start = (now + dt.timedelta(hours=12)).replace(minute=0, second=0, microsecond=0)
        end = start + dt.timedelta(hours=1)
        away = {"kind": "schedule", "timezone": "UTC",
                "windows": [{"days": [DAYS[start.weekday()]], "start": hhmm(start),
                             "end": hhmm(end, end=True)}]}
        r = self.prov.c.put(f"{API}/machines/{mid}/availability", {"schedule": away})
        self.assertStatus(r, 200)
        for body in (r.body, self.availability(mid)):
            self.assertEqual(body["machine_id"], mid)
            self.assertEqual(body["schedule"], away, body)
            self.assertEqual(body["source"], "provider", body)
            self.assertIs(body["inside_schedule"], False, body)
            self.assertIs(body["in_maintenance"], False, body)
            self.assertEqual(parse_time(body["next_change_at"]), start, body)
            # One weekly window: exactly one occurrence in the next 7 days.
            self.assertEqual([(parse_time(x["start"]), parse_time(x["end"]))
                              for x in body["upcoming"]], [(start, end)], body)
            self.assertGreaterEqual(parse_time(body["updated_at"]),
                                    now - dt.timedelta(seconds=1), body)

        def hidden():
            gpus = self.machine(mid)["gpus"]
            return gpus if all(g["listing_state"] == "outside_schedule" for g in gpus) else None

        gpus = wait_until(hidden, 3, "the GPUs outside the schedule")
        for g in gpus:
            self.assertIs(g["listed"], False, g)
            # The note says why and when the GPU is listed again (the wording is the
            # dashboard's business; the time is the window's start).
            self.assertIn("availability schedule", g["listing_note"], g)
            self.assertIn(start.strftime("%H:%M"), g["listing_note"], g)
            self.assertEqual(g["delisted_reason"], g["listing_note"], g)
        # Still online: hidden by the schedule, not by an outage.
        self.assertEqual(self.machine(mid)["status"], "online")

        # A window around now, every day (crossing midnight when now is late in the day).
        now = dt.datetime.now(UTC)
        w_start = (now - dt.timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
        w_end = (now + dt.timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)
        here = {"kind": "schedule", "timezone": "UTC",
                "windows": [{"days": list(DAYS), "start": hhmm(w_start),
                             "end": hhmm(w_end, end=True)}]}
        r = self.prov.c.put(f"{API}/machines/{mid}/availability", {"schedule": here})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["schedule"], here, r.body)
        self.assertIs(r.body["inside_schedule"], True, r.body)
        self.assertEqual(parse_time(r.body["next_change_at"]), w_end, r.body)
        wait_until(lambda: self.listing_states(mid) == ["listed", "listed"], 3,
                   "the GPUs listed again inside the schedule")
        for g in self.machine(mid)["gpus"]:
            self.assertIs(g["listed"], True, g)
        av = self.availability(mid)
        self.assertIs(av["inside_schedule"], True, av)
        self.assertEqual(parse_time(av["next_change_at"]), w_end, av)
        # The first upcoming interval is the one in progress, ending at w_end.
        self.assertEqual(parse_time(av["upcoming"][0]["end"]), w_end, av)

        # A window that opens at the next minute (at least 3 s away): hidden until then,
        # listed again when it opens, with nobody touching anything.
        now = dt.datetime.now(UTC)
        opens = (now + dt.timedelta(seconds=63)).replace(second=0, microsecond=0)
        closes = opens + dt.timedelta(minutes=2)
        soon = {"kind": "schedule", "timezone": "UTC",
                "windows": [{"days": [DAYS[opens.weekday()]], "start": hhmm(opens),
                             "end": hhmm(closes, end=True)}]}
        r = self.prov.c.put(f"{API}/machines/{mid}/availability", {"schedule": soon})
        self.assertStatus(r, 200)
        self.assertIs(r.body["inside_schedule"], False, r.body)
        self.assertEqual(parse_time(r.body["next_change_at"]), opens, r.body)
        wait_until(lambda: self.listing_states(mid) == ["outside_schedule"] * 2, 3,
                   "the GPUs hidden until the window opens")
        first_listed = None
        deadline = opens + dt.timedelta(seconds=5)
        while dt.datetime.now(UTC) < deadline:
            states = self.listing_states(mid)
            t = dt.datetime.now(UTC)  # the state was read before t
            if states == ["listed", "listed"]:
                first_listed = t
                break
            self.assertEqual(states, ["outside_schedule"] * 2, f"at {t}")
            time.sleep(0.2)
        self.assertIsNotNone(first_listed, f"the GPUs listed within 5 s of {opens}")
        self.assertGreaterEqual(first_listed, opens, "listed before the window opened")
        av = self.availability(mid)
        self.assertIs(av["inside_schedule"], True, av)
        self.assertEqual(parse_time(av["next_change_at"]), closes, av)

    def test_maintenance_in_progress_hides_the_gpus_and_cannot_be_cancelled(self):
        m = self.online_machine()
        mid = m["id"]
        start = dt.datetime.now(UTC) + dt.timedelta(seconds=2)
        end = start + dt.timedelta(minutes=1)
        body = {"start": rfc3339(start), "end": rfc3339(end), "category": "software",
                "reason": "Upgrading the NVIDIA driver to 550.54"}
        r = self.prov.c.post(f"{API}/machines/{mid}/maintenance", body)
        self.assertStatus(r, 201)
        w = r.body
        self.assertTrue(w["id"].startswith("mnt_"), w)
        self.assertEqual((w["machine_id"], w["category"], w["reason"], w["state"], w["planned"],
                          w["cancelled_at"]),
                         (mid, "software", body["reason"], "upcoming", False, None), w)
        self.assertLess(abs((parse_time(w["start"]) - start).total_seconds()), 1.0, w)
        self.assertLess(abs((parse_time(w["end"]) - end).total_seconds()), 1.0, w)
        # Not started yet: still listed.
        self.assertEqual(self.listing_states(mid), ["listed", "listed"])
        self.assertIs(self.availability(mid)["in_maintenance"], False)

        gpus = wait_until(
            lambda: (lambda g: g if all(x["listing_state"] == "in_maintenance" for x in g)
                     else None)(self.machine(mid)["gpus"]),
            6, "the GPUs in maintenance")
        for g in gpus:
            self.assertIs(g["listed"], False, g)
        av = self.availability(mid)
        self.assertIs(av["in_maintenance"], True, av)
        self.assertIs(av["inside_schedule"], True, av)
        items = self.prov.c.get(f"{API}/machines/{mid}/maintenance").body["items"]
        self.assertEqual([(x["id"], x["state"]) for x in items], [(w["id"], "active")], items)

        # Started: too late to cancel.
        r = self.prov.c.delete(f"{API}/machines/{mid}/maintenance/{w['id']}")
        self.assertError(r, 409)
        items = self.prov.c.get(f"{API}/machines/{mid}/maintenance").body["items"]
        self.assertEqual([(x["id"], x["state"], x["cancelled_at"]) for x in items],
                         [(w["id"], "active", None)], items)
        self.assertEqual(self.listing_states(mid), ["in_maintenance", "in_maintenance"])


if __name__ == "__main__":
    unittest.main()
