"""Rentals, balances and the ledger (issue 14) end to end: a real gpunexd, real gpunex-agents
with EMULATED GPUs whose workloads run in a private Docker engine (dockerenv.TestDockerd,
a workload image made of the host's static busybox; nothing is pulled), customers credited
by an admin, rentals found through GET /api/v1/offers.

- a rental runs in a container and is stopped: charged_micro = floor(price × gpus ×
  billed_seconds / 3600), fee_micro = floor(charged × fee_bps / 10000), provider_micro =
  charged − fee; the balance, the statement and the ledger check agree; the provider sees
  the rental on its machine (with a customer pseudonym), the customer never the machine;
- a container that never starts (an image that cannot be pulled, a command that does not
  exist) is never billed: charged 0, billed_seconds 0, end_party customer; the customer
  reads one sentence for every failed pull, the provider the engine's words;
- who ended it (issue 24, docs/billing.md "Who ended it"): a container killed at its own
  memory limit is the customer's (out_of_memory: charged, not refunded, the provider's
  reliability not lowered); one removed on the host with `docker rm -f` the provider's
  (container_removed: refunded in full, a provider-side ending in its reliability);
- max_cost_micro ends a rental at exactly that cost (reachable at a whole second);
- a customer whose balance covers exactly the rentals' time ends at a balance of exactly 0,
  never below;
- the agent SIGKILLed mid-rental: the rental ends as agent_lost (provider) within the
  grace, billed up to the last heartbeat only; after the agent restarts its container is
  gone;
- the same POST /rentals with the same Idempotency-Key, repeated and from 8 threads, makes
  one rental; two customers racing for the last free GPU: one 201, one 409.

The money figures are chosen so that a GPU-hour is a whole number of micro-USDC per second
where the test needs an exact end (360 000 per GPU-hour = 100 per second), and odd where
it checks the rounding (floor) of the formula.

Needs root, dockerd (docker.io) and busybox-static (skips with the reason otherwise);
GPUNEX_AGENT names the agent binary. Runs on SQLite and, with GPUNEX_TEST_PG_URL, on
PostgreSQL.
"""

import datetime as dt
import os
import threading
import time
import unittest

import dockerenv
from harness import (API, Gpunexd, RealAgent, ServerTestCase, provider_with_agent_token,
                     set_prices, source_dir, wait_until)
from payouts_fixture import ClockGpunexd

BUSYBOX_REF = "gpunex-test/busybox:1"
L4 = "l4-24gb"
HEARTBEAT_S = 1
OFFLINE_AFTER_S = 3
AGENT_LOST_GRACE_S = 5
METER_S = 1

# Stops promptly on SIGTERM (a shell as PID 1 would otherwise ignore it until the engine's
# stop timeout), prints one line first so that logs can be checked.
LONG_COMMAND = ["/bin/sh", "-c", "trap 'exit 0' TERM; echo rental-started; sleep 3600 & wait"]

FLEET_TOML = f"""
[fleet]
heartbeat_interval_s = {HEARTBEAT_S}
offline_after_s = {OFFLINE_AFTER_S}
"""
# The tests pull from registries on loopback (127.0.0.1:<port>), which the operator must
# allow (docs/security.md); test_bad_inputs_rentals checks the refusal without it.
PRIVATE_REGISTRIES_TOML = "allow_private_registries = true\n"
RENTALS_TOML = FLEET_TOML + PRIVATE_REGISTRIES_TOML + f"""
[rentals]
meter_interval_s = {METER_S}
agent_lost_grace_s = {AGENT_LOST_GRACE_S}
sweep_ms = 200
"""

ACTIVE = ("pending", "starting", "running", "ending")
USDC = 1_000_000  # micro-USDC

# What a customer reads about any pull that failed on its side (src/platform/fleet/endings.cc).
PULL_FAILED = ("The image could not be pulled: check that the reference is right, that the "
               "image exists and that it is public.")


# --------------------------------------------------------------------------- helpers


def parse_time(s):
    if s is None:
        return None
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    return dt.datetime.fromisoformat(s)


def expected_money(rental):
    """(charged, fee, provider) by the formula, from the rental's own terms and time."""
    charged = rental["price_micro"] * rental["gpus"] * rental["billed_seconds"] // 3600
    fee = charged * rental["fee_bps"] // 10000
    return charged, fee, charged - fee


def credit(admin, user_id, amount, reference="e2e credit", key=None):
    headers = {"Idempotency-Key": key} if key else None
    r = admin.c.post(f"{API}/admin/credits", {"user_id": user_id, "amount_micro": amount,
                                               "reference": reference}, headers=headers)
    assert r.status == 201, r
    return r.body


def balance(user):
    r = user.c.get(f"{API}/me/balance")
    assert r.status == 200, r
    return r.body


def statement(user):
    """Every statement item of the user (newest first), following next_cursor."""
    items, cursor = [], None
    while True:
        q = {"limit": "100"}
        if cursor:
            q["cursor"] = cursor
        r = user.c.get(f"{API}/me/statement", query=q)
        assert r.status == 200, r
        items += r.body["items"]
        cursor = r.body["next_cursor"]
        if not cursor:
            return items


def ledger_check(admin):
    r = admin.c.get(f"{API}/admin/ledger/check")
    assert r.status == 200, r
    return r.body


def rental_body(offer_id, gpus=1, image=BUSYBOX_REF, command=None, **extra):
    body = {"offer_id": offer_id, "gpus": gpus, "image": image,
            "command": list(command if command is not None else LONG_COMMAND)}
    body.update(extra)
    return body


def get_rental(user, rid):
    r = user.c.get(f"{API}/rentals/{rid}")
    assert r.status == 200, r
    return r.body


def wait_rental(user, rid, pred, timeout, what):
    """Polls GET /rentals/{id} until pred(rental); returns it."""
    return wait_until(lambda: (lambda r: r if pred(r) else None)(get_rental(user, rid)),
                      timeout, f"rental {rid} {what}", interval=0.1)


def wait_running(user, rid, timeout=45):
    def check():
        r = get_rental(user, rid)
        if r["state"] == "ended":
            raise AssertionError(f"rental {rid} ended ({r['end_reason']}, {r['detail']}) "
                                 f"instead of running: {r}")
        return r if r["state"] == "running" else None
    return wait_until(check, timeout, f"rental {rid} running", interval=0.1)


