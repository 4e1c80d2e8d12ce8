"""Crash safety of metering and the ledger (issue 14): 50 rentals running at once, metered
every second ([rentals] meter_interval_s = 1), while gpunexd is SIGKILLed at random moments
and restarted on the same data and port (at least 6 times: while the rentals are created,
while they run, while they are stopped), then everything is stopped.

Two machines of two providers (community and enterprise: two commission rates, two odd
prices so that the formula's floors matter), each a real gpunex-agent with 26 EMULATED L4s
whose containers run in a private Docker engine of its own (an agent removes managed
containers it does not know, so engines are not shared), each engine with an address pool
of its own for the workloads' networks (PooledDockerd). Five customers,
each credited once before and once during the crashes (with an Idempotency-Key, retried
until answered). Every create and stop is retried with its Idempotency-Key until it is
answered.

Afterwards:
- exactly 50 rentals exist, each ended as stopped by its customer;
- every rental's charged_micro = floor(price × gpus × billed_seconds / 3600), fee_micro =
  floor(charged × fee_bps / 10000), provider_micro = charged − fee, and billed_seconds is
  no more than the time it ran;
- GET /api/v1/admin/ledger/check: ok, sum 0, no mismatch;
- in the database: no transfer id twice; per rental the usage transfers add up to its
  charged_micro (fee and provider parts apart), refunds to refunded_micro; per customer
  balance + charged − refunded = credited, and exactly two credits each; each provider's
  earnings accounts and the platform's commission hold exactly their parts;
- no container is left in either engine.

Needs root, dockerd and busybox-static (skips otherwise); GPUNEX_AGENT names the agent.
Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL. GPUNEX_E2E_SEED fixes the
random kill times (the seed is printed).
"""

import collections
import http.client
import os
import random
import shutil
import subprocess
import threading
import time
import unittest

import dockerenv
from harness import (API, ApiAssertions, PG_SKIP_REASON, PG_URL, free_port,
                     provider_with_agent_token, set_prices, wait_until)
from test_rentals import (BUSYBOX_REF, L4, LONG_COMMAND, USDC, DockerAgent, FixedPortGpunexd,
                          expected_money, offer_of, parse_time, wait_machine_listed)

N_RENTALS = 50
GPUS_PER_MACHINE = 26
CUSTOMERS = 5
FIRST_CREDIT = 50 * USDC
CHAOS_CREDIT = 1 * USDC
# (tier, price per GPU-hour, commission) of the two providers.
PROVIDERS = (("community", 437_777, 2000), ("enterprise", 512_341, 1500))

# Long enough that the kills never end a rental as agent_lost, nor take a machine
# offline: the agents reconnect within seconds of each restart, but after several kills
# in a row their backoff (doubling from 1 s) can pass 10 s, and an offline machine's offer
# leaves the marketplace (a create then answered 422 or 409, which its Idempotency-Key
# keeps: the test's retries would never get a rental).
CRASH_TOML = """
[fleet]
heartbeat_interval_s = 1
offline_after_s = 60

[rentals]
meter_interval_s = 1
agent_lost_grace_s = 300
sweep_ms = 200
"""

RETRY_FOR_S = 180  # a request is retried this long (an idempotency claim's lease is 60 s)


class Unanswered(Exception):
    pass


class PooledDockerd(dockerenv.TestDockerd):
    """A private engine that takes its workloads' networks from an address pool of its
    own (`base`, a /16 cut into /24s: 256 networks). With the default pools an engine holds
    about 30 networks, and two engines on one host share them (each avoids the subnets of
    the other's bridges)."""

    def __init__(self, base):
        super().__init__()
        self.wrapper = os.path.join(self.dir, "dockerd-pooled")
        real = shutil.which("dockerd") or "/usr/sbin/dockerd"
        with open(self.wrapper, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n"
                    f"exec {real} --default-address-pool base={base},size=24 \"$@\"\n")
        os.chmod(self.wrapper, 0o755)

    def start(self):
        out = subprocess.run([dockerenv.dockerd_script(), "start", self.dir], capture_output=True,
                             text=True, timeout=90, env=dict(os.environ, DOCKERD=self.wrapper))
        if out.returncode != 0:
            self.stop()
            raise RuntimeError(f"cannot start a private dockerd ({out.returncode}):\n"
                               f"{out.stdout}\n{out.stderr}")
        self.started = True
        assert out.stdout.strip().splitlines()[-1] == self.socket
        return self


