"""Earnings and payouts (issue 15) end to end: a real gpunexd whose providers earn from real
rentals (real gpunex-agents with EMULATED L4s, their containers in a private Docker engine)
and are paid by payout runs in USDC on a Solana test node (tests/solana/rpc-front.mjs:
LiteSVM with the real SPL Token, Associated Token Account and Memo programs) and by SEPA
(pain.001) and ACH (NACHA) files. Time is moved with the test clock
(GPUNEX_TEST_CLOCK_FILE) across the 24 h earnings hold, the 48 h hold after a change of
payout details, and into the month after next.

One gpunexd, one chain, one engine per backend, and four providers who each rent out 16
L4s (two rentals of 8) at an odd price near 900 USDC per GPU-hour to one customer for a
few seconds:
  A  USDC on Solana to a fresh wallet (its USDC token account does not exist yet), weekly;
  B  SEPA to DE89370400440532013000, weekly, threshold 1,000 USDC (carried over at first);
  C  ACH (routing 011000015, account 000123456789, checking), weekly, its details changed
     after the first setting (held 48 h); an ACH fee of 0.25 USDC;
  D  USDC on Solana, monthly.
The platform's wallet starts without USDC and is funded just in time.
It checks:
- GET /providers/me/earnings (group model, gpu, day; CSV) against the rentals' money
  (charged, fee, provider_micro) and the ledger: pending before the hold, available after;
- payout settings: the password required, the associated token account (@solana/spl-token
  derives it again), no hold on a first method, a hold of 48 h on a change;
- weekly run 1, started by six requests at once (one run): A paid (the token account
  created, the balance up by exactly net_micro, one transaction with the memo
  "gpunex payout <id>" whose signature is the payout's; its lines, CSV, statements),
  B carried over (its balance stays available), C held;
- weekly run 2 (a week or more later, the hold over), started without a EUR rate: the
  NACHA file is written, the SEPA line waits until the run is started again with the rate
  0.92; B paid by a pain.001 file (xmllint against pain.001.001.09.xsd, CtrlSum =
  amount_minor / 100), C by a NACHA file (bankcheck.check_nacha: totals, hash, check
  digits); banks pay whole cents, the rest stays available; the files as downloaded are
  the ones in files_dir; marked sent, B paid by the bank, C returned by it (the money
  available again), retried into a second file, paid;
- monthly: the first weekday of a month configured as a holiday is refused as as_of
  (422 naming as_of); gpunexd restarted with automatic_runs makes the monthly run for the
  next business day (and the weekly one for that Monday: only carry-overs) by itself; it
  finds the wallet empty: D waits for funds (GET /admin/payout-wallet short, needed_micro;
  the admin told once) and is paid once it is funded;
- throughout: provider_paid of each provider = what reached them, in_payment 0, the
  emails of each change and payout, and GET /admin/ledger/check ok.

Needs root, dockerd and busybox-static (skips otherwise), node 20 (tests/solana/setup.sh
installs the chain's packages), xmllint and Debian's python3-stdnum (/usr/bin/python3);
GPUNEX_AGENT names the agent. Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import csv
import datetime as dt
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET

import bankcheck
import dockerenv
from harness import (API, AUTH_FOR_TESTS, PASSWORD, PG_SKIP_REASON, PG_URL, START_TIMEOUT_S,
                     ApiAssertions, Client, free_port, provider_with_agent_token, set_prices,
                     source_dir, wait_until)
from solana_front import NODE, SOLANA_DIR, SolanaFront
from test_rentals import (BUSYBOX_REF, L4, LONG_COMMAND, USDC, DockerAgent, FixedPortGpunexd,
                          credit, expected_money, offer_of, wait_ended, wait_machine_listed,
                          wait_running)

# Per GPU-hour, odd on purpose: the floors of the money formula and the bank's whole cents
# leave remainders (about 260 000 micro-USDC per GPU-second).
PRICE = 937_777_777
GPUS_PER_RENTAL = 8         # the most one rental may have
RENTALS = 2                 # per machine, at once
GPUS = GPUS_PER_RENTAL * RENTALS  # per machine, all rented: 4.2 USDC a second, 3.3 to the provider
RENT_S = 5                  # seconds each rental runs (at least)
THRESHOLD = 10 * USDC       # the platform's weekly threshold ([payouts] threshold_micro)
ACH_FEE = 250_000           # 0.25 USDC per ACH payout
EUR_RATE = "0.92"
EUR_RATE_PPM = 920_000
HOLD_S = 48 * 3600
DAY = dt.timedelta(days=1)
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"

SEPA_IBAN = "DE89370400440532013000"
PLATFORM_IBAN = "DE75512108001245126199"
ACH_ROUTING = "011000015"
ACH_ACCOUNT = "000123456789"
ACH_FIRST_ACCOUNT = "000987654321"
ODFI = "121000358"


def xsd_path():
    return os.path.join(source_dir(), "src", "platform", "bank", "pain.001.001.09.xsd")


def utcnow():
    return dt.datetime.now(dt.timezone.utc)


def parse_time(s):
    if s is None:
        return None
    return dt.datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s)


def midnight(d):
    return dt.datetime(d.year, d.month, d.day, tzinfo=dt.timezone.utc)


def monday_on_or_before(d):
    return d - dt.timedelta(days=d.weekday())


def first_weekday_of_next_month(d):
    first = (d.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
    while first.weekday() >= 5:
        first += DAY
    return first


def next_weekday(d):
    d += DAY
    while d.weekday() >= 5:
        d += DAY
    return d


def associated_token_address(owner, mint):
    """The associated token account as @solana/spl-token derives it (independent of
    gpunexd's derivation)."""
    script = ("import {getAssociatedTokenAddressSync} from '@solana/spl-token';"
              "import {PublicKey} from '@solana/web3.js';"
              "const [o, m] = process.argv.slice(1);"
              "console.log(getAssociatedTokenAddressSync(new PublicKey(m), new PublicKey(o))"
              ".toBase58());")
    r = subprocess.run([NODE, "--input-type=module", "-e", script, owner, mint], cwd=SOLANA_DIR,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"spl-token: {r.stderr}")
    return r.stdout.strip()


# --------------------------------------------------------------------------- the fixture


class TestClock:
    """The file GPUNEX_TEST_CLOCK_FILE names: gpunexd's clock is the system clock plus the
    seconds it holds. Only ever moved forward, and only while no rental runs."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self._write()

    def _write(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{self.offset}\n")
        os.replace(tmp, self.path)

    def now(self):
        return utcnow() + dt.timedelta(seconds=self.offset)

    def move_to(self, when):
        """gpunexd's clock at `when` (an aware datetime) now."""
        offset = math.ceil((when - utcnow()).total_seconds())
        assert offset >= self.offset, f"the clock moves forward only ({offset} < {self.offset})"
        self.offset = offset
        self._write()
        time.sleep(0.2)  # gpunexd re-reads the file every 50 ms

    def advance(self, seconds):
        self.move_to(self.now() + dt.timedelta(seconds=seconds))


class GpunexdDied(Exception):
    """gpunexd exited while it was being started (a crash point reached early)."""


class _StartClient(Client):
    """The client Gpunexd.start polls /readyz with: it gives up at once when the process
    has exited, rather than at the start timeout."""

    def __init__(self, srv):
        super().__init__(srv.port)
        self.srv = srv

    def request(self, *args, **kw):
        rc = self.srv.proc.poll() if self.srv.proc else None
        if rc is not None:
            raise GpunexdDied(f"gpunexd exited with {rc} while starting")
        return super().request(*args, **kw)


class PayoutsGpunexd(FixedPortGpunexd):
    """A gpunexd on a fixed port with the test clock, and the crash point named by
    `crash_at` (GPUNEX_TEST_CRASH_AT) at its next start, if any. start() raises
    GpunexdDied when the process exits before it is ready."""

    def __init__(self, port, clock_path, **kw):
        self.clock_path = clock_path
        self.crash_at = None
        self._starting = False
        super().__init__(port, **kw)

    def start(self, timeout=START_TIMEOUT_S):
        self._starting = True
        try:
            return super().start(timeout)
        finally:
            self._starting = False

    def client(self, token=None, source=None):
        if self._starting:
            return _StartClient(self)
        return super().client(token, source)

    def env(self):
        env = super().env()
        env["GPUNEX_TEST_CLOCK_FILE"] = self.clock_path
        if self.crash_at:
            env["GPUNEX_TEST_CRASH_AT"] = self.crash_at
        return env


def payouts_toml(front, keypair_path, batch=200, holidays=()):
    """The gpunexd tables of these tests: fast rentals and releases, the chain of `front`,
    SEPA and ACH offered, no automatic runs."""
    auth = "\n".join(AUTH_FOR_TESTS)
    hol = ", ".join(json.dumps(h) for h in holidays)
    return f"""
[auth]
{auth}
session_ttl_hours = 2160
session_idle_minutes = 129600

[fleet]
heartbeat_interval_s = 1
# Not 3: on a loaded machine (the end-to-end tests run in more slots than cores) a
# heartbeat can come late, and a machine offline refuses the rentals these tests make.
offline_after_s = 8

[rentals]
meter_interval_s = 1
agent_lost_grace_s = 5
sweep_ms = 200
release_interval_s = 1

[solana]
rpc_url = {json.dumps(front.url)}
keypair = {json.dumps(keypair_path)}
usdc_mint = {json.dumps(front.mint)}
commitment = "confirmed"
rpc_timeout_ms = 10000

[payouts]
threshold_micro = {THRESHOLD}
automatic_runs = false
loop_ms = 100
batch = {batch}
ach_fee_micro = {ACH_FEE}
sepa_name = "gpunex Test Platform GmbH"
sepa_iban = "{PLATFORM_IBAN}"
sepa_bic = "BYLADEM1001"
ach_destination_routing = "{ACH_ROUTING}"
ach_destination_name = "FED RESERVE BANK"
ach_origin = "{ODFI}"
ach_origin_name = "GPUNEX ORIGIN BANK"
ach_company_name = "GPUNEX"
ach_company_id = "1234567890"
ach_odfi_routing = "{ODFI}"

[review]
holidays = [{hol}]
"""


ENV = {"dockerd": None}


def setUpModule():
    dockerenv.require_docker()
    dockerenv.agent_binary()
    if not shutil.which("xmllint"):
        raise unittest.SkipTest("xmllint is missing (Debian: libxml2-utils)")
    if not shutil.which(NODE):
        raise unittest.SkipTest(f"{NODE} is missing: the Solana test node needs node 20")
    d = dockerenv.TestDockerd().start()
    ENV["dockerd"] = d
    try:
        d.import_busybox(BUSYBOX_REF)
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    d = ENV["dockerd"]
    if d is None:
        return
    ENV["dockerd"] = None
    left = d.stop()
    if left:
        raise AssertionError("the private dockerd left things behind: " + "; ".join(left))


class PayoutsFixture(ApiAssertions):
    """The pieces of a payouts test: the chain, the platform's wallet, the test clock, one
    gpunexd, providers with machines in the module's engine, and their earnings."""

    BACKEND = "sqlite"
    BATCH = 200
    FIRST_CRASH_AT = None  # GPUNEX_TEST_CRASH_AT of gpunexd's first start
    PLATFORM_USDC = 100_000 * USDC  # the platform wallet's USDC at the start

    def holidays(self):
        return ()

    def setUp(self):
        if self.BACKEND == "postgresql" and not PG_URL:
            self.skipTest(PG_SKIP_REASON)
        self.dock = ENV["dockerd"]
        self.agents = []
        self.front = SolanaFront().start()
        self.addCleanup(self._cleanup_front)
        self.platform = self.front.new_wallet()
        self.front.airdrop(self.platform["public_key"], 20 * 10**9)
        self.front.mint_usdc(self.platform["public_key"], self.PLATFORM_USDC)
        self.platform_usdc = self.PLATFORM_USDC
        keypair = os.path.join(self.front.tmp, "platform-key.json")
        fd = os.open(keypair, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self.platform["secret_key"], f)
        self.clock_dir = tempfile.mkdtemp(prefix="gpunex-clock-")
        self.clock = TestClock(os.path.join(self.clock_dir, "clock"))
        self.srv = PayoutsGpunexd(free_port(), self.clock.path, backend_name=self.BACKEND,
                                  smtp_url=None, root_toml="allow_emulated_gpus = true",
                                  extra_toml=payouts_toml(self.front, keypair, self.BATCH,
                                                          self.holidays()))
        self.addCleanup(self._cleanup_server)
        self.srv.crash_at = self.FIRST_CRASH_AT
        self.srv.start()
        self.admin = self.srv.admin()

    def _cleanup_front(self):
        failed = self._outcome_failed()
        if failed:
            print("\n--- rpc-front log ---\n" + self.front.log_text()[-3000:])
        self.front.stop()
        shutil.rmtree(self.front.tmp, ignore_errors=True)
        shutil.rmtree(self.clock_dir, ignore_errors=True)

    def _cleanup_server(self):
        failed = self._outcome_failed()
        if failed:
            print(f"\n--- gpunexd logs (data kept in {self.srv.tmp}) ---\n"
                  + self.srv.logs()[-8000:])
        for a in self.agents:
            if failed:
                print(f"\n--- agent {a.state_dir} ---\n" + a.logs()[-2000:])
            a.cleanup(keep=failed)
        if self.dock:
            if failed:
                print("\n--- dockerd log ---\n" + self.dock.log_tail(2000))
            self.dock.remove_all()
        self.srv.cleanup(keep=failed)

    # -- providers and their earnings

    def providers(self, names):
        """Approved providers pricing L4 at PRICE, each with an agent of GPUS EMULATED L4s
        in the module's engine, online and listed. All agents connect before any rental
        runs: an agent removes the managed containers it does not know when it connects."""
        provs = []
        for name in names:
            prov, token, _ = provider_with_agent_token(self.srv, self.admin, name=name,
                                                       priced=False)
            set_prices(prov, {L4: PRICE})
            agent = DockerAgent(self.srv, token, f"{L4}:{GPUS}", self.dock, name=name.lower())
            self.agents.append(agent)
            agent.start()
            prov.agent = agent
            prov.name = name
            provs.append(prov)
        for prov in provs:
            prov.machine_id = wait_machine_listed(self.admin, prov, GPUS)
            prov.offer = offer_of(self.admin, prov.machine_id, min_free=GPUS)
            self.assertEqual(prov.offer["price_micro"], PRICE)
        return provs

    def earn(self, provs, lost=()):
        """One customer rents every GPU of each provider's machine at once (RENTALS rentals
        of GPUS_PER_RENTAL each) for RENT_S seconds and stops, except on the machines of
        `lost`, whose agents are SIGKILLed instead (their rentals end as agent_lost, the
        provider's fault: refunded in full). Returns {provider id: [the ended rentals]};
        the agents are stopped afterwards (nothing else runs on them)."""
        cust = self.srv.user("Carla Customer")
        credit(self.admin, cust.id, 10_000 * USDC, reference="payouts e2e")
        rids = {}
        for p in list(provs) + list(lost):
            for _ in range(RENTALS):
                r = cust.c.post(f"{API}/rentals", {"offer_id": p.offer["id"],
                                                   "gpus": GPUS_PER_RENTAL,
                                                   "image": BUSYBOX_REF,
                                                   "command": LONG_COMMAND,
                                                   "max_duration_s": 60})
                self.assertStatus(r, 201)
                rids.setdefault(p.id, []).append(r.body["id"])
        for ids in rids.values():
            for rid in ids:
                wait_running(cust, rid)
        time.sleep(RENT_S)
        for p in lost:
            p.agent.kill()
        for p in provs:
            for rid in rids[p.id]:
                self.assertStatus(cust.c.post(f"{API}/rentals/{rid}/stop"), 200)
        ended = {pid: [wait_ended(cust, rid, timeout=60) for rid in ids]
                 for pid, ids in rids.items()}
        for p in provs:
            rs = ended[p.id]
            for r in rs:
                self.assertEqual((r["end_reason"], r["end_party"]), ("stopped", "customer"), r)
                self.assertEqual(r["refunded_micro"], 0, r)
                charged, fee, prov_part = expected_money(r)
                self.assertEqual((r["charged_micro"], r["fee_micro"], r["provider_micro"]),
                                 (charged, fee, prov_part), r)
                self.assertGreaterEqual(r["billed_seconds"], RENT_S, r)
            self.assertGreater(sum(r["provider_micro"] for r in rs), 1.5 * THRESHOLD, rs)
        for p in lost:
            for r in ended[p.id]:
                self.assertEqual((r["end_reason"], r["end_party"]), ("agent_lost", "provider"), r)
                self.assertGreater(r["charged_micro"], 0, r)
                self.assertEqual(r["refunded_micro"], r["charged_micro"], r)
        # The lost machines' containers outlived their agents: once the others' are gone,
        # those agents come back and remove them.
        managed = lambda: self.dock.containers("io.gpunex.managed=true")  # noqa: E731
        wait_until(lambda: len(managed()) == RENTALS * len(lost), 30,
                   "the stopped rentals' containers removed")
        for p in provs:
            p.agent.stop()
        for p in lost:
            p.agent.start()
        wait_until(lambda: not managed(), 30, "the lost rentals' containers removed")
        for a in self.agents:
            a.stop()
        return ended

    # -- reading

    def q(self, sql, params=()):
        return self.srv.backend.query(sql, params)

    def get(self, user, path, **kw):
        r = user.c.get(f"{API}{path}", **kw)
        self.assertStatus(r, 200, path)
        return r.body

    def earnings(self, prov, **query):
        return self.get(prov, "/providers/me/earnings", query=query or None)

    def totals(self, prov):
        return self.earnings(prov)["totals"]

    def account(self, kind, owner):
        rows = self.q("SELECT balance FROM ledger_accounts WHERE id = ?", (f"{kind}:{owner}",))
        return rows[0][0] if rows else 0

    def assertLedgerOk(self):
        chk = self.get(self.admin, "/admin/ledger/check")
        self.assertIs(chk["ok"], True, chk)
        self.assertEqual(chk["sum_micro"], 0, chk)
        self.assertEqual(chk["mismatches"], [], chk)

    def run_detail(self, run_id):
        return self.get(self.admin, f"/admin/payout-runs/{run_id}")

    def start_run(self, as_of, schedule="weekly", eur_rate=EUR_RATE, status=201):
        body = {"as_of": as_of.isoformat(), "schedule": schedule}
        if eur_rate:
            body["eur_rate"] = eur_rate
        r = self.admin.c.post(f"{API}/admin/payout-runs", body)
        self.assertStatus(r, status)
        return r.body

    def wait_run(self, run_id, states, timeout=30, what=None):
        def check():
            r = self.run_detail(run_id)
            return r if r["state"] in states else None
        return wait_until(check, timeout, what or f"run {run_id} {states}", interval=0.1)

    def payout_of(self, run, prov):
        mine = [p for p in run["payouts"] if p["provider_id"] == prov.id]
        self.assertEqual(len(mine), 1, run["payouts"])
        return mine[0]

    def provider_payout(self, prov, payout_id):
        return self.get(prov, f"/providers/me/payouts/{payout_id}")

    def memo_txs(self, payout_id):
        return [t for t in self.front.transactions() if t["memo"] == f"gpunex payout {payout_id}"]

    def put_settings(self, prov, body, status=200):
        r = prov.c.put(f"{API}/providers/me/payout-settings", body)
        self.assertStatus(r, status)
        return r.body

    def file_on_disk(self, name):
        path = os.path.join(self.srv.data_dir, "payout-files", name)
        with open(path, "rb") as f:
            return path, f.read()

    def download(self, run_id, name):
        r = self.admin.c.get(f"{API}/admin/payout-runs/{run_id}/files/{name}")
        self.assertStatus(r, 200)
        return r

    def assertSolanaPaid(self, prov, payout, wallet, before_usdc=0):
        """A payout in USDC landed once: the wallet's token account (its associated one)
        holds exactly net_micro more, one transaction carries its memo and is its
        signature, the attempts end landed."""
        self.assertEqual(payout["state"], "confirmed", payout)
        self.assertEqual((payout["currency"], payout["amount_minor"], payout["method"]["kind"]),
                         ("USDC", None, "solana"), payout)
        self.assertEqual(payout["net_micro"], payout["amount_micro"] - payout["fee_micro"])
        self.assertEqual(self.front.token_balance(wallet), before_usdc + payout["net_micro"])
        self.assertEqual(self.front.token_balance(prov.token_account),
                         before_usdc + payout["net_micro"])
        txs = self.memo_txs(payout["id"])
        self.assertEqual(len(txs), 1, txs)
        self.assertEqual(txs[0]["signature"], payout["signature"], txs)
        self.assertIsNone(txs[0]["err"], txs)
        detail = self.provider_payout(prov, payout["id"])
        self.assertEqual(detail["attempts"][-1]["state"], "landed", detail)
        self.assertEqual(detail["attempts"][-1]["signature"], payout["signature"], detail)
        return detail


# --------------------------------------------------------------------------- the test


class PayoutsMixin(PayoutsFixture):
    PLATFORM_USDC = 0  # funded as the test goes: what each Solana payout needs, just in time

    def holidays(self):
        # The monthly run is in the month after next (the weekly runs are over by then:
        # they are within 16 days of today); its first weekday is made a holiday.
        next_month = first_weekday_of_next_month(utcnow().date())
        self.holiday = first_weekday_of_next_month(next_month)
        self.month_day = next_weekday(self.holiday)
        return (self.holiday.isoformat(),)

    def test_earnings_and_payouts_by_every_method(self):
        t_start = time.monotonic()
        a, b, c, d, e = self.providers(["Ana", "Ben", "Cid", "Dora", "Eve"])
        # E's machine is lost mid-rental: its rentals are refunded in full.
        ended = self.earn([a, b, c, d], lost=[e])
        for p in (a, b, c, d, e):
            p.rentals = ended[p.id]
            p.earned = sum(r["provider_micro"] for r in p.rentals)  # none refunded
        e.earned = 0  # all refunded

        # --- earnings, pending (the 24 h hold)
        for p in (a, b, c, d):
            self.check_pending_earnings(p)
        self.check_refunded_earnings(e)
        self.assertLedgerOk()

        # --- payout settings
        a_wallet = self.front.new_wallet()["public_key"]
        d_wallet = self.front.new_wallet()["public_key"]
        self.check_settings(a, b, c, d, a_wallet, d_wallet)

        # --- the hold passes: everything available
        self.clock.advance(25 * 3600)
        for p in (a, b, c, d):
            wait_until(lambda p=p: self.totals(p)["pending_micro"] == 0, 20,
                       f"{p.name}'s earnings released")
            t = self.totals(p)
            self.assertEqual((t["pending_micro"], t["available_micro"], t["in_payment_micro"],
                              t["paid_micro"]), (0, p.earned, 0, 0), t)
        self.assertLedgerOk()

        # --- weekly run 1: A paid in USDC, B carried over, C held
        self.week_one(a, b, c, d)
        # --- weekly run 2, a week later: B by SEPA, C by ACH (failed once, retried)
        self.week_two(a, b, c, d)
        # --- monthly: a holiday refused, the next business day pays D
        self.monthly(a, b, c, d)

        # --- the end: everyone paid once, in full (less what a bank cannot pay)
        for p in (a, b, c, d):
            t = self.totals(p)
            self.assertEqual(t["pending_micro"] + t["in_payment_micro"], 0, t)
            self.assertEqual(t["paid_micro"] + t["available_micro"],
                             p.earned - (ACH_FEE if p is c else 0), (p.name, t))
            self.assertEqual(self.account("provider_paid", p.id), t["paid_micro"])
        self.assertEqual(self.front.token_balance(self.platform["public_key"]),
                         self.platform_usdc - self.totals(a)["paid_micro"]
                         - self.totals(d)["paid_micro"])
        sigs = [t["signature"] for t in self.front.transactions()]
        self.assertEqual(len(sigs), len(set(sigs)))
        memos = [t["memo"] for t in self.front.transactions() if t["memo"]]
        self.assertEqual(len(memos), 2, memos)
        # Each change of details, each payout and the bank's return was announced by email.
        self.assertEqual(self.payout_mails(a), ["payouts.method_changed", "payouts.paid"])
        self.assertEqual(self.payout_mails(b), ["payouts.method_changed", "payouts.paid"])
        self.assertEqual(self.payout_mails(c), ["payouts.method_changed", "payouts.method_changed",
                                                "payouts.failed", "payouts.paid"])
        self.assertEqual(self.payout_mails(d), ["payouts.method_changed", "payouts.paid"])
        self.assertLedgerOk()
        print(f"\n({self.BACKEND}: {time.monotonic() - t_start:.1f} s)")

    def fund_platform(self, micro):
        self.front.mint_usdc(self.platform["public_key"], micro)
        self.platform_usdc += micro

    def payout_mails(self, prov):
        rows = self.q("SELECT kind FROM email_outbox WHERE to_addr = ? ORDER BY created_at, id",
                      (prov.email,))
        return [r[0] for r in rows if r[0].startswith("payouts.")]

    # -- steps

    def check_pending_earnings(self, p):
        rs = p.rentals
        charged = sum(r["charged_micro"] for r in rs)
        by_model = self.earnings(p, group="model")
        t = by_model["totals"]
        self.assertEqual((t["pending_micro"], t["available_micro"], t["in_payment_micro"],
                          t["paid_micro"]), (p.earned, 0, 0, 0), t)
        self.assertEqual(by_model["period"]["schedule"], "weekly")
        self.assertIn(t["period_micro"], (p.earned, 0), t)  # 0 only across a week's end
        self.assertEqual(by_model["group"], "model")
        self.assertEqual(len(by_model["rows"]), 1, by_model)
        row = by_model["rows"][0]
        self.assertEqual((row["key"], row["rentals"], row["gpu_seconds"], row["gross_micro"],
                          row["commission_micro"], row["refunds_micro"], row["net_micro"]),
                         (L4, RENTALS,
                          sum(r["gpus"] * r["billed_seconds"] for r in rs), charged,
                          sum(r["fee_micro"] for r in rs), 0, p.earned), row)

        by_gpu = self.earnings(p, group="gpu")
        self.assertEqual(len(by_gpu["rows"]), GPUS, by_gpu["rows"])
        self.assertEqual(len({x["key"] for x in by_gpu["rows"]}), GPUS)
        for x in by_gpu["rows"]:
            self.assertTrue(x["key"].startswith(p.machine_id + "/"), x)
            self.assertEqual(x["rentals"], 1, x)
            self.assertTrue(x["label"], x)
        # Each GPU earns its rental's money split equally over the rental's GPUs.
        self.assertEqual(
            sorted((x["gpu_seconds"], x["net_micro"], x["gross_micro"]) for x in by_gpu["rows"]),
            sorted((r["billed_seconds"], r["provider_micro"] // r["gpus"],
                    r["charged_micro"] // r["gpus"]) for r in rs for _ in range(r["gpus"])))

        by_day = self.earnings(p, group="day")
        self.assertTrue(by_day["rows"])
        for x in by_day["rows"]:
            self.assertRegex(x["key"], r"^\d{4}-\d{2}-\d{2}$")
        self.assertEqual(sum(x["net_micro"] for x in by_day["rows"]), p.earned)
        self.assertEqual(sum(x["gross_micro"] for x in by_day["rows"]), charged)

        # The CSV export says the same.
        resp = p.c.get(f"{API}/providers/me/earnings", query={"group": "model", "format": "csv"})
        self.assertStatus(resp, 200)
        self.assertTrue(resp.header("Content-Type").startswith("text/csv"), resp.headers)
        self.assertIn("attachment", resp.header("Content-Disposition") or "")
        rows = list(csv.DictReader(io.StringIO(resp.raw.decode("utf-8"))))
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual({k: rows[0][k] for k in ("model", "rentals", "gpu_seconds", "gross_micro",
                                                  "commission_micro", "refunds_micro",
                                                  "net_micro")},
                         {"model": L4, "rentals": str(RENTALS),
                          "gpu_seconds": str(row["gpu_seconds"]),
                          "gross_micro": str(row["gross_micro"]),
                          "commission_micro": str(row["commission_micro"]), "refunds_micro": "0",
                          "net_micro": str(p.earned)})
        self.assertEqual(rows[0]["net_usdc"], f"{p.earned // USDC}.{p.earned % USDC:06d}")
        # The ledger holds the same: the provider's pending account.
        self.assertEqual(self.account("provider_pending", p.id), p.earned)

    def check_refunded_earnings(self, e):
        """A provider whose rentals were all refunded: gross earned, the commission given
        back, net nothing; nothing pending or available."""
        rs = e.rentals
        charged = sum(r["charged_micro"] for r in rs)
        by_model = self.earnings(e, group="model")
        t = by_model["totals"]
        self.assertEqual((t["pending_micro"], t["available_micro"], t["in_payment_micro"],
                          t["paid_micro"]), (0, 0, 0, 0), t)
        self.assertEqual(len(by_model["rows"]), 1, by_model)
        row = by_model["rows"][0]
        self.assertEqual((row["key"], row["rentals"], row["gross_micro"], row["commission_micro"],
                          row["refunds_micro"], row["net_micro"]),
                         (L4, RENTALS, charged, 0, charged, 0), row)
        resp = e.c.get(f"{API}/providers/me/earnings", query={"group": "day", "format": "csv"})
        self.assertStatus(resp, 200)
        rows = list(csv.DictReader(io.StringIO(resp.raw.decode("utf-8"))))
        self.assertEqual(sum(int(x["refunds_micro"]) for x in rows), charged, rows)
        self.assertEqual(sum(int(x["net_micro"]) for x in rows), 0, rows)
        self.assertEqual(self.account("provider_pending", e.id), 0)

    def check_settings(self, a, b, c, d, a_wallet, d_wallet):
        # Nothing set yet: weekly, the platform's threshold, no method.
        s = self.get(a, "/providers/me/payout-settings")
        self.assertEqual((s["schedule"], s["threshold_micro"], s["method"]),
                         ("weekly", THRESHOLD, None), s)
        self.assertEqual({m["kind"] for m in s["methods"] if m["offered"]},
                         {"solana", "sepa", "ach"}, s["methods"])
        self.assertEqual([m["fee_micro"] for m in s["methods"] if m["kind"] == "ach"], [ACH_FEE])
        solana = {"kind": "solana", "wallet": a_wallet}
        # A method needs the password.
        r = a.c.put(f"{API}/providers/me/payout-settings", {"method": solana})
        self.assertError(r, 422, fields=["password"])
        r = a.c.put(f"{API}/providers/me/payout-settings",
                    {"method": solana, "password": "not-the-password"})
        self.assertError(r, 422, fields=["password"])
        self.assertIsNone(self.get(a, "/providers/me/payout-settings")["method"])

        # A: a fresh wallet; its USDC token account does not exist yet.
        a.token_account = associated_token_address(a_wallet, self.front.mint)
        self.assertIsNone(self.front.call("getAccountInfo", a.token_account,
                                          {"encoding": "base64"})["value"])
        now = self.clock.now()
        s = self.put_settings(a, {"schedule": "weekly", "method": solana, "password": PASSWORD})
        self.assertEqual(s["method"]["kind"], "solana", s)
        self.assertEqual(s["method"]["wallet"], a_wallet, s)
        self.assertEqual(s["method"]["token_account"], a.token_account, s)
        self.assertEqual(s["token_account"], a.token_account, s)
        self.assertIsNone(s["hold_until"], "a first method is not held")
        self.assertLess(abs((parse_time(s["changed_at"]) - now).total_seconds()), 30, s)

        # B: SEPA (entered with spaces), and a threshold above its earnings.
        s = self.put_settings(b, {"method": {"kind": "sepa", "holder": "Ben Bauer",
                                             "iban": "DE89 3704 0044 0532 0130 00"},
                                  "threshold_micro": 1000 * USDC, "password": PASSWORD})
        self.assertEqual((s["method"]["kind"], s["method"]["iban"], s["method"]["country"],
                          s["method"]["bic"], s["threshold_micro"], s["hold_until"]),
                         ("sepa", SEPA_IBAN, "DE", None, 1000 * USDC, None), s)
        self.assertGreater(1000 * USDC, b.earned)
        self.assertFalse(s["next_payout"]["eligible"], s)

        # C: ACH, then other details: held 48 h.
        first = {"kind": "ach", "holder": "Cid Carter", "routing_number": ACH_ROUTING,
                 "account_number": ACH_FIRST_ACCOUNT, "account_type": "savings"}
        s = self.put_settings(c, {"method": first, "password": PASSWORD})
        self.assertIsNone(s["hold_until"], s)
        self.assertEqual(s["method"]["account_number_last4"], "4321", s)
        self.assertNotIn(ACH_FIRST_ACCOUNT, json.dumps(s), "the account number is masked")
        changed = dict(first, account_number=ACH_ACCOUNT, account_type="checking")
        r = c.c.put(f"{API}/providers/me/payout-settings", {"method": changed})
        self.assertError(r, 422, fields=["password"])
        now = self.clock.now()
        s = self.put_settings(c, {"method": changed, "password": PASSWORD})
        self.assertEqual((s["method"]["routing_number"], s["method"]["account_number_last4"],
                          s["method"]["account_type"]), (ACH_ROUTING, "6789", "checking"), s)
        self.assertIsNotNone(s["hold_until"], s)
        self.assertLess(abs((parse_time(s["hold_until"]) - now).total_seconds() - HOLD_S), 30, s)
        c.hold_until = parse_time(s["hold_until"])
        # The same details again change nothing (no password needed, no new hold).
        s2 = self.put_settings(c, {"method": changed})
        self.assertEqual(s2["hold_until"], s["hold_until"])

        # D: another fresh wallet, monthly.
        d.token_account = associated_token_address(d_wallet, self.front.mint)
        s = self.put_settings(d, {"schedule": "monthly",
                                  "method": {"kind": "solana", "wallet": d_wallet},
                                  "password": PASSWORD})
        self.assertEqual((s["schedule"], s["token_account"], s["hold_until"]),
                         ("monthly", d.token_account, None), s)
        a.wallet, d.wallet = a_wallet, d_wallet

    def week_one(self, a, b, c, d):
        self.w1 = monday_on_or_before(self.clock.now().date())
        # C's change was less than 48 h ago.
        self.assertLess(self.clock.now(), c.hold_until)
        # A's payout needs the platform's wallet funded: just enough, as it was empty.
        self.fund_platform(a.earned)
        # Six admins' requests at once make one run.
        answers, lock = [], threading.Lock()
        barrier = threading.Barrier(6)

        def post():
            barrier.wait()
            r = self.admin.c.post(f"{API}/admin/payout-runs",
                                  {"as_of": self.w1.isoformat(), "schedule": "weekly",
                                   "eur_rate": EUR_RATE})
            with lock:
                answers.append(r)

        threads = [threading.Thread(target=post) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([r.status for r in answers], [201] * 6, answers)
        self.assertEqual(len({r.body["id"] for r in answers}), 1, answers)
        run = answers[0].body
        self.assertEqual((run["schedule"], run["as_of"], run["eur_rate"]),
                         ("weekly", self.w1.isoformat(), "0.920000"), run)
        self.assertIn(run["state"], ("planning", "running", "done"), run)
        self.assertEqual(len(self.get(self.admin, "/admin/payout-runs")["items"]), 1)
        run = self.wait_run(run["id"], ("done",))
        counts = run["counts"]
        self.assertEqual({k: counts.get(k, 0) for k in ("planned", "waiting_funds", "submitted",
                                                        "confirmed", "failed", "carried_over",
                                                        "held", "no_method")},
                         {"planned": 0, "waiting_funds": 0, "submitted": 0, "confirmed": 1,
                          "failed": 0, "carried_over": 1, "held": 1, "no_method": 0}, run)
        self.assertEqual([p["provider_id"] for p in run["payouts"]], [a.id], run)
        self.assertEqual(run["files"], [], "no bank line in this run")
        po = self.payout_of(run, a)
        self.assertEqual((po["amount_micro"], po["fee_micro"], po["net_micro"]),
                         (a.earned, 0, a.earned), po)
        self.assertEqual(po["provider_name"], "Ana Person", po)
        self.assertEqual([x["state"] for x in po["attempts"]], ["landed"], po)
        self.assertEqual(run["total_micro"], a.earned)
        self.assertIsNotNone(run["finished_at"])
        # The token account was made by the payout and holds exactly the payout.
        acct = self.front.call("getAccountInfo", a.token_account, {"encoding": "base64"})["value"]
        self.assertIsNotNone(acct, "the payout created the token account")
        self.assertEqual(acct["owner"], TOKEN_PROGRAM, acct)
        detail = self.assertSolanaPaid(a, po, a.wallet)
        self.assertEqual([(x["n"], x["state"]) for x in detail["attempts"]], [(1, "landed")])
        self.assertEqual(sorted(detail["lines"], key=lambda x: x["rental_id"]),
                         sorted(({"rental_id": r["id"], "gpu_model": L4,
                                  "net_micro": r["provider_micro"]} for r in a.rentals),
                                key=lambda x: x["rental_id"]), detail)
        got = self.front.call("getTransaction", po["signature"],
                              {"encoding": "json", "commitment": "confirmed",
                               "maxSupportedTransactionVersion": 0})
        self.assertIsNotNone(got)
        self.assertIsNone(got["meta"]["err"], got["meta"])
        # The monthly statements: the rentals in theirs, the payout in its month's.
        rental_month = a.rentals[0]["ended_at"][:7]
        st = self.get(a, f"/providers/me/statements/{rental_month}")
        self.assertEqual((st["rentals"], st["net_micro"], len(st["lines"])),
                         (RENTALS, a.earned, RENTALS), st)
        st = self.get(a, f"/providers/me/statements/{po['created_at'][:7]}")
        self.assertEqual([x["id"] for x in st["payouts"]], [po["id"]], st)
        self.assertEqual(st["paid_micro"], po["amount_micro"], st)
        # The provider's list and CSV.
        mine = self.get(a, "/providers/me/payouts")["items"]
        self.assertEqual([x["id"] for x in mine], [po["id"]])
        resp = a.c.get(f"{API}/providers/me/payouts/{po['id']}", query={"format": "csv"})
        self.assertStatus(resp, 200)
        rows = list(csv.DictReader(io.StringIO(resp.raw.decode("utf-8"))))
        self.assertEqual(sorted((x["payout_id"], x["rental_id"], x["net_micro"]) for x in rows),
                         sorted((po["id"], r["id"], str(r["provider_micro"]))
                                for r in a.rentals), rows)
        # The ledger: A's money went available -> in payment -> paid.
        t = self.totals(a)
        self.assertEqual((t["available_micro"], t["in_payment_micro"], t["paid_micro"]),
                         (0, 0, a.earned), t)
        self.assertEqual(self.account("provider_paid", a.id), a.earned)
        self.assertEqual(self.account("provider_in_payment", a.id), 0)
        # B: carried over, its balance still available; C: held; D: monthly, not in it.
        for p in (b, c, d):
            t = self.totals(p)
            self.assertEqual((t["available_micro"], t["in_payment_micro"], t["paid_micro"]),
                             (p.earned, 0, 0), (p.name, t))
        skips = dict(self.q("SELECT provider_id, reason FROM payout_skips WHERE run_id = ?",
                            (run["id"],)))
        self.assertEqual(skips, {b.id: "carried_over", c.id: "held"})
        # C's next payout: held only if that date is still inside the hold.
        s = self.get(c, "/providers/me/payout-settings")
        nxt = midnight(dt.date.fromisoformat(s["next_payout"]["date"]))
        self.assertGreater(nxt, self.clock.now())
        if c.hold_until > nxt:
            self.assertFalse(s["next_payout"]["eligible"], s)
            self.assertIn("held until", s["next_payout"]["reason"], s)
        else:
            self.assertTrue(s["next_payout"]["eligible"], s)
        self.assertLedgerOk()

    def week_two(self, a, b, c, d):
        # A week later, or more, so that C's hold is over; B lowers its threshold below its
        # balance.
        self.w2 = self.w1 + dt.timedelta(days=7)
        while midnight(self.w2) < c.hold_until:
            self.w2 += dt.timedelta(days=7)
        self.assertLess(self.w2, self.holiday)
        self.clock.move_to(midnight(self.w2) + dt.timedelta(hours=2))
        self.assertGreater(self.clock.now(), c.hold_until)
        s = self.get(c, "/providers/me/payout-settings")
        self.assertTrue(s["next_payout"]["eligible"], s)
        s = self.put_settings(b, {"threshold_micro": THRESHOLD})
        self.assertEqual((s["threshold_micro"], s["hold_until"]), (THRESHOLD, None), s)
        b_avail, c_avail = b.earned, c.earned

        # Started without a EUR rate: the ACH file is written, the SEPA line waits for the
        # rate; the same run started again with it writes the SEPA file.
        run = self.start_run(self.w2, eur_rate=None)
        self.assertIsNone(run["eur_rate"], run)
        run = wait_until(lambda: (lambda x: x if x["state"] == "waiting" and x["files"]
                                  else None)(self.run_detail(run["id"])), 15,
                         "run 2 waiting for the bank and the rate")
        self.assertEqual([f["kind"] for f in run["files"]], ["nacha"], run["files"])
        time.sleep(0.5)  # more passes: still no SEPA file without a rate
        self.assertEqual(len(self.run_detail(run["id"])["files"]), 1)
        self.assertIsNone(self.payout_of(self.run_detail(run["id"]), b)["amount_minor"])
        again = self.start_run(self.w2)
        self.assertEqual((again["id"], again["eur_rate"]), (run["id"], "0.920000"), again)
        run = wait_until(lambda: (lambda x: x if len(x["files"]) == 2 and x["state"] == "waiting"
                                  else None)(self.run_detail(run["id"])), 15,
                         "the SEPA file written with the rate")
        self.assertEqual(sorted(p["provider_id"] for p in run["payouts"]), sorted([b.id, c.id]))
        self.assertEqual(run["counts"]["planned"], 2, run)
        bp, cp = self.payout_of(run, b), self.payout_of(run, c)
        # Banks pay whole cents; the rest stays available.
        self.assertEqual((bp["amount_micro"], bp["fee_micro"]),
                         (b_avail - b_avail % 10_000, 0), bp)
        self.assertEqual((cp["amount_micro"], cp["fee_micro"]),
                         (c_avail - c_avail % 10_000, ACH_FEE), cp)
        b_minor = bp["net_micro"] * EUR_RATE_PPM // 1_000_000 // 10_000
        self.assertEqual((bp["currency"], bp["fx_rate"], bp["amount_minor"]),
                         ("EUR", "0.920000", b_minor), bp)
        c_minor = (cp["amount_micro"] - ACH_FEE) // 10_000
        self.assertEqual((cp["currency"], cp["amount_minor"]), ("USD", c_minor), cp)
        self.assertEqual(bp["bank_reference"], bp["id"].replace("_", "-"), bp)
        for p in (bp, cp):
            self.assertEqual(p["state"], "planned", p)
            self.assertIsNone(p["signature"], p)
        t = self.totals(b)
        self.assertEqual((t["available_micro"], t["in_payment_micro"]),
                         (b_avail % 10_000, bp["amount_micro"]), t)

        files = {f["name"]: f for f in run["files"]}
        sepa_name, ach_name = f"{run['id']}-sepa.xml", f"{run['id']}-ach.txt"
        self.assertEqual(sorted(files), sorted([sepa_name, ach_name]), files)
        self.assertEqual((files[sepa_name]["kind"], files[sepa_name]["currency"],
                          files[sepa_name]["lines"], files[sepa_name]["total_minor"],
                          files[sepa_name]["state"]), ("pain.001", "EUR", 1, b_minor, "written"))
        self.assertEqual((files[ach_name]["kind"], files[ach_name]["currency"],
                          files[ach_name]["lines"], files[ach_name]["total_minor"],
                          files[ach_name]["state"]), ("nacha", "USD", 1, c_minor, "written"))

        # pain.001: downloaded = on disk, valid against the schema, the sums right.
        resp = self.download(run["id"], sepa_name)
        self.assertTrue(resp.header("Content-Type").startswith("application/xml"), resp.headers)
        path, on_disk = wait_until(lambda: self._file_or_none(sepa_name), 10,
                                   f"{sepa_name} in files_dir")
        self.assertEqual(resp.raw, on_disk)
        self.assertEqual(hashlib.sha256(on_disk).hexdigest(), files[sepa_name]["sha256"])
        pain = bankcheck.check_pain001(path, xsd_path())
        self.assertEqual(pain["transactions"], 1, pain)
        self.assertEqual(pain["ctrl_sum_cents"], b_minor, pain)
        self.assertEqual(pain["lines"], [{"end_to_end_id": bp["bank_reference"],
                                          "iban": SEPA_IBAN, "amount_cents": b_minor,
                                          "name": "Ben Bauer"}], pain)
        ns = {"p": "urn:iso:std:iso:20022:tech:xsd:pain.001.001.09"}
        root = ET.parse(path).getroot()
        self.assertEqual(root.findtext("p:CstmrCdtTrfInitn/p:GrpHdr/p:CtrlSum", namespaces=ns),
                         f"{b_minor // 100}.{b_minor % 100:02d}")
        self.assertEqual(root.findtext("p:CstmrCdtTrfInitn/p:PmtInf/p:DbtrAcct/p:Id/p:IBAN",
                                       namespaces=ns), PLATFORM_IBAN)

        # NACHA: the same, with totals, hash and check digits.
        resp = self.download(run["id"], ach_name)
        self.assertTrue(resp.header("Content-Type").startswith("text/plain"), resp.headers)
        _, ach_disk = wait_until(lambda: self._file_or_none(ach_name), 10,
                                 f"{ach_name} in files_dir")
        self.assertEqual(resp.raw, ach_disk)
        self.assertEqual(hashlib.sha256(ach_disk).hexdigest(), files[ach_name]["sha256"])
        self.check_nacha_file(ach_disk, cp, c_minor)

        # The SEPA file is sent; the bank pays B.
        r = self.admin.c.post(f"{API}/admin/payout-runs/{run['id']}/files/{sepa_name}/sent")
        self.assertStatus(r, 200)
        self.assertEqual({f["name"]: f["state"] for f in r.body["files"]},
                         {sepa_name: "sent", ach_name: "written"})
        self.assertEqual(self.payout_of(self.run_detail(run["id"]), b)["state"], "submitted")
        self.assertEqual(self.payout_of(self.run_detail(run["id"]), c)["state"], "planned")
        # A line of a file not sent has no bank result yet.
        r = self.admin.c.post(f"{API}/admin/payouts/{cp['id']}/bank-result", {"state": "paid"})
        self.assertError(r, 409)
        r = self.admin.c.post(f"{API}/admin/payouts/{bp['id']}/bank-result",
                              {"state": "paid", "bank_reference": "SEPA-REF-0001"})
        self.assertStatus(r, 200)
        self.assertEqual((r.body["state"], r.body["bank_reference"]),
                         ("confirmed", "SEPA-REF-0001"), r.body)
        t = self.totals(b)
        self.assertEqual((t["available_micro"], t["in_payment_micro"], t["paid_micro"]),
                         (b_avail % 10_000, 0, bp["amount_micro"]), t)
        self.assertEqual(self.account("provider_paid", b.id), bp["amount_micro"])
        self.assertLedgerOk()

        # The ACH file is sent; the bank returns C's line: the money is available again.
        r = self.admin.c.post(f"{API}/admin/payout-runs/{run['id']}/files/{ach_name}/sent")
        self.assertStatus(r, 200)
        r = self.admin.c.post(f"{API}/admin/payouts/{cp['id']}/bank-result", {"state": "failed"})
        self.assertError(r, 422, fields=["reason"])
        r = self.admin.c.post(f"{API}/admin/payouts/{cp['id']}/bank-result",
                              {"state": "failed", "reason": "R03 no account"})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["state"], "failed", r.body)
        self.assertIn("R03 no account", r.body["failure"])
        t = self.totals(c)
        self.assertEqual((t["available_micro"], t["in_payment_micro"], t["paid_micro"]),
                         (c_avail, 0, 0), t)
        self.assertLedgerOk()
        self.assertEqual(self.run_detail(run["id"])["state"], "done", "nothing left open")
        # Retried: a second ACH file, sent, paid (the trace number as the reference).
        r = self.admin.c.post(f"{API}/admin/payouts/{cp['id']}/retry")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["state"], "planned", r.body)
        ach2 = f"{run['id']}-2-ach.txt"
        run = wait_until(lambda: (lambda x: x if ach2 in {f["name"] for f in x["files"]}
                                  and x["state"] == "waiting" else None)(
                                      self.run_detail(run["id"])), 15, f"{ach2} written")
        _, ach2_disk = wait_until(lambda: self._file_or_none(ach2), 10, f"{ach2} in files_dir")
        self.assertEqual(self.download(run["id"], ach2).raw, ach2_disk)
        cp = self.payout_of(run, c)
        summary = self.check_nacha_file(ach2_disk, cp, c_minor)
        r = self.admin.c.post(f"{API}/admin/payout-runs/{run['id']}/files/{ach2}/sent")
        self.assertStatus(r, 200)
        r = self.admin.c.post(f"{API}/admin/payouts/{cp['id']}/bank-result", {"state": "paid"})
        self.assertStatus(r, 200)
        self.assertEqual((r.body["state"], r.body["bank_reference"]),
                         ("confirmed", summary["traces"][0]), r.body)
        # Again: the same answer, nothing paid twice.
        again = self.admin.c.post(f"{API}/admin/payouts/{cp['id']}/bank-result", {"state": "paid"})
        self.assertStatus(again, 200)
        run = self.wait_run(run["id"], ("done",))
        self.assertEqual((run["counts"]["confirmed"], run["counts"]["failed"]), (2, 0), run)
        t = self.totals(c)
        net = cp["amount_micro"] - ACH_FEE
        self.assertEqual((t["available_micro"], t["in_payment_micro"], t["paid_micro"]),
                         (c_avail % 10_000, 0, net), t)
        self.assertEqual(self.account("provider_paid", c.id), net)
        self.assertLedgerOk()

    def _file_or_none(self, name):
        try:
            return self.file_on_disk(name)
        except FileNotFoundError:
            return None

    def check_nacha_file(self, data, payout, cents):
        summary = bankcheck.check_nacha(data.decode("ascii"))
        self.assertEqual((summary["batches"], summary["total_credit_cents"],
                          summary["total_debit_cents"]), (1, cents, 0), summary)
        self.assertEqual(len(summary["entry_list"]), 1, summary)
        e = summary["entry_list"][0]
        self.assertEqual((e["routing"], e["account"].strip(), e["amount_cents"], e["code"]),
                         (ACH_ROUTING, ACH_ACCOUNT, cents, "22"), e)
        self.assertEqual(e["trace"], payout["bank_reference"], (e, payout))
        self.assertTrue(e["trace"].startswith(ODFI[:8]), e)
        return summary

    def monthly(self, a, b, c, d):
        # D is on the monthly schedule: no weekly run paid it.
        self.assertEqual(self.get(d, "/providers/me/payouts")["items"], [])
        self.clock.move_to(midnight(self.month_day) + dt.timedelta(hours=3))
        # The first weekday of the month is a holiday: not a monthly run date.
        r = self.admin.c.post(f"{API}/admin/payout-runs", {"as_of": self.holiday.isoformat(),
                                                           "schedule": "monthly"})
        self.assertError(r, 422, fields=["as_of"])
        before = self.get(self.admin, "/admin/payout-runs")["items"]
        self.assertEqual(len(before), 2, "the refused date made no run")
        # Now gpunexd makes the scheduled runs itself (restarted with automatic_runs): the
        # monthly run is the next business day's, the weekly one that Monday's.
        with open(self.srv.config_path, encoding="utf-8") as f:
            config = f.read()
        self.assertIn("automatic_runs = false\n", config)
        with open(self.srv.config_path, "w", encoding="utf-8") as f:
            f.write(config.replace("automatic_runs = false\n", "automatic_runs = true\n"))
        self.assertEqual(self.front.token_balance(self.platform["public_key"]), 0)
        self.srv.stop()
        self.srv.start()
        monday = monday_on_or_before(self.month_day)
        runs = wait_until(lambda: (lambda x: x if len(x) == 4 else None)(
            self.get(self.admin, "/admin/payout-runs")["items"]), 15, "the scheduled runs")
        self.assertEqual(sorted((r["schedule"], r["as_of"]) for r in runs),
                         sorted([("weekly", self.w1.isoformat()), ("weekly", self.w2.isoformat()),
                                 ("weekly", monday.isoformat()),
                                 ("monthly", self.month_day.isoformat())]), runs)
        weekly = next(r for r in runs if r["as_of"] == monday.isoformat())
        weekly = self.wait_run(weekly["id"], ("done",))
        # Only the banks' sub-cent remainders were left: carried over, nothing paid.
        self.assertEqual(weekly["payouts"], [], weekly)
        left = {p.id for p in (a, b, c) if self.totals(p)["available_micro"] > 0}
        skips = dict(self.q("SELECT provider_id, reason FROM payout_skips WHERE run_id = ?",
                            (weekly["id"],)))
        self.assertEqual(skips, {i: "carried_over" for i in left})
        run = next(r for r in runs if r["schedule"] == "monthly")
        # POSTing that date again is the same run.
        self.assertEqual(self.start_run(self.month_day, schedule="monthly", eur_rate=None)["id"],
                         run["id"])
        # The platform's wallet is empty now: D's payout waits for funds, the admins are
        # told once, and it is sent as soon as the wallet is funded.
        run = wait_until(lambda: (lambda x: x if x["counts"]["waiting_funds"] == 1 and
                                  x["state"] == "waiting" else None)(self.run_detail(run["id"])),
                         15, "D's payout waiting for funds")
        self.assertEqual([p["provider_id"] for p in run["payouts"]], [d.id], run)
        self.assertEqual(self.front.token_balance(d.wallet), 0)
        wallet = self.get(self.admin, "/admin/payout-wallet")
        self.assertEqual((wallet["configured"], wallet["public_key"], wallet["usdc_micro"],
                          wallet["needed_micro"], wallet["short"], wallet["mint"]),
                         (True, self.platform["public_key"], 0, d.earned, True, self.front.mint),
                         wallet)
        self.assertEqual(wallet["sol_lamports"], self.front.lamports(self.platform["public_key"]))
        self.assertEqual(wallet["token_account"],
                         associated_token_address(self.platform["public_key"], self.front.mint))
        time.sleep(1.0)  # ten more passes of the loop
        self.assertEqual(self.payout_mails(self.admin), ["payouts.wallet_short"])
        self.fund_platform(d.earned)
        run = self.wait_run(run["id"], ("done",))
        po = self.payout_of(run, d)
        self.assertEqual((po["schedule"], po["as_of"], po["amount_micro"]),
                         ("monthly", self.month_day.isoformat(), d.earned), po)
        self.assertSolanaPaid(d, po, d.wallet)
        t = self.totals(d)
        self.assertEqual((t["available_micro"], t["in_payment_micro"], t["paid_micro"]),
                         (0, 0, d.earned), t)
        self.assertLedgerOk()


class PayoutsAcrossInstancesTest(PayoutsFixture, unittest.TestCase):
    """Three gpunexd on one PostgreSQL database (issue 28; docs/operations.md): a payout run
    asked of all three at the same moment is one run, carried forward by the instance that
    holds the payout lock, and pays once; when that instance dies in the middle of a
    payment, another takes the lock and finishes the run without paying twice."""
    BACKEND = "postgresql"

    def more_instances(self, n):
        """`n` more gpunexd on the first one's database, test clock and Solana node."""
        keypair = os.path.join(self.front.tmp, "platform-key.json")
        out = []
        for _ in range(n):
            other = PayoutsGpunexd(free_port(), self.clock.path, share_database_of=self.srv,
                                   smtp_url=None, root_toml="allow_emulated_gpus = true",
                                   extra_toml=payouts_toml(self.front, keypair, self.BATCH,
                                                           self.holidays()))
            self.addCleanup(other.cleanup)
            other.start()
            out.append(other)
        return out

    def provider_due(self, name):
        """A provider with released earnings and a Solana wallet, paid weekly."""
        (a,) = self.providers([name])
        a.earned = sum(r["provider_micro"] for r in self.earn([a])[a.id])
        a.wallet = self.front.new_wallet()["public_key"]
        a.token_account = associated_token_address(a.wallet, self.front.mint)
        self.put_settings(a, {"schedule": "weekly",
                              "method": {"kind": "solana", "wallet": a.wallet},
                              "password": PASSWORD})
        self.clock.advance(25 * 3600)
        wait_until(lambda: self.totals(a)["pending_micro"] == 0, 20, "the earnings released")
        return a

    def assertPaidOnce(self, run, a):
        self.assertEqual(len(self.get(self.admin, "/admin/payout-runs")["items"]), 1)
        self.assertEqual([p["provider_id"] for p in run["payouts"]], [a.id], run)
        po = self.payout_of(run, a)
        self.assertEqual(po["amount_micro"], a.earned, po)
        self.assertSolanaPaid(a, po, a.wallet)  # one transaction, the exact amount
        t = self.totals(a)
        self.assertEqual((t["available_micro"], t["in_payment_micro"], t["paid_micro"]),
                         (0, 0, a.earned), t)
        self.assertLedgerOk()

    def test_a_run_asked_of_three_instances_at_once_pays_once(self):
        instances = [self.srv] + self.more_instances(2)
        a = self.provider_due("Ana")
        as_of = monday_on_or_before(self.clock.now().date())
        answers, lock = [], threading.Lock()
        barrier = threading.Barrier(len(instances))

        def post(instance):
            c = Client(instance.port, self.admin.token)
            barrier.wait()
            r = c.post(f"{API}/admin/payout-runs", {"as_of": as_of.isoformat(),
                                                    "schedule": "weekly", "eur_rate": EUR_RATE})
            with lock:
                answers.append(r)

        threads = [threading.Thread(target=post, args=(i,)) for i in instances]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([r.status for r in answers], [201] * 3, answers)
        self.assertEqual(len({r.body["id"] for r in answers}), 1, answers)
        self.assertPaidOnce(self.wait_run(answers[0].body["id"], ("done",)), a)

    def test_when_the_instance_holding_the_payout_lock_dies_another_finishes_the_run(self):
        a = self.provider_due("Ben")
        # The first instance, alone, holds the payout lock; started again, it kills itself
        # once it has sent the payment's transaction and before it records that it did.
        self.srv.kill()
        self.srv.crash_at = "payout.after_send"
        self.srv.start()
        wait_until(lambda: '"payouts.lock_taken"' in self.srv.logs(), 10,
                   "the first instance to take the payout lock")
        others = self.more_instances(2)
        as_of = monday_on_or_before(self.clock.now().date())
        r = Client(others[0].port, self.admin.token).post(
            f"{API}/admin/payout-runs",
            {"as_of": as_of.isoformat(), "schedule": "weekly", "eur_rate": EUR_RATE})
        self.assertStatus(r, 201)
        try:
            rc = self.srv.proc.wait(timeout=30)
        except Exception:
            raise AssertionError("the lock holder did not reach payout.after_send in 30 s")
        self.assertEqual(rc, -9, f"the lock holder exited with {rc}, not SIGKILL")
        self.srv.kill()  # closes its log
        self.assertIn('"point":"payout.after_send"', self.srv.logs())
        died_at = time.monotonic()
        # It comes back as an instance like the others (the test reads through it); the
        # lock is held by then.
        self.srv.crash_at = None
        self.srv.start()
        # Another instance takes the lock (the dead one's ended with its connection), finds
        # the transaction on chain and does not send a second payment.
        run = self.wait_run(r.body["id"], ("done",), timeout=60)
        print(f"\nthe run was finished {time.monotonic() - died_at:.1f} s after the lock "
              "holder died")
        self.assertEqual(sum('"payouts.lock_taken"' in o.logs() for o in others), 1,
                         "one of the live instances took the lock")
        with open(self.srv.log_paths[-1], "rb") as f:
            self.assertNotIn(b'"payouts.lock_taken"', f.read(),
                             "the instance started again after its death does not hold the lock")
        self.assertPaidOnce(run, a)
        self.assertEqual(len(self.memo_txs(self.payout_of(run, a)["id"])), 1)


class PayoutsSqliteTest(PayoutsMixin, unittest.TestCase):
    BACKEND = "sqlite"


class PayoutsPostgresTest(PayoutsMixin, unittest.TestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