def wait_ended(user, rid, timeout=45):
    return wait_rental(user, rid, lambda r: r["state"] == "ended", timeout, "ended")


def end_shared(shared):
    """Ends the agent and the gpunexd a module shares between its tests (test_access,
    test_cli: `shared` holds them as "agent" and "srv"), and the engine's containers."""
    agent, srv = shared.pop("agent", None), shared.pop("srv", None)
    if agent is not None:
        agent.cleanup()
    if srv is not None:
        srv.cleanup()
    shared.clear()
    if ENV["dockerd"] is not None:
        ENV["dockerd"].remove_all()


class DockerAgent(RealAgent):
    """The real agent for one machine, its workloads in the private engine `dock`."""

    def __init__(self, srv, token, gpus, dock, name="agent"):
        super().__init__(srv, token, gpus, name=name, docker_socket=dock.socket)
        self.dock = dock


class FixedPortGpunexd(Gpunexd):
    """A gpunexd on a port chosen up front, so that a restart keeps it (the agents have the
    platform's address from their start)."""

    def __init__(self, port, **kw):
        self.fixed_port = port
        super().__init__(**kw)

    def env(self):
        env = super().env()
        env["GPUNEX_LISTEN"] = f"127.0.0.1:{self.fixed_port}"
        return env


def wait_machine_listed(admin, provider, gpu_count, known=(), timeout=120):
    """The provider's machine not in `known`, online with `gpu_count` GPUs all listed;
    returns its id. The agent's network isolation check comes first, which on a loaded
    machine with several agents checking at once has taken over 45 s; on a timeout the
    message says what each GPU waited for."""
    seen = {}

    def check():
        r = provider.c.get(f"{API}/machines")
        assert r.status == 200, r
        for m in r.body["items"]:
            if m["id"] in known:
                continue
            seen[m["id"]] = (m["status"], len(m["gpus"]))
            if m["status"] != "online" or len(m["gpus"]) != gpu_count:
                continue
            full = admin.c.get(f"{API}/machines/{m['id']}").body
            seen[m["id"]] = sorted({(g["listing_state"], g.get("listing_note") or "")
                                    for g in full["gpus"]})
            if all(g["listing_state"] == "listed" for g in full["gpus"]):
                return m["id"]
        return None
    try:
        return wait_until(check, timeout, f"a machine with {gpu_count} listed GPUs",
                          interval=0.2)
    except AssertionError as e:
        raise AssertionError(f"{e}; the machines seen: {seen!r}") from None


def offer_of(admin, machine_id, model=L4, min_free=1, timeout=15):
    """The offer of `model` on the machine once search shows at least `min_free` GPUs free
    (the admin's search names the machine)."""
    def check():
        r = admin.c.get(f"{API}/offers", query={"gpu_model": model, "limit": "200"})
        assert r.status == 200, r
        for o in r.body["items"]:
            if o["machine_id"] == machine_id and o["gpus_available"] >= min_free:
                return o
        return None
    return wait_until(check, timeout, f"an offer of {model} on {machine_id} with "
                      f"{min_free} free", interval=0.1)


C_PRIOR = 0.95  # the completion of a machine without job endings (docs/reliability-score.md)


def reliability(provider, machine_id):
    r = provider.c.get(f"{API}/machines/{machine_id}/reliability")
    assert r.status == 200, r
    return r.body


def first_reliability(provider, machine_id):
    """The machine's reliability once the score's upkeep has counted it (within a second of
    its registration): the completion is the prior of a machine without endings."""
    return wait_until(lambda: (lambda r: r if r["components"]["completion"] == C_PRIOR
                               else None)(reliability(provider, machine_id)),
                      15, f"the reliability of {machine_id} computed")


def notices(user, kind):
    """The user's notifications of `kind`, newest first."""
    r = user.c.get(f"{API}/notifications", query={"limit": "100"})
    assert r.status == 200, r
    return [n for n in r.body["items"] if n["kind"] == kind]


def host_ram_mb():
    with open("/proc/meminfo", encoding="ascii") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("MemTotal:"))