def send(client, method, path, body=None, key=None, ok=(200, 201), retry_for=RETRY_FOR_S):
    """The request, retried (with the same Idempotency-Key) while gpunexd is down, answers
    5xx, or answers 409 because the first attempt's claim is still held. Returns the
    first answer in `ok`, or any other 4xx as it is."""
    headers = {"Idempotency-Key": key} if key else None
    deadline = time.monotonic() + retry_for
    last = None
    while time.monotonic() < deadline:
        try:
            r = client.request(method, path, body, headers=headers)
        except (OSError, http.client.HTTPException) as e:
            last = e
            time.sleep(0.2)
            continue
        if r.status in ok:
            return r
        if r.status >= 500 or r.status == 409 or r.status == 429:
            last = r
            time.sleep(0.3)
            continue
        return r
    raise Unanswered(f"{method} {path}: no answer in {ok} within {retry_for}s; last {last!r}")


def read(client, path, **kw):
    r = send(client, "GET", path, ok=(200,), **kw)
    assert r.status == 200, r
    return r.body


class RentalsCrashMixin(ApiAssertions):
    BACKEND = "sqlite"

    def setUp(self):
        if self.BACKEND == "postgresql" and not PG_URL:
            self.skipTest(PG_SKIP_REASON)
        dockerenv.require_docker()
        dockerenv.agent_binary()
        seed = int(os.environ.get("GPUNEX_E2E_SEED") or random.SystemRandom().randrange(1 << 30))
        print(f"\n(seed {seed}: GPUNEX_E2E_SEED={seed} repeats the kill times)")
        self.rng = random.Random(seed)
        self.engines, self.agents = [], []
        self.addCleanup(self._cleanup_engines)
        for i, _ in enumerate(PROVIDERS):
            d = PooledDockerd(f"10.{201 + i}.0.0/16").start()
            self.engines.append(d)
            d.import_busybox(BUSYBOX_REF)
        self.srv = FixedPortGpunexd(free_port(), backend_name=self.BACKEND, smtp_url=None,
                                    extra_toml=CRASH_TOML, root_toml="allow_emulated_gpus = true")
        self.addCleanup(self._cleanup_server)
        self.srv.start()
        self.kills = []
        # The killers stop before the server is cleaned up (a failed assertion must not
        # leave one to start a gpunexd nobody stops).
        self.chaos_stop = threading.Event()
        self.killers = []
        self.addCleanup(self._stop_chaos)

    def _stop_chaos(self):
        self.chaos_stop.set()
        for t in self.killers:
            t.join(90)

    def _cleanup_server(self):
        failed = self._outcome_failed()
        if failed:
            print(f"\n--- gpunexd logs (data kept in {self.srv.tmp}) ---\n"
                  + self.srv.logs()[-8000:])
            self._dump_rentals()
        for a in self.agents:
            if failed:
                print(f"\n--- agent {a.state_dir} ---\n" + a.logs()[-3000:])
            a.cleanup(keep=failed)
        self.srv.cleanup(keep=failed)

    def _dump_rentals(self):
        """The rentals with their workloads as the database has them (a PostgreSQL
        database is dropped after the test)."""
        try:
            rows = self.srv.backend.query(
                "SELECT r.id, r.state, r.end_reason, r.billed_seconds, r.workload_id, w.state, "
                "COALESCE(w.end_reason, ''), COALESCE(w.container_id, '') FROM rentals r "
                "JOIN workloads w ON w.id = r.workload_id ORDER BY r.created_at")
        except Exception as e:  # diagnostics only
            print(f"(no rentals dump: {e})")
            return
        print("--- rentals (id, state, end_reason, billed, workload, its state, its end, "
              "container) ---")
        for row in rows:
            print(" ".join(str(v) for v in row))

    def _cleanup_engines(self):
        left = []
        for d in self.engines:
            left += d.stop(keep_log=self._outcome_failed())
        self.assertEqual(left, [], "the private engines left things behind")

    # -- chaos

    def chaos(self, kills, lo, hi):
        """A thread that SIGKILLs gpunexd `kills` times, each after a random lo..hi
        seconds, and starts it again after 0..1 s (it ends early when the test does)."""
        def run():
            for i in range(kills):
                if self.chaos_stop.wait(self.rng.uniform(lo, hi)):
                    return
                self.srv.kill()
                self.kills.append(time.monotonic())
                time.sleep(self.rng.uniform(0, 1.0))
                self.srv.start(timeout=60)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.killers.append(t)
        return t

    def in_threads(self, jobs, workers=10):
        """Runs every job (a function) in `workers` threads; returns the exceptions."""
        q = collections.deque(jobs)
        errors, lock = [], threading.Lock()

        def work():
            while True:
                with lock:
                    if not q:
                        return
                    job = q.popleft()
                try:
                    job()
                except Exception as e:  # reported together
                    with lock:
                        errors.append(repr(e))

        ts = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
        for t in ts:
            t.start()
        return ts, errors

    # -- the test

    def test_kills_while_50_rentals_are_metered(self):
        srv = self.srv
        admin = srv.admin()
        provs = []
        # Both agents start before either is waited for: their network isolation checks
        # (on two engines) run side by side.
        started = []
        for i, ((tier, price, bps), dock) in enumerate(zip(PROVIDERS, self.engines)):
            prov, token, _ = provider_with_agent_token(srv, admin, name=f"Crash{i}", tier=tier,
                                                       priced=False)
            set_prices(prov, {L4: price})
            agent = DockerAgent(srv, token, f"{L4}:{GPUS_PER_MACHINE}", dock, name=f"crash{i}")
            self.agents.append(agent)
            agent.start()
            started.append((prov, price, bps, dock))
        for prov, price, bps, dock in started:
            mid = wait_machine_listed(admin, prov, GPUS_PER_MACHINE)
            offer = offer_of(admin, mid, min_free=GPUS_PER_MACHINE)
            self.assertEqual(offer["price_micro"], price)
            provs.append(dict(user=prov, machine=mid, offer=offer["id"], price=price, bps=bps,
                              dock=dock))
        customers = []
        for i in range(CUSTOMERS):
            c = srv.user(f"Crash Customer{i}")
            r = admin.c.post(f"{API}/admin/credits", {"user_id": c.id,
                                                       "amount_micro": FIRST_CREDIT,
                                                       "reference": f"first credit {i}"})
            self.assertStatus(r, 201)
            customers.append(c)

        # --- phase 1: creating the rentals (and a second credit each) while gpunexd dies
        plan = [(i, customers[i % CUSTOMERS], provs[i % len(provs)]) for i in range(N_RENTALS)]
        created = {}  # i -> rental id
        lock = threading.Lock()

        def create(i, cust, p):
            pause = self.rng.uniform(0.1, 0.8)  # spread over the first kills

            def job():
                time.sleep(pause)
                r = send(cust.c, "POST", f"{API}/rentals",
                         {"offer_id": p["offer"], "gpus": 1, "image": BUSYBOX_REF,
                          "command": LONG_COMMAND}, key=f"crash-rent-{i}", ok=(201,))
                assert r.status == 201, f"rental {i}: {r!r}"
                with lock:
                    created[i] = r.body["id"]
            return job

        def credit_again(i, cust):
            def job():
                r = send(admin.c, "POST", f"{API}/admin/credits",
                         {"user_id": cust.id, "amount_micro": CHAOS_CREDIT,
                          "reference": f"second credit {i}"}, key=f"crash-credit-{i}", ok=(201,))
                assert r.status == 201, f"credit {i}: {r!r}"
            return job

        jobs = [create(i, c, p) for i, c, p in plan]
        jobs[10:10] = [credit_again(i, c) for i, c in enumerate(customers)]
        killer = self.chaos(2, 0.3, 2.5)
        workers, errors = self.in_threads(jobs)
        for t in workers:
            t.join(RETRY_FOR_S + 60)
        killer.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(len(created), N_RENTALS)
        self.assertEqual(len(set(created.values())), N_RENTALS, "one rental per create")

        # --- phase 2: running and metered while gpunexd dies twice more
        killer = self.chaos(2, 1.0, 4.0)

        # A rental that ends on its own before it is stopped is a failure, reported at the
        # end (check_everything: every rental ends as stopped by its customer), after the
        # money has been checked on all of them.
        # So is one that never gets to running although its container runs: it is
        # recorded here, and the test goes on to stop and check everything first.
        def not_running():
            out = {}
            for rid in created.values():
                r = read(admin.c, f"{API}/rentals/{rid}")
                if r["state"] not in ("running", "ended"):
                    out[rid] = r["state"]
            return out

        def wait_all_running(timeout):
            deadline = time.monotonic() + timeout
            while True:
                left = not_running()
                if not left or time.monotonic() > deadline:
                    return left
                time.sleep(1.0)

        wait_all_running(120)
        killer.join(60)
        stuck = wait_all_running(120)
        time.sleep(3)

        # --- phase 3: stopping every rental while gpunexd dies twice more
        def stop(i, cust, rid):
            # A stop whose answer was lost in a kill is run again once its claim's lease
            # runs out, and then finds the rental ending (409): stopped all the same.
            def job():
                deadline = time.monotonic() + RETRY_FOR_S
                if read(cust.c, f"{API}/rentals/{rid}")["state"] == "ended":
                    return  # ended by itself (a failure check_everything reports)
                while True:
                    r = send(cust.c, "POST", f"{API}/rentals/{rid}/stop",
                             key=f"crash-stop-{i}", ok=(200, 409))
                    if r.status == 200:
                        return
                    assert r.status == 409, f"stop {rid}: {r!r}"
                    state = read(cust.c, f"{API}/rentals/{rid}")["state"]
                    if state in ("ending", "ended"):
                        return
                    assert time.monotonic() < deadline, f"stop {rid}: {r!r}, still {state}"
                    time.sleep(0.3)
            return job

        killer = self.chaos(2, 0.5, 3.0)
        workers, errors = self.in_threads([stop(i, c, created[i]) for i, c, _ in plan])
        for t in workers:
            t.join(RETRY_FOR_S + 60)
        killer.join(60)
        self.assertEqual(errors, [])
        self.assertGreaterEqual(len(self.kills), 6)

        def all_ended():
            return all(read(admin.c, f"{API}/rentals/{rid}")["state"] == "ended"
                       for rid in created.values()) or None

        wait_until(all_ended, 120, "every rental ended", interval=1.0)
        # Nothing moves any more: a last restart, then the final figures.
        srv.kill()
        srv.start()
        self.check_everything(admin, provs, customers, plan, created, stuck)

    def check_everything(self, admin, provs, customers, plan, created, stuck):
        q = self.srv.backend.query
        rentals = {rid: read(admin.c, f"{API}/rentals/{rid}") for rid in created.values()}
        by_offer = {p["offer"]: p for p in provs}
        # Exactly the 50, billed by the formula.
        self.assertEqual(q("SELECT COUNT(*) FROM rentals"), [(N_RENTALS,)])
        for i, cust, p in plan:
            r = rentals[created[i]]
            with self.subTest(rental=r["id"]):
                self.assertEqual(r["offer_id"], p["offer"])
                self.assertEqual((r["price_micro"], r["fee_bps"], r["gpus"]),
                                 (p["price"], p["bps"], 1), r)
                charged, fee, prov = expected_money(r)
                self.assertEqual((r["charged_micro"], r["fee_micro"], r["provider_micro"]),
                                 (charged, fee, prov), r)
                if r["running_at"]:
                    ran = (parse_time(r["ended_at"]) - parse_time(r["running_at"])).total_seconds()
                    self.assertLessEqual(r["billed_seconds"], ran + 1, r)
                else:
                    self.assertEqual(r["billed_seconds"], 0, r)
                self.assertEqual(r["machine_id"], p["machine"])
        # The ledger's own check.
        chk = read(admin.c, f"{API}/admin/ledger/check")
        self.assertEqual((chk["ok"], chk["sum_micro"], chk["mismatches"]), (True, 0, []), chk)
        # The database: ids, per-rental sums, the rentals table as the API shows it.
        self.assertEqual(q("SELECT id, COUNT(*) FROM ledger_transfers GROUP BY id "
                           "HAVING COUNT(*) > 1"), [])
        sums = collections.defaultdict(int)
        for rid, kind, amount in q("SELECT rental_id, kind, SUM(amount) FROM ledger_transfers "
                                   "WHERE rental_id IS NOT NULL GROUP BY rental_id, kind"):
            sums[(rid, kind)] = amount
        for rid, r in rentals.items():
            with self.subTest(rental=rid):
                self.assertEqual(sums[(rid, "usage_fee")], r["fee_micro"], rid)
                self.assertEqual(sums[(rid, "usage_provider")], r["provider_micro"], rid)
                self.assertEqual(sums[(rid, "usage_fee")] + sums[(rid, "usage_provider")],
                                 r["charged_micro"], rid)
                self.assertEqual(sums[(rid, "refund_fee")] + sums[(rid, "refund_provider")],
                                 r["refunded_micro"], rid)
        kinds = {k for (_, k) in sums}
        self.assertLessEqual(kinds, {"usage_fee", "usage_provider", "refund_fee",
                                     "refund_provider"}, kinds)
        rows = q("SELECT id, billed_seconds, charged_micro, fee_micro, provider_micro "
                 "FROM rentals")
        self.assertEqual(sorted(tuple(int(v) if i else v for i, v in enumerate(row))
                                for row in rows),
                         sorted((r["id"], r["billed_seconds"], r["charged_micro"],
                                 r["fee_micro"], r["provider_micro"])
                                for r in rentals.values()))
        # Customers: credited exactly twice; balance + charged − refunded = credited.
        for ci, cust in enumerate(customers):
            with self.subTest(customer=cust.id):
                acct = f"customer:{cust.id}"
                credits = q("SELECT amount FROM ledger_transfers WHERE kind = 'operator_credit' "
                            "AND credit_account = ?", (acct,))
                self.assertEqual(sorted(a for (a,) in credits),
                                 sorted([FIRST_CREDIT, CHAOS_CREDIT]), credits)
                credited = FIRST_CREDIT + CHAOS_CREDIT
                mine = [r for r in rentals.values()
                        if r["id"] in {created[i] for i, c, _ in plan if c is cust}]
                self.assertEqual(len(mine), N_RENTALS // CUSTOMERS)
                charged = sum(r["charged_micro"] for r in mine)
                refunded = sum(r["refunded_micro"] for r in mine)
                stored = q("SELECT balance FROM ledger_accounts WHERE id = ?", (acct,))
                self.assertEqual(len(stored), 1, stored)
                self.assertEqual(stored[0][0] + charged - refunded, credited)
                api = read(cust.c, f"{API}/me/balance")["balance_micro"]
                self.assertEqual(api, stored[0][0])
        # Providers and the platform hold exactly their parts.
        fees = 0
        for p in provs:
            mine = [r for r in rentals.values() if r["offer_id"] == p["offer"]]
            pid = p["user"].id
            held = q("SELECT COALESCE(SUM(balance), 0) FROM ledger_accounts WHERE id IN (?, ?)",
                     (f"provider_pending:{pid}", f"provider_available:{pid}"))
            refunds = sum(sums[(r["id"], "refund_provider")] for r in mine)
            self.assertEqual(held[0][0], sum(r["provider_micro"] for r in mine) - refunds,
                             f"earnings of {pid}")
            fees += sum(r["fee_micro"] - sums[(r["id"], "refund_fee")] for r in mine)
        self.assertEqual(sorted(by_offer), sorted({r["offer_id"] for r in rentals.values()}))
        commission = q("SELECT balance FROM ledger_accounts WHERE id = 'platform_commission'")
        self.assertEqual(commission, [(fees,)])
        # No container left behind.
        for p in provs:
            wait_until(lambda: not p["dock"].containers("io.gpunex.managed=true"), 30,
                       f"no container left on {p['machine']}'s engine")
        # Each rental ran until its customer stopped it: none was lost to a kill.
        reasons = collections.Counter((r["end_reason"], r["end_party"]) for r in rentals.values())
        early = [(r["id"], r["end_reason"], r["end_party"], r["detail"])
                 for r in rentals.values() if (r["end_reason"], r["end_party"]) !=
                 ("stopped", "customer")]
        self.assertEqual(reasons, {("stopped", "customer"): N_RENTALS},
                         f"rentals that ended before their customer stopped them: {early}")
        self.assertEqual(stuck, {}, "rentals that never got to running within 240 s of their "
                                    "creation (their containers ran: see the agents' logs)")
        for r in rentals.values():
            self.assertGreater(r["billed_seconds"], 0, r)


class RentalsCrashSqliteTest(RentalsCrashMixin, unittest.TestCase):
    BACKEND = "sqlite"


class RentalsCrashPostgresTest(RentalsCrashMixin, unittest.TestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
