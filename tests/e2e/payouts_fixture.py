"""Pieces shared by the end-to-end tests of payouts and top-ups that need a provider with
money to pay out (test_bad_inputs_payouts, test_authz) or a gpunexd on a Solana chain
(test_topups): a gpunexd whose clock a test moves forward (GPUNEX_TEST_CLOCK_FILE), its
[solana] and [payouts] configuration against a SolanaFront, and earnings made in seconds
by a fake agent (test_agent_channel.FakeAgent) that runs a rental as a real agent would
report it (start_workload acked and done, the workload running, then stopped), at a
price high enough that a few seconds earn some USDC.

Standard library + the harness only; the Solana chain is tests/solana (node).
"""

import contextlib
import datetime as dt
import json
import os
import threading
import time

from harness import API, Gpunexd, set_prices, wait_until

L4 = "l4-24gb"
USDC = 1_000_000
# 720 USDC per GPU-hour: 200,000 micro-USDC per GPU-second (the pricing maximum is 1000).
PRICE_MICRO = 720 * USDC
EARNINGS_HOLD_S = 60  # the smallest [rentals] earnings_hold_s


class ClockGpunexd(Gpunexd):
    """A gpunexd whose clock is the system clock plus `offset` seconds (the test clock
    file, re-read every 50 ms). Move it forward only, and only while no rental runs, or
    within fast_clock (where heartbeats keep coming, test_rentals)."""

    def __init__(self, *args, env_extra=None, **kw):
        super().__init__(*args, **kw)
        self.clock_path = os.path.join(self.tmp, "clock-offset")
        self.offset = 0
        self._write_clock()
        self.env_extra = dict(env_extra or {})

    def _write_clock(self):
        tmp = self.clock_path + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(str(int(self.offset)))
        os.replace(tmp, self.clock_path)

    def env(self):
        env = super().env()
        env["GPUNEX_TEST_CLOCK_FILE"] = self.clock_path
        env.update(self.env_extra)
        return env

    def advance(self, seconds):
        self.offset += int(seconds)
        self._write_clock()
        time.sleep(0.12)  # past the 50 ms re-read

    @contextlib.contextmanager
    def fast_clock(self, step_s=1, every_s=0.1):
        """Within the block the clock gains `step_s` every `every_s` of real time (11 times
        as fast by default) and stays where it got to. gpunexd bills a rental to its
        machine's last heartbeat, which then comes every 11 s of its clock: offline_after_s
        and agent_lost_grace_s must allow for that."""
        stop = threading.Event()

        def run():
            while not stop.wait(every_s):
                self.offset += step_s
                self._write_clock()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        try:
            yield
        finally:
            stop.set()
            t.join()

    def now(self):
        """gpunexd's now (UTC)."""
        return dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=self.offset)