def gpus_for_memory_share(share_mb=256):
    """How many EMULATED GPUs give a one-GPU rental a memory limit (its share of the host's
    memory, as the platform sizes it) of about `share_mb`: at most 64, a hello's bound."""
    return max(1, min(64, -(-host_ram_mb() // share_mb)))


def oom_command(gpus):
    """Runs a few seconds (so that it is billed), then has busybox dd read one block of
    three times the container's memory limit (a one-GPU rental's share of the machine's
    `gpus`) from /dev/zero: the read fills the block's pages at once, and the kernel kills
    dd at the limit. (tail holding a stream that `dd bs=1M` wrote took about 40 s to get
    there, 13 s this way: the container has the least CPU share, 0.1 of a core.)"""
    mb = 3 * (host_ram_mb() // gpus) + 64
    return ["/bin/sh", "-c",
            f"echo filling; sleep 3; dd if=/dev/zero of=/dev/null bs={mb}M count=1"]


def free_gpus(client, offer_id):
    r = client.get(f"{API}/offers/{offer_id}")
    if r.status == 404:
        return 0
    assert r.status == 200, r
    return r.body["gpus_available"]


# --------------------------------------------------------------------------- module: the engine

ENV = {"dockerd": None}


def setUpModule():
    dockerenv.require_docker()
    dockerenv.agent_binary()
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


# --------------------------------------------------------------------------- the tests


class EngineAgentsMixin:
    """Agents started by a test (self.agents) whose workloads run in the module's engine
    (self.dock), removed after it; their logs and the engine's printed when it failed. A
    module that uses it takes setUpModule and tearDownModule from here too."""
    SMTP = False
    ROOT_TOML = "allow_emulated_gpus = true"

    def setUp(self):
        super().setUp()
        self.dock = ENV["dockerd"]
        self.agents = []
        self.addCleanup(self._cleanup_agents)
        self.admin = self.srv.admin()

    def _cleanup_agents(self):
        failed = self._outcome_failed()
        for a in self.agents:
            if failed:
                print(f"\n--- agent {a.state_dir} ---\n" + a.logs()[-4000:])
            a.cleanup(keep=failed)
        if failed:
            print("\n--- dockerd log ---\n" + self.dock.log_tail(2000))
        self.dock.remove_all()


class RentalsHelpers(EngineAgentsMixin):
    """The fixture pieces and checks of the rentals tests (no tests of its own)."""

    EXTRA_TOML = RENTALS_TOML

    def provider_machine(self, gpus=4, price=360_000, tier="community", name="Prov"):
        """An approved provider pricing L4 at `price`, its agent with `gpus` EMULATED L4s
        on the private engine, online and listed. Returns (provider, machine id, offer)."""
        prov, token, _ = provider_with_agent_token(self.srv, self.admin, name=name, tier=tier,
                                                   priced=False)
        set_prices(prov, {L4: price})
        agent = DockerAgent(self.srv, token, f"{L4}:{gpus}", self.dock, name=name.lower())
        self.agents.append(agent)
        agent.start()
        mid = wait_machine_listed(self.admin, prov, gpus)
        offer = offer_of(self.admin, mid, min_free=gpus)
        self.assertEqual(offer["price_micro"], price)
        prov.agent, prov.machine_id = agent, mid
        return prov, mid, offer

    def customer(self, amount, name="Carla Customer"):
        c = self.srv.user(name)
        if amount:
            credit(self.admin, c.id, amount, reference=f"top-up for {name}")
        return c

    def rent(self, customer, offer_id, gpus=1, status=201, **kw):
        r = customer.c.post(f"{API}/rentals", rental_body(offer_id, gpus, **kw))
        self.assertStatus(r, status)
        return r.body

    def managed_containers(self):
        return self.dock.containers("io.gpunex.managed=true")

    def q(self, sql, params=()):
        return self.srv.backend.query(sql, params)

    def count(self, table):
        return self.q(f"SELECT COUNT(*) FROM {table}")[0][0]

    def assertMoney(self, rental, msg=""):
        charged, fee, prov = expected_money(rental)
        self.assertEqual((rental["charged_micro"], rental["fee_micro"], rental["provider_micro"]),
                         (charged, fee, prov), f"{msg} the formula on {rental}")

    def assertLedgerOk(self):
        chk = ledger_check(self.admin)
        self.assertIs(chk["ok"], True, chk)
        self.assertEqual(chk["sum_micro"], 0, chk)
        self.assertEqual(chk["mismatches"], [], chk)
        return chk

    def assertStatementMatches(self, user, credited, rentals):
        """The statement adds up to the balance: the credits in, each rental's provider
        part and fee out, refunds back in."""
        items = statement(user)
        bal = balance(user)["balance_micro"]
        self.assertEqual(sum(i["amount_micro"] for i in items), bal, items)
        self.assertEqual(sum(i["amount_micro"] for i in items if i["kind"] == "operator_credit"),
                         credited, items)
        for r in rentals:
            mine = [i for i in items if i["rental_id"] == r["id"]]
            self.assertEqual(-sum(i["amount_micro"] for i in mine
                                  if i["kind"] in ("usage_provider", "usage_fee")),
                             r["charged_micro"], f"usage of {r['id']}: {mine}")
            self.assertEqual(-sum(i["amount_micro"] for i in mine if i["kind"] == "usage_fee"),
                             r["fee_micro"], f"fee of {r['id']}: {mine}")
            self.assertEqual(sum(i["amount_micro"] for i in mine
                                 if i["kind"].startswith("refund")),
                             r["refunded_micro"], f"refund of {r['id']}: {mine}")
        self.assertLessEqual({i["kind"] for i in items if not i["kind"].startswith("refund")},
                             {"operator_credit", "usage_provider", "usage_fee"}, items)
        return items


class RentalsMixin(RentalsHelpers):

    # -- a rental from offer to stop

    def test_rent_run_stop_is_billed_by_the_formula(self):
        # An odd price: the formula's floors matter.
        price = 437_777
        prov, mid, offer = self.provider_machine(gpus=4, price=price)
        cust = self.customer(20 * USDC)
        # Two SSH keys on the account (made by ssh-keygen: sshkeys' unit test data): the
        # container gets them in PUBLIC_KEY, one authorized_keys line each.
        with open(os.path.join(source_dir(), "src/platform/sshkeys/testdata/keys.txt")) as f:
            lines = [line.split("|")[0] for line in f.read().splitlines()]
        keys = []
        for line in (lines[0], lines[4]):
            r = cust.c.post(f"{API}/me/ssh-keys", {"public_key": line})
            self.assertStatus(r, 201)
            keys.append(r.body["public_key"])
        # The customer finds the offer by searching.
        r = cust.c.get(f"{API}/offers", query={"gpu_model": L4, "min_gpus": "2"})
        self.assertStatus(r, 200)
        self.assertIn(offer["id"], [o["id"] for o in r.body["items"]])
        self.assertNotIn("machine_id", r.body["items"][0])

        created = self.rent(cust, offer["id"], gpus=2, max_duration_s=3600)
        rid = created["id"]
        self.assertIn(created["state"], ("pending", "starting"), created)
        self.assertEqual((created["gpus"], created["price_micro"], created["fee_bps"]),
                         (2, price, 2000), created)
        self.assertEqual(created["cost_per_hour_micro"], 2 * price)
        self.assertEqual((created["billed_seconds"], created["charged_micro"]), (0, 0))
        self.assertEqual(created["image"], BUSYBOX_REF)
        self.assertEqual(created["command"], LONG_COMMAND)
        self.assertNotIn("machine_id", created, "a customer is not shown the machine")

        running = wait_running(cust, rid)
        seen_running = time.monotonic()
        self.assertIsNotNone(running["running_at"])
        cs = self.managed_containers()
        self.assertEqual(len(cs), 1, cs)
        self.assertEqual(cs[0]["State"], "running")
        self.assertEqual(len(cs[0]["Labels"]["io.gpunex.gpus"].split(",")), 2, cs[0]["Labels"])
        env = self.dock.inspect(cs[0]["Id"])["Config"]["Env"]
        self.assertIn("PUBLIC_KEY=" + "\n".join(keys), env)
        # Two GPUs rented: the offer shows the other two.
        wait_until(lambda: free_gpus(cust.c, offer["id"]) == 2, 5, "2 GPUs left on the offer")
        b = balance(cust)
        self.assertEqual(b["running_rentals"], 1, b)
        self.assertEqual(b["running_cost_per_hour_micro"], 2 * price, b)
        self.assertIsNotNone(b["seconds_left"])

        # The provider sees it on its machine, with a pseudonym for the customer.
        r = prov.c.get(f"{API}/providers/me/rentals")
        self.assertStatus(r, 200)
        self.assertEqual([x["id"] for x in r.body["items"]], [rid])
        pr = r.body["items"][0]
        self.assertEqual(pr["machine_id"], mid)
        self.assertTrue(pr["customer"])
        for secret in (cust.email, cust.id, "Carla"):
            self.assertNotIn(secret, str(pr["customer"]))
        self.assertEqual(get_rental(prov, rid)["machine_id"], mid)
        self.assertEqual(get_rental(self.admin, rid)["machine_id"], mid)

        # Logs reach the platform.
        def logs():
            r = cust.c.get(f"{API}/rentals/{rid}/logs")
            self.assertStatus(r, 200)
            return "".join(i["data"] for i in r.body["items"] if i["stream"] == "stdout")
        wait_until(lambda: "rental-started" in logs(), 10, "the rental's log line")

        time.sleep(4.5)
        waited = time.monotonic() - seen_running
        r = cust.c.post(f"{API}/rentals/{rid}/stop")
        self.assertStatus(r, 200)
        self.assertIn(r.body["state"], ("ending", "ended"), r.body)
        ended = wait_ended(cust, rid, 30)
        self.assertEqual((ended["end_reason"], ended["end_party"]), ("stopped", "customer"),
                         ended)
        running_at, ended_at = parse_time(ended["running_at"]), parse_time(ended["ended_at"])
        self.assertGreaterEqual(ended["billed_seconds"], int(waited) - 1, ended)
        self.assertLessEqual(ended["billed_seconds"],
                             (ended_at - running_at).total_seconds() + 1, ended)
        self.assertMoney(ended)
        self.assertGreater(ended["charged_micro"], 0)
        self.assertEqual(ended["refunded_micro"], 0)
        # Stopping again: it has ended.
        self.assertError(cust.c.post(f"{API}/rentals/{rid}/stop"), 409)
        self.assertEqual(notices(cust, "rental.ended"), [], "its own stop tells it nothing")

        b = balance(cust)
        self.assertEqual(b["balance_micro"], 20 * USDC - ended["charged_micro"], b)
        self.assertEqual(b["running_rentals"], 0, b)
        self.assertIsNone(b["seconds_left"])
        self.assertStatementMatches(cust, 20 * USDC, [ended])
        self.assertLedgerOk()
        # The container is gone, the GPUs free again.
        wait_until(lambda: not self.managed_containers(), 15, "the rental's container removed")
        wait_until(lambda: free_gpus(cust.c, offer["id"]) == 4, 5, "4 GPUs free again")
        # Lists: the customer's own (ended), the admin's.
        r = cust.c.get(f"{API}/rentals", query={"state": "ended"})
        self.assertEqual([x["id"] for x in r.body["items"]], [rid])
        r = cust.c.get(f"{API}/rentals", query={"state": "active"})
        self.assertEqual(r.body["items"], [])
        self.assertIn(rid, [x["id"] for x in self.admin.c.get(f"{API}/rentals").body["items"]])

    def test_enterprise_commission(self):
        prov, mid, offer = self.provider_machine(gpus=1, price=1_234_567, tier="enterprise",
                                                 name="Ent")
        self.assertEqual(prov.c.get(f"{API}/providers/me").body["commission_bps"], 1500)
        cust = self.customer(5 * USDC)
        rid = self.rent(cust, offer["id"])["id"]
        self.assertEqual(get_rental(cust, rid)["fee_bps"], 1500)
        wait_running(cust, rid)
        time.sleep(3)
        self.assertStatus(cust.c.post(f"{API}/rentals/{rid}/stop"), 200)
        ended = wait_ended(cust, rid)
        self.assertGreater(ended["billed_seconds"], 0)
        self.assertMoney(ended)
        self.assertEqual(balance(cust)["balance_micro"], 5 * USDC - ended["charged_micro"])
        self.assertLedgerOk()

    # -- never billed when it never ran

    def test_a_container_that_never_starts_is_never_billed(self):
        prov, mid, offer = self.provider_machine(gpus=2)
        cust = self.customer(10 * USDC)
        # A registry that answers: it has no such image (manifest unknown).
        registry = dockerenv.LocalRegistry().start()
        self.addCleanup(registry.stop)
        # The engine pulls in its own network namespace: the registry's port reaches it.
        self.addCleanup(self.dock.forward(registry.port).close)
        # Nothing listens on port 9 of loopback: the pull fails at once (the engine trusts
        # loopback registries without TLS). A command that is not in the image: depending
        # on the engine, the start fails, or the container starts and exits at once with
        # 127 (the shell's "not found") within its first second.
        cases = {
            "image that cannot be pulled": (dict(image="127.0.0.1:9/gpunex-test/missing:1"),
                                            {("start_failed", None)},
                                            ("registry_unreachable", "connection refused")),
            "image the registry does not have": (
                dict(image=f"{registry.address}/gpunex-test/missing:1"),
                {("start_failed", None)}, ("image_not_found", "manifest unknown")),
            "command that does not exist": (dict(command=["/no/such/program"]),
                                            {("start_failed", None), ("exited", 127)}, None),
        }
        ended = []
        for label, (kw, endings, engine) in cases.items():
            with self.subTest(case=label):
                rid = self.rent(cust, offer["id"], **kw)["id"]
                r = wait_ended(cust, rid, 60)
                self.assertIn((r["end_reason"], r["exit_code"]), endings, f"{label}: {r}")
                self.assertEqual(r["end_party"], "customer", f"{label}: {r}")
                self.assertEqual((r["billed_seconds"], r["charged_micro"], r["fee_micro"],
                                  r["provider_micro"]), (0, 0, 0, 0), f"{label}: {r}")
                if r["end_reason"] == "start_failed":
                    self.assertIsNone(r["running_at"], r)
                self.assertTrue(r["detail"], r)
                if engine:
                    cause, words = engine
                    # The customer reads one sentence for both pulls: nothing of what
                    # answered, or did not, on the provider's side.
                    self.assertEqual(r["detail"], PULL_FAILED, r)
                    mine = [w for w in cust.c.get(f"{API}/workloads").body["items"]
                            if w["spec"]["image"] == kw["image"]]
                    self.assertEqual(len(mine), 1, mine)
                    self.assertEqual(mine[0]["end_reason"], PULL_FAILED, mine)
                    self.assertNotIn("end_cause", mine[0])
                    # The provider reads the engine's words and the cause.
                    wid = get_rental(prov, rid)["workload_id"]
                    w = prov.c.get(f"{API}/workloads/{wid}").body
                    self.assertEqual(w["end_cause"], cause, w)
                    self.assertIn(words, w["end_reason"], w)
                    self.assertIn(kw["image"].split("/")[0], w["end_reason"], w)
                ended.append(r)
        self.assertEqual(balance(cust)["balance_micro"], 10 * USDC)
        items = self.assertStatementMatches(cust, 10 * USDC, ended)
        self.assertEqual([i["kind"] for i in items], ["operator_credit"], items)
        self.assertLedgerOk()
        wait_until(lambda: not self.managed_containers(), 15, "no container left")
        wait_until(lambda: free_gpus(cust.c, offer["id"]) == 2, 5, "both GPUs free again")

    # -- who ended it (issue 24): the party follows what the engine says

    def test_a_container_past_its_own_memory_limit_is_the_customers_doing(self):
        """The kernel kills the container at its own memory limit (the rental's share of
        the host's memory): out_of_memory, the customer's. Charged for what it ran, not
        refunded, and the provider's reliability is not lowered."""
        gpus = gpus_for_memory_share()
        prov, mid, offer = self.provider_machine(gpus=gpus, price=360_000)
        cust = self.customer(1 * USDC)
        before = first_reliability(prov, mid)
        self.assertEqual(before["events"], [], before)
        rid = self.rent(cust, offer["id"], command=oom_command(gpus))["id"]
        wait_running(cust, rid)
        ended = wait_ended(cust, rid, 120)
        self.assertEqual((ended["end_reason"], ended["end_party"]),
                         ("out_of_memory", "customer"), ended)
        self.assertEqual(ended["exit_code"], 137, ended)
        self.assertGreaterEqual(ended["billed_seconds"], 2, ended)
        self.assertGreater(ended["charged_micro"], 0, ended)
        self.assertEqual(ended["refunded_micro"], 0, ended)
        self.assertMoney(ended)
        w = prov.c.get(f"{API}/workloads/{get_rental(prov, rid)['workload_id']}").body
        self.assertEqual((w["end_cause"], w["end_party"], w["end_reason"]),
                         ("oom_killed", "customer", "out of memory"), w)
        self.assertEqual(ended["detail"],
                         f"The workload used more memory than its limit of "
                         f"{w['spec']['memory_mb']} MiB and was stopped by the kernel.", ended)
        self.assertEqual(balance(cust)["balance_micro"], USDC - ended["charged_micro"])
        self.assertStatementMatches(cust, USDC, [ended])
        self.assertLedgerOk()
        # The customer is told of an end it did not ask for; the provider is not (its side
        # did nothing wrong).
        told = notices(cust, "rental.ended")
        self.assertEqual(len(told), 1, told)
        self.assertIn(ended["detail"].rstrip("."), told[0]["body"])
        self.assertEqual(notices(prov, "rental.ended_provider_side"), [])
        # A completed job of the customer's: the completion rises from its prior, no
        # provider-side ending appears, the score does not fall.
        after = wait_until(
            lambda: (lambda r: r if r["components"]["completion"] >
                     before["components"]["completion"] else None)(reliability(prov, mid)),
            15, "the ending counted in the reliability score")
        self.assertEqual([e for e in after["events"] if e["kind"] == "job_ended"], [], after)
        self.assertGreaterEqual(after["score"], before["score"], after)
        wait_until(lambda: not self.managed_containers(), 15, "the container removed")

    def test_a_container_removed_on_the_host_is_the_providers_and_refunded(self):
        """Someone on the provider's host removes the running container (`docker rm -f`):
        container_removed, the provider's. Refunded in full within early_fault_refund_s,
        and a provider-side ending in its reliability."""
        prov, mid, offer = self.provider_machine(gpus=1, price=360_000)
        cust = self.customer(1 * USDC)
        before = first_reliability(prov, mid)
        rid = self.rent(cust, offer["id"])["id"]
        wait_running(cust, rid)
        time.sleep(3)
        cs = self.managed_containers()
        self.assertEqual(len(cs), 1, cs)
        self.dock.cli("rm", "-f", cs[0]["Id"])
        ended = wait_ended(cust, rid, 30)
        self.assertEqual((ended["end_reason"], ended["end_party"]),
                         ("container_removed", "provider"), ended)
        self.assertGreaterEqual(ended["billed_seconds"], 2, ended)
        self.assertGreater(ended["charged_micro"], 0, ended)
        self.assertMoney(ended)
        self.assertEqual(ended["refunded_micro"], ended["charged_micro"], ended)
        self.assertEqual(ended["detail"], "The container was removed on the provider's machine.")
        self.assertEqual(balance(cust)["balance_micro"], USDC, "the customer paid nothing")
        self.assertStatementMatches(cust, USDC, [ended])
        self.assertLedgerOk()
        w = prov.c.get(f"{API}/workloads/{get_rental(prov, rid)['workload_id']}").body
        self.assertEqual((w["end_cause"], w["end_party"]), ("container_gone", "provider"), w)
        rel = wait_until(
            lambda: (lambda r: r if any(e["kind"] == "job_ended" for e in r["events"])
                     else None)(reliability(prov, mid)),
            15, "a provider-side ending in the reliability score")
        self.assertLess(rel["components"]["completion"], before["components"]["completion"], rel)
        self.assertLess(rel["score"], before["score"], rel)
        wait_until(lambda: free_gpus(cust.c, offer["id"]) == 1, 15, "the GPU offered again")
        # Both are told (issue 30 item 1): the customer in its sentence, the provider what
        # to fix there, with what the machine said.
        told = notices(cust, "rental.ended")
        self.assertEqual(len(told), 1, told)
        self.assertIn("The container was removed on the provider's machine", told[0]["body"])
        self.assertEqual(told[0]["link"], f"/#/rentals/{rid}")
        told = notices(prov, "rental.ended_provider_side")
        self.assertEqual(len(told), 1, told)
        self.assertIn("was refunded to the customer", told[0]["body"])
        self.assertIn("leave containers labelled io.gpunex.* alone", told[0]["body"])
        self.assertIn(f"What the machine said: {w['end_reason']}", told[0]["body"])
        self.assertEqual(notices(cust, "rental.ended_provider_side"), [])

    # -- limits: max_cost, the balance

    def test_max_cost_ends_the_rental_at_exactly_that_cost(self):
        # 360 000 per GPU-hour: 100 micro-USDC per GPU-second; 700 is reached at 7 s.
        prov, mid, offer = self.provider_machine(gpus=1, price=360_000)
        cust = self.customer(1 * USDC)
        rid = self.rent(cust, offer["id"], max_cost_micro=700)["id"]
        self.assertEqual(get_rental(cust, rid)["max_cost_micro"], 700)
        wait_running(cust, rid)
        ended = wait_ended(cust, rid, 40)
        self.assertEqual((ended["end_reason"], ended["end_party"]), ("max_cost", "customer"),
                         ended)
        self.assertEqual((ended["billed_seconds"], ended["charged_micro"]), (7, 700), ended)
        self.assertMoney(ended)
        self.assertEqual(balance(cust)["balance_micro"], 1 * USDC - 700)
        self.assertLedgerOk()
        wait_until(lambda: not self.managed_containers(), 15, "the container removed")

    # -- the provider's fault

    def test_agent_killed_mid_rental_ends_as_agent_lost(self):
        prov, mid, offer = self.provider_machine(gpus=1, price=360_000)
        cust = self.customer(1 * USDC)
        rid = self.rent(cust, offer["id"])["id"]
        running = wait_running(cust, rid)
        self.assertEqual(len(self.managed_containers()), 1)
        time.sleep(3)
        killed_wall = dt.datetime.now(dt.timezone.utc)
        killed = time.monotonic()
        prov.agent.kill()
        ended = wait_ended(cust, rid, OFFLINE_AFTER_S + AGENT_LOST_GRACE_S + 15)
        took = time.monotonic() - killed
        self.assertEqual((ended["end_reason"], ended["end_party"]), ("agent_lost", "provider"),
                         ended)
        self.assertLessEqual(took, OFFLINE_AFTER_S + AGENT_LOST_GRACE_S + 5,
                             "ended within the grace after the heartbeats stopped")
        ran = (killed_wall - parse_time(running["running_at"])).total_seconds()
        with self.subTest(check="billed to the last heartbeat"):  # the rest still runs
            self.assertLessEqual(ended["billed_seconds"], ran + HEARTBEAT_S + 1,
                                 f"billed up to the last heartbeat only ({ran:.1f} s ran): "
                                 f"{ended}")
        self.assertGreaterEqual(ended["billed_seconds"], 1, ended)
        self.assertMoney(ended)
        # The provider's fault within early_fault_refund_s (600 s): refunded in full.
        self.assertEqual(ended["refunded_micro"], ended["charged_micro"], ended)
        b = balance(cust)["balance_micro"]
        self.assertEqual(b, 1 * USDC, "the customer paid nothing in the end")
        self.assertStatementMatches(cust, 1 * USDC, [ended])
        self.assertLedgerOk()
        # The container outlived the agent; the restarted agent removes it.
        self.assertEqual(len(self.managed_containers()), 1)
        prov.agent.start()
        wait_until(lambda: not self.managed_containers(), 20,
                   "the lost rental's container removed after the agent restarted")
        self.assertEqual(get_rental(cust, rid)["state"], "ended")
        wait_until(lambda: free_gpus(cust.c, offer["id"]) == 1, 15, "the GPU offered again")

    # -- idempotency and races

    def test_idempotent_create_makes_one_rental(self):
        prov, mid, offer = self.provider_machine(gpus=4)
        cust = self.customer(10 * USDC)
        body = rental_body(offer["id"])
        key = {"Idempotency-Key": "rent-once-1"}
        first = cust.c.post(f"{API}/rentals", body, headers=key)
        self.assertStatus(first, 201)
        for _ in range(3):
            again = cust.c.post(f"{API}/rentals", body, headers=key)
            self.assertStatus(again, 201)
            self.assertEqual(again.body["id"], first.body["id"])
            self.assertEqual(again.header("Idempotent-Replayed"), "true")
        self.assertEqual(self.count("rentals"), 1)
        # The same key with another body: refused, nothing made.
        r = cust.c.post(f"{API}/rentals", rental_body(offer["id"], gpus=2), headers=key)
        self.assertError(r, 422, fields=["Idempotency-Key"])
        self.assertEqual(self.count("rentals"), 1)

        # 8 threads at once with a new key: one rental.
        answers, lock = [], threading.Lock()
        barrier = threading.Barrier(8)

        def send():
            barrier.wait()
            r = cust.c.post(f"{API}/rentals", body, headers={"Idempotency-Key": "rent-once-2"})
            with lock:
                answers.append(r)

        threads = [threading.Thread(target=send) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertTrue(all(a.status in (201, 409) for a in answers), answers)
        ids = {a.body["id"] for a in answers if a.status == 201}
        self.assertEqual(len(ids), 1, answers)
        self.assertEqual(self.count("rentals"), 2)
        r = cust.c.get(f"{API}/rentals", query={"state": "active"})
        self.assertEqual(sorted(x["id"] for x in r.body["items"]),
                         sorted([first.body["id"]] + list(ids)))
        for rid in [first.body["id"]] + list(ids):
            wait_running(cust, rid)
        self.assertEqual(len(self.managed_containers()), 2)
        # An idempotent stop too.
        rid = first.body["id"]
        key = {"Idempotency-Key": "stop-once"}
        a = cust.c.post(f"{API}/rentals/{rid}/stop", headers=key)
        b = cust.c.post(f"{API}/rentals/{rid}/stop", headers=key)
        self.assertStatus(a, 200)
        self.assertStatus(b, 200)
        self.assertEqual(a.body, b.body)
        wait_ended(cust, rid)

    def test_idempotent_credit_credits_once(self):
        cust = self.srv.user("Ivo Idem")
        key = "credit-once"
        a = credit(self.admin, cust.id, 5 * USDC, reference="wire 42", key=key)
        b = self.admin.c.post(f"{API}/admin/credits", {"user_id": cust.id,
                                                        "amount_micro": 5 * USDC,
                                                        "reference": "wire 42"},
                              headers={"Idempotency-Key": key})
        self.assertStatus(b, 201)
        self.assertEqual(b.body, a)
        self.assertEqual(a["balance_micro"], 5 * USDC)
        self.assertEqual(a["transfer"]["kind"], "operator_credit")
        self.assertEqual(a["transfer"]["amount_micro"], 5 * USDC)
        self.assertIsNone(a["transfer"]["rental_id"])
        self.assertEqual(balance(cust)["balance_micro"], 5 * USDC)
        self.assertLedgerOk()

    def test_two_customers_race_for_the_last_gpu(self):
        prov, mid, offer = self.provider_machine(gpus=3)
        holder = self.customer(10 * USDC, name="Hana Holder")
        rid = self.rent(holder, offer["id"], gpus=2)["id"]
        wait_until(lambda: free_gpus(holder.c, offer["id"]) == 1, 5, "one GPU left")
        racers = [self.customer(10 * USDC, name=f"Rex Racer{i}") for i in range(2)]
        answers = {}
        barrier = threading.Barrier(2)

        def race(c):
            barrier.wait()
            answers[c.id] = c.c.post(f"{API}/rentals", rental_body(offer["id"]))

        threads = [threading.Thread(target=race, args=(c,)) for c in racers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(a.status for a in answers.values())
        self.assertEqual(statuses, [201, 409], answers)
        loser = next(a for a in answers.values() if a.status == 409)
        self.assertError(loser, 409)
        self.assertEqual(self.count("rentals"), 2)
        winner_c = next(c for c in racers if answers[c.id].status == 201)
        loser_c = next(c for c in racers if answers[c.id].status == 409)
        self.assertEqual(balance(loser_c)["balance_micro"], 10 * USDC)
        self.assertEqual(cust_rentals(loser_c), [])
        wait_running(winner_c, answers[winner_c.id].body["id"])
        wait_running(holder, rid)
        wait_until(lambda: free_gpus(holder.c, offer["id"]) == 0, 5, "no GPU left")
        # Now nothing is free: more than free is refused by name.
        r = loser_c.c.post(f"{API}/rentals", rental_body(offer["id"]))
        self.assertError(r, 422, fields=["gpus"])

    def test_customers_see_only_their_own_rentals(self):
        prov, mid, offer = self.provider_machine(gpus=2)
        # Another provider (without a machine: an agent of its own would share the engine).
        other_prov, _, _ = provider_with_agent_token(self.srv, self.admin, name="Otto")
        a = self.customer(10 * USDC, name="Anna A")
        b = self.customer(10 * USDC, name="Bert B")
        ra = self.rent(a, offer["id"])["id"]
        rb = self.rent(b, offer["id"])["id"]
        wait_running(a, ra)
        self.assertEqual(cust_rentals(a), [ra])
        self.assertEqual(cust_rentals(b), [rb])
        for path in (f"{API}/rentals/{ra}", f"{API}/rentals/{ra}/logs"):
            self.assertError(b.c.get(path), 404, msg=path)
            self.assertError(other_prov.c.get(path), 404, msg=path)
        self.assertError(b.c.post(f"{API}/rentals/{ra}/stop"), 404)
        self.assertError(other_prov.c.post(f"{API}/rentals/{ra}/stop"), 404)
        self.assertEqual(get_rental(a, ra)["state"], "running")
        r = other_prov.c.get(f"{API}/providers/me/rentals")
        self.assertEqual(r.body["items"], [])
        r = prov.c.get(f"{API}/providers/me/rentals")
        self.assertEqual(sorted(x["id"] for x in r.body["items"]), sorted([ra, rb]))
        # The admin stops A's rental: ended by the platform (operator).
        r = self.admin.c.post(f"{API}/rentals/{ra}/stop")
        self.assertStatus(r, 200)
        ended = wait_ended(a, ra)
        self.assertEqual((ended["end_reason"], ended["end_party"]), ("operator", "platform"))
        self.assertMoney(ended)


def cust_rentals(user):
    r = user.c.get(f"{API}/rentals")
    assert r.status == 200, r
    return [x["id"] for x in r.body["items"]]


# With the clock 11 times as fast, a heartbeat every second of real time is 11 s of
# gpunexd's: machines must not count as offline or lost meanwhile.
FAST_CLOCK_TOML = RENTALS_TOML.replace(
    f"offline_after_s = {OFFLINE_AFTER_S}", "offline_after_s = 60").replace(
    f"agent_lost_grace_s = {AGENT_LOST_GRACE_S}", "agent_lost_grace_s = 120")
assert "offline_after_s = 60" in FAST_CLOCK_TOML and "agent_lost_grace_s = 120" in FAST_CLOCK_TOML


class FastClockRentalsMixin(RentalsHelpers):
    """Rentals whose caps are a minute of gpunexd's clock, which the test runs fast rather
    than wait a minute of real time. The containers run in real time; gpunexd bills to each
    machine's last heartbeat, so the clock is only ever ahead of what it bills."""

    EXTRA_TOML = FAST_CLOCK_TOML
    SERVER = ClockGpunexd

    def test_a_minute_of_max_duration_or_of_balance_ends_at_exactly_its_cost(self):
        """Three customers rent on one machine at once (each case waits a minute of
        gpunexd's clock, run fast, so they wait it together; one agent, as agents on one
        engine would remove each other's containers), at 100 micro-USDC per GPU-second:

        - max_duration_s = 60 ends a rental at 60 s billed, 6 000 micro-USDC;
        - the balance runs out at exactly zero: two rentals of one GPU each, each with
          max_duration_s = 60, for a customer credited exactly the first minute of both
          (12 000); a third is refused though a GPU is free, as the balance is held for the
          first two's minutes (issue 24: each rental needs the balance less what the
          customer's active rentals will still draw in their first hour). The two draw on
          it together and end at 60 s (by max_duration or by the balance, whichever the
          tick sees first), the balance exactly 0 and never below on the way;
        - one hour of balance for one minute: the balance covers exactly max_duration_s
          (60 s, shorter than an hour); one micro-USDC less is refused, and so is a rental
          without max_duration_s (an hour is needed); it ends at 60 s at a balance of 0."""
        prov, mid, offer = self.provider_machine(gpus=5, price=360_000)
        dora = self.customer(1 * USDC, name="Dora Duration")
        tess = self.customer(12000, name="Tess Twice")
        mia = self.customer(6000, name="Mia Minute")
        short = self.customer(5999, name="Sam Short")

        # max_duration_s
        by_duration = self.rent(dora, offer["id"], max_duration_s=60)["id"]
        # Two rentals made before either runs (billing starts when a container runs); a GPU
        # is free, but the balance is not.
        twice = [self.rent(tess, offer["id"], max_duration_s=60)["id"] for _ in range(2)]
        r = tess.c.post(f"{API}/rentals", rental_body(offer["id"], max_duration_s=60))
        self.assertError(r, 422, fields=["balance"])
        # One micro-USDC short of a minute is refused; without max_duration_s an hour is
        # needed.
        r = short.c.post(f"{API}/rentals", rental_body(offer["id"], max_duration_s=60))
        self.assertError(r, 422, fields=["balance"])
        r = mia.c.post(f"{API}/rentals", rental_body(offer["id"]))
        self.assertError(r, 422, fields=["balance"])
        minute = self.rent(mia, offer["id"], max_duration_s=60)["id"]
        self.assertGreaterEqual(free_gpus(dora.c, offer["id"]), 1, "a GPU is still free")
        wait_running(dora, by_duration)
        for rid in twice:
            wait_running(tess, rid)
        wait_running(mia, minute)

        lowest = None
        deadline = time.monotonic() + 90
        with self.srv.fast_clock():
            while True:
                b = balance(tess)["balance_micro"]
                lowest = b if lowest is None else min(lowest, b)
                self.assertGreaterEqual(b, 0, "the balance never goes below 0")
                rs = [get_rental(tess, x) for x in twice]
                if all(r["state"] == "ended" for r in rs):
                    break
                self.assertLess(time.monotonic(), deadline, rs)
                time.sleep(0.25)
            # The other two end at the same minute of the clock.
            ended_by_duration = wait_ended(dora, by_duration, 30)
            ended_minute = wait_ended(mia, minute, 30)

        with self.subTest(case="max_duration_s"):
            ended = ended_by_duration
            self.assertEqual((ended["end_reason"], ended["end_party"]),
                             ("max_duration", "customer"), ended)
            self.assertEqual((ended["billed_seconds"], ended["charged_micro"]), (60, 6000),
                             ended)
            self.assertMoney(ended)
            self.assertEqual(balance(dora)["balance_micro"], 1 * USDC - 6000)
        with self.subTest(case="the balance runs out at exactly zero"):
            for r in rs:
                self.assertIn((r["end_reason"], r["end_party"]),
                              (("max_duration", "customer"), ("balance_exhausted", "platform")),
                              r)
                self.assertEqual((r["billed_seconds"], r["charged_micro"]), (60, 6000), r)
                self.assertMoney(r)
            self.assertEqual(balance(tess)["balance_micro"], 0)
            self.assertEqual(lowest, 0)
            self.assertStatementMatches(tess, 12000, rs)
            # A balance of 0 rents nothing.
            r = tess.c.post(f"{API}/rentals", rental_body(offer["id"], max_duration_s=60))
            self.assertError(r, 422, fields=["balance"])
        with self.subTest(case="one hour of balance for one minute"):
            ended = ended_minute
            self.assertIn(ended["end_reason"], ("max_duration", "balance_exhausted"), ended)
            self.assertEqual((ended["billed_seconds"], ended["charged_micro"]), (60, 6000),
                             ended)
            self.assertMoney(ended)
            self.assertEqual(balance(mia)["balance_micro"], 0)
        self.assertLedgerOk()
        wait_until(lambda: not self.managed_containers(), 15, "the containers removed")


class RentalsSqliteTest(RentalsMixin, ServerTestCase):
    BACKEND = "sqlite"

    def test_two_agents_on_one_engine_leave_each_others_rentals_alone(self):
        """Issue 30: two machines whose agents share one Docker engine. Each
        agent's hello reconciles the engine with what its platform says it runs: agent B,
        restarted while A's rental runs, must not remove A's container (each agent labels
        what it makes with its own io.gpunex.agent and touches only that)."""
        prov_a, mid_a, offer_a = self.provider_machine(gpus=1, name="Ann")
        prov_b, mid_b, offer_b = self.provider_machine(gpus=1, name="Ben")
        cust = self.customer(1 * USDC)
        rid = self.rent(cust, offer_a["id"])["id"]
        wait_running(cust, rid)
        [container] = self.managed_containers()
        labels = self.dock.inspect(container["Id"])["Config"]["Labels"]
        self.assertRegex(labels.get("io.gpunex.agent", ""), r"^[0-9a-f]{12}$", labels)
        # B restarts: its hello reconciles (it runs nothing), and A's container stays.
        prov_b.agent.stop()
        prov_b.agent.start()
        wait_until(lambda: self.admin.c.get(f"{API}/machines/{mid_b}").body.get("status")
                   == "online", 60, "agent B back online")
        time.sleep(3)  # the reconcile after the hello
        self.assertEqual([c["Id"] for c in self.managed_containers()], [container["Id"]])
        self.assertEqual(get_rental(cust, rid)["state"], "running")
        # A's own stop still ends it and removes what A made.
        self.assertStatus(cust.c.post(f"{API}/rentals/{rid}/stop", {}), 200)
        wait_ended(cust, rid)
        wait_until(lambda: not self.managed_containers(), 30, "A's container removed")


class RentalsPostgresTest(RentalsMixin, ServerTestCase):
    BACKEND = "postgresql"


class FastClockRentalsSqliteTest(FastClockRentalsMixin, ServerTestCase):
    BACKEND = "sqlite"


class FastClockRentalsPostgresTest(FastClockRentalsMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