def platform_keypair(front, directory):
    """A fresh platform wallet on the front (1 SOL, its USDC token account created):
    writes its key as a Solana CLI key file (0600) in `directory`; returns (wallet, path)."""
    w = front.new_wallet()
    front.mint_usdc(w["public_key"], 0)
    path = os.path.join(directory, "platform-key.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        json.dump(list(w["secret_key"]), f)
    return w, path


# The platform's bank accounts: SEPA and ACH offered.
BANK_TOML = """
sepa_name = "GPUNEX TEST PLATFORM"
sepa_iban = "DE89370400440532013000"
sepa_bic = "COBADEFFXXX"
ach_destination_routing = "021000021"
ach_destination_name = "TEST BANK NA"
ach_origin = " 021000021"
ach_origin_name = "GPUNEX TEST"
ach_company_name = "GPUNEX"
ach_company_id = "1234567890"
ach_odfi_routing = "021000021"
"""


def payouts_toml(front, key_path, loop_ms=150, min_micro=USDC, extra_payouts=""):
    """[fleet], [rentals], [solana] and [payouts] for a gpunexd on `front`'s chain: metering
    every second, earnings released every second after the smallest hold, no automatic
    runs, every method offered with a minimum of `min_micro`."""
    return f"""
[fleet]
heartbeat_interval_s = 1
offline_after_s = 600

[rentals]
meter_interval_s = 1
sweep_ms = 200
release_interval_s = 1
earnings_hold_s = {EARNINGS_HOLD_S}
early_fault_refund_s = 0

[solana]
rpc_url = "{front.url}"
keypair = "{key_path}"
usdc_mint = "{front.mint}"
commitment = "confirmed"
rpc_timeout_ms = 5000

[payouts]
automatic_runs = false
loop_ms = {loop_ms}
hold_after_change_s = 172800
solana_min_micro = {min_micro}
sepa_min_micro = {min_micro}
ach_min_micro = {min_micro}
{BANK_TOML}
{extra_payouts}
"""


def business_day(d, holidays=()):
    return d.weekday() < 5 and d.isoformat() not in holidays


def latest_monday(now):
    d = now.date()
    return d - dt.timedelta(days=d.weekday())


def first_business_day(year, month, holidays=()):
    d = dt.date(year, month, 1)
    while not business_day(d, holidays):
        d += dt.timedelta(days=1)
    return d


def latest_monthly_date(now, holidays=()):
    """The latest first business day of a month that is not after `now`."""
    d = first_business_day(now.year, now.month, holidays)
    if d > now.date():
        prev = now.date().replace(day=1) - dt.timedelta(days=1)
        d = first_business_day(prev.year, prev.month, holidays)
    return d


# --------------------------------------------------------------------------- earnings


def offer_on(admin, machine_id, free, model=L4):
    r = admin.c.get(f"{API}/offers", query={"gpu_model": model, "limit": "200"})
    assert r.status == 200, r
    return next((o["id"] for o in r.body["items"]
                 if o["machine_id"] == machine_id and o["gpus_available"] >= free), None)


def _answer(agent, cmd, event):
    agent.send({"type": "ack", "command_id": cmd["command_id"]})
    agent.send({"type": "result", "command_id": cmd["command_id"], "ok": True, "data": {}})
    agent.send(event)


def run_rental(admin, customer, agent, gpus, seconds, machine_id=None):
    """Rents `gpus` L4s of the fake agent's machine for the customer, has the agent run it
    (the workload running) for about `seconds`, then stops it as the customer; returns the
    ended rental."""
    mid = machine_id or agent.machine_id
    offer = wait_until(lambda: offer_on(admin, mid, gpus), 10, "the machine's offer")
    r = customer.c.post(f"{API}/rentals", {
        "offer_id": offer, "gpus": gpus, "image": "gpunex-test/busybox:1",
        "command": ["/bin/sleep", "3600"], "max_duration_s": 300})
    assert r.status == 201, r
    rid = r.body["id"]
    cmd = agent.expect_command("start_workload", timeout=10)
    wid = cmd["payload"]["workload_id"]
    _answer(agent, cmd, {"type": "workload_event", "workload_id": wid, "state": "running",
                         "container_id": "c0ffee" * 4})

    def state():
        r = customer.c.get(f"{API}/rentals/{rid}")
        assert r.status == 200, r
        return r.body

    wait_until(lambda: state()["state"] == "running", 10, "the rental running")
    time.sleep(seconds)
    r = customer.c.post(f"{API}/rentals/{rid}/stop")
    assert r.status == 200, r
    cmd = agent.expect_command("stop_workload", timeout=10)
    _answer(agent, cmd, {"type": "workload_event", "workload_id": wid, "state": "stopped",
                         "exit_code": 137})
    return wait_until(lambda: (lambda b: b if b["state"] == "ended" else None)(state()), 15,
                      "the rental ended")


def earnings(provider):
    r = provider.c.get(f"{API}/providers/me/earnings")
    assert r.status == 200, r
    return r.body["totals"]


def release_earnings(srv, providers):
    """Moves the clock past the earnings hold (no rental may be running) and waits until
    every provider's pending earnings are available; returns {provider id: available}."""
    srv.advance(EARNINGS_HOLD_S + 5)
    out = {}
    for p in providers:
        t = wait_until(lambda: (lambda t: t if t["pending_micro"] == 0 and
                                t["available_micro"] > 0 else None)(earnings(p)),
                       15, f"{p.email}'s earnings available")
        out[p.id] = t["available_micro"]
    return out


def price_l4(provider, price=PRICE_MICRO):
    set_prices(provider, {L4: price})


def wait_run(admin, run_id, pred, timeout=20, what="the run"):
    def check():
        r = admin.c.get(f"{API}/admin/payout-runs/{run_id}")
        assert r.status == 200, r
        return r.body if pred(r.body) else None
    return wait_until(check, timeout, what)
