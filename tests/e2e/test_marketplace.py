"""The marketplace (issue 13: MKT-1..4, PRC-1..4, SPEC §13a) end to end: a real gpunexd and
real gpunex-agents reporting EMULATED GPUs, benchmarked with short phases so that every GPU
has a performance score, and one fake agent (the protocol by hand) with a non-emulated
GPU on CUDA 12.4, so that verified_only and min_cuda have something to tell apart.

The fleet (FLEET below): four providers, both tiers, four GPU models, seven machines at
different --emulate-perf, prices per provider and one machine override, locations and
commitments from the providers' applications. One machine (cora-2) has an outage while
the fleet is set up, so reliability scores differ; two offers (dino-1's and dino-2's L4)
tie exactly on rank, so the tie-breaks decide between them.

- search: every filter (alone, at its boundary and combined) with every sort: the test
  computes from the offers' own fields which offers match and in which order by the
  formula (rank = (R/100)·(value/median)^0.5·tier·commit; src/platform/market/ranking.h)
  and the ties, and checks ids, order, positions, matched, median_value and every explain
  factor;
- paging with limit=2 walks each order exactly once;
- a price edit (provider and machine override), a GPU disabled by its provider, an agent
  killed, a schedule that closes and a price removed each show in search within 1 s;
- anonymous visitors and customers see a pseudonym, never the provider or the machine;
- include_busy=true shows an offer whose GPUs are all busy (its GPU held in a benchmark),
  with the host facts its agent reported;
- the recommendation (no rentals: the catalog price) and the market summary;
- the provider's own offers with their place among the offers of their model and region,
  the same place a search by that model and region gives;
- 40+ bad filters and bad prices refused naming the field, changing nothing;
- the anonymous rate limit (its own small gpunexd).

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL (the offers are loaded from the
store; the search is in memory).
"""

import datetime as dt
import math
import re
import time
import unittest
import urllib.parse

from harness import (API, PG_SKIP_REASON, PG_URL, ApiAssertions, Gpunexd, RealAgent,
                     ServerTestCase, agent_binary, catalog_models, gpu_entry,
                     provider_with_agent_token, set_prices, wait_until)
from test_agent_channel import L4, FakeAgent
from test_benchmarks import BENCH_TOML, GOOD_NETWORK, GOOD_STORAGE, l4_figures

# Benchmarks on with short phases and thresholds that only the GPU figures can fail (as
# test_benchmarks' real-agent test); offline 3 s after the last heartbeat; the reliability
# score refreshed on changes only (so that it holds still while orders are compared); the
# anonymous rate limit out of the way (AnonymousRateLimitTest has its own server for it).
EXTRA_TOML = BENCH_TOML.format(interval=3600) + """
[reliability]
refresh_ms = 3600000

[market]
anonymous_searches_per_s = 100000
anonymous_burst = 100000
"""
OFFLINE_AFTER_S = 3  # BENCH_TOML's [fleet] offline_after_s

CHANGE_DEADLINE_S = 1.0  # a change shows in search within this (MKT-1)
CENT = 10_000  # micro-USDC

SORTS = ("rank", "price", "-performance", "-value", "-reliability")
TIER_FACTOR = {"enterprise": 1.10, "community": 1.00}
COMMIT_STEPS = ((12, 1.08), (6, 1.04), (3, 1.02), (0, 1.00))

L4_M, RTX, A100, H100 = "l4-24gb", "rtx4090-24gb", "a100-sxm-80gb", "h100-sxm-80gb"

# Providers: tier, the application's commitment and its GPU entries (model, city,
# country, region; an offer's location is its model's entry, else the first), prices.
PROVIDERS = {
    "enza": dict(tier="enterprise", commitment=12, company="Enza Compute Srl",
                 entries=[(H100, "Milan", "IT", "eu-south"),
                          (A100, "Frankfurt", "DE", "eu-central")],
                 prices={H100: 2_400_000, A100: 1_500_000}),
    "cora": dict(tier="community", commitment=6, company="Cora Cloud GmbH",
                 entries=[(L4_M, "Milan", "IT", "eu-south"), (RTX, "Paris", "FR", "eu-west")],
                 prices={L4_M: 420_000, RTX: 390_000}),
    "dino": dict(tier="community", commitment=0, company="Dino Data LLC",
                 entries=[(L4_M, "Berlin", "DE", "eu-central"), (H100, "Ashburn", "US", "us-east")],
                 prices={L4_M: 350_000, H100: 2_000_000}),
    # L4 is not in Elio's application: its L4 offers are where its first entry is.
    "elio": dict(tier="enterprise", commitment=3, company="Elio Reti SpA",
                 entries=[(A100, "Rome", "IT", "eu-south"), (RTX, "Rome", "IT", "eu-south")],
                 prices={A100: 1_300_000, L4_M: 450_000}),
}
# Machines: name, provider, --emulate-gpus, --emulate-perf. dino-2 starts after the others
# are listed (so it is listed later than dino-1, whose L4 offer it ties).
FLEET = [
    ("enza-1", "enza", f"{H100}:2,{A100}:1", 1.0),
    ("enza-2", "enza", f"{A100}:2", 0.9),
    ("cora-1", "cora", f"{L4_M}:2,{RTX}:1", 1.0),
    ("cora-2", "cora", f"{L4_M}:1", 0.8),
    ("dino-1", "dino", f"{L4_M}:3,{H100}:1", 0.95),
    ("elio-1", "elio", f"{A100}:1,{L4_M}:1", 1.0),
]
LATE = ("dino-2", "dino", f"{L4_M}:1", 0.95)
MACHINES = {name: (prov, gpus, perf) for name, prov, gpus, perf in FLEET + [LATE]}
VERIFIED = "dino-v"  # the fake agent's machine (Dino's): one non-emulated L4, CUDA 12.4
CORA2_OVERRIDE = 380_000  # cora-2's own L4 price

UTC = dt.timezone.utc
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def parse_time(s):
    if s is None:
        return None
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    return dt.datetime.fromisoformat(s)


def application(spec, full_name):
    def body(contact):
        return {
            "contact": {"full_name": full_name, "email": contact, "company": spec["company"]},
            "gpus": [gpu_entry(model, 4, 256, 1, 1, city=city, country=country, region=region)
                     for model, city, country, region in spec["entries"]],
            "infrastructure": {"ups": spec["tier"] == "enterprise",
                               "commitment_months": spec["commitment"],
                               "maintenance_notes": ""},
        }
    return body


# --------------------------------------------------------------------------- the formula


def value_of(o):
    return o["performance_score"] / (o["price_micro"] / 1e6) if o["price_micro"] > 0 else 0.0


def median(values):
    """The median (the mean of the two middle values for an even count); 0 when empty."""
    v = sorted(values)
    if not v:
        return 0.0
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def commit_factor(months):
    for at_least, factor in COMMIT_STEPS:
        if months >= at_least:
            return factor
    return 1.0


def explain_of(o, med):
    """The factors of SPEC §13a for offer `o` among offers whose median value is `med`."""
    r = min(max(o["reliability_score"], 0.0), 100.0) / 100
    v = value_of(o)
    vf = math.sqrt(v / med) if med > 0 else 1.0
    tf = TIER_FACTOR[o["tier"]]
    cf = commit_factor(o["commitment_months"])
    return {"reliability": r, "value": v, "median_value": med, "value_factor": vf,
            "tier_factor": tf, "commit_factor": cf, "rank": r * vf * tf * cf}


def sort_key(sort, o, e):
    """The sort's own key, then rank (higher first), then the ties: higher uptime_30d
    (null = 0), older listed_since, offer id."""
    own = {"rank": (), "price": (o["price_micro"],), "-performance": (-o["performance_score"],),
           "-value": (-e["value"],), "-reliability": (-o["reliability_score"],)}[sort]
    return own + (-e["rank"], -(o["uptime_30d"] or 0.0), parse_time(o["listed_since"]), o["id"])


def cuda_number(v):
    """"12.4" → 12004, as the platform compares CUDA versions; anything else 0."""
    m = re.fullmatch(r"(\d+)\.(\d+)", v or "")
    if not m or int(m.group(2)) >= 1000:
        return 0
    return int(m.group(1)) * 1000 + int(m.group(2))


def matches(o, q):
    """Whether offer `o` passes the filters of query `q` (the query string's values)."""
    if o["gpus_available"] < int(q.get("min_gpus", "1")):
        return False
    if "gpu_model" in q and o["gpu_model"] not in q["gpu_model"].split(","):
        return False
    checks = [
        ("min_vram_gb", lambda x: o["vram_gb"] >= float(x)),
        ("max_price_micro", lambda x: o["price_micro"] <= int(x)),
        ("country", lambda x: o["country"] == x.upper()),
        ("region", lambda x: o["region"] == x.lower()),
        ("tier", lambda x: o["tier"] == x),
        ("min_reliability", lambda x: o["reliability_score"] >= float(x)),
        ("min_performance", lambda x: o["performance_score"] >= float(x)),
        ("min_down_mbps", lambda x: (o["down_mbps"] or 0.0) >= float(x)),
        ("min_up_mbps", lambda x: (o["up_mbps"] or 0.0) >= float(x)),
        ("min_cuda", lambda x: cuda_number(o["cuda_version"]) >= cuda_number(x)),
        ("verified_only", lambda x: x != "true" or not o["emulated"]),
    ]
    return all(fn(q[k]) for k, fn in checks if k in q)


def expected_order(offers, q, sort="rank"):
    """[(offer, explain)] of the offers matching `q`, in the order of `sort`, and the
    median value."""
    hits = [o for o in offers if matches(o, q)]
    med = median([value_of(o) for o in hits])
    ranked = [(o, explain_of(o, med)) for o in hits]
    ranked.sort(key=lambda oe: sort_key(sort, *oe))
    return ranked, med


def ordinal(n):
    if 11 <= n % 100 <= 13:
        return f"{n}th"
    return f"{n}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def place_at(group, own, price):
    """The place `own` takes among `group` (which holds it) at `price`."""
    moved = [dict(o, price_micro=price) if o["id"] == own["id"] else o for o in group]
    med = median([value_of(o) for o in moved])
    mine = next(o for o in moved if o["id"] == own["id"])
    mine_key = sort_key("rank", mine, explain_of(mine, med))
    return 1 + sum(1 for o in moved
                   if o["id"] != own["id"] and sort_key("rank", o, explain_of(o, med)) < mine_key)


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


# --------------------------------------------------------------------------- the tests


@unittest.skipUnless(agent_binary(), "GPUNEX_AGENT (the gpunex-agent binary) is not set")
class MarketplaceMixin(ApiAssertions):
    """One gpunexd and one fleet for every test of the class (setUpClass): the tests that
    change something put it back."""

    BACKEND = "sqlite"

    # ------------------------------------------------------------------ the fleet

    @classmethod
    def setUpClass(cls):
        if cls.BACKEND == "postgresql" and not PG_URL:
            raise unittest.SkipTest(PG_SKIP_REASON)
        cls.srv = Gpunexd(cls.BACKEND, None, extra_toml=EXTRA_TOML,
                          root_toml="allow_emulated_gpus = true")
        cls.agents = {}
        cls.fake = None
        cls.failed = False
        try:
            cls.srv.start()
            cls._build_fleet()
        except BaseException:
            cls._dump_logs()
            cls._cleanup(keep=True)
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.failed:
            cls._dump_logs()
        cls._cleanup(keep=cls.failed)

    def run(self, result=None):
        # The logs of a failed test's fleet are printed (and its data kept) at the end.
        result = super().run(result)
        if result is not None and any(getattr(t, "test_case", t) is self
                                      for t, _ in result.failures + result.errors):
            type(self).failed = True
        return result

    @classmethod
    def _dump_logs(cls):
        print(f"\n--- gpunexd logs (data in {cls.srv.tmp}) ---\n" + cls.srv.logs()[-6000:])
        for name, a in cls.agents.items():
            print(f"--- agent {name} ({a.state_dir}) ---\n" + a.logs()[-1500:])

    @classmethod
    def _cleanup(cls, keep=False):
        if cls.fake:
            cls.fake.cleanup()
        for a in cls.agents.values():
            a.cleanup(keep=keep)
        cls.srv.cleanup(keep=keep)

    @classmethod
    def _build_fleet(cls):
        srv = cls.srv
        cls.admin = srv.admin()
        cls.customer = srv.user("Carla Customer")
        cls.catalog = {m["id"]: m for m in catalog_models(srv)}
        cls.providers, tokens = {}, {}
        for name, spec in PROVIDERS.items():
            full_name = f"{name.capitalize()} Person"
            u, token, _ = provider_with_agent_token(
                srv, cls.admin, name=name.capitalize(), tier=spec["tier"], priced=False,
                application=application(spec, full_name))
            u.name, u.spec = full_name, spec
            set_prices(u, spec["prices"])
            cls.providers[name] = u
            tokens[name] = token
        cls.fake = FakeAgent(srv, tokens["dino"], models=(L4,), emulated=False)
        cls.fake.join()
        cls._answer_benchmark(cls.fake)
        cls.machine_of = {VERIFIED: cls.fake.machine_id}
        cls.owner_of = {name: prov for name, (prov, _, _) in MACHINES.items()}
        cls.owner_of[VERIFIED] = "dino"

        def start(name):
            # One machine at a time: an offer's listed_since (which breaks ties) comes from
            # its machine's, and the API shows milliseconds; two machines online in the same
            # millisecond would be told apart by what the test cannot see.
            prov, gpus, perf = MACHINES[name]
            cls.agents[name] = RealAgent(srv, tokens[prov], gpus, perf, name=name).start()
            wait_until(lambda: cls._match_machines([name]), 30, f"the machine of {name}",
                       interval=0.05)

        for name, _, _, _ in FLEET:
            start(name)
        cls._wait_listed([f[0] for f in FLEET])
        time.sleep(1.1)  # dino-2 listed at least a second after dino-1, whose offer it ties
        start(LATE[0])
        cls._wait_listed([LATE[0]])
        cls.name_of = {mid: name for name, mid in cls.machine_of.items()}
        r = cls.providers["cora"].c.put(f"{API}/machines/{cls.machine_of['cora-2']}/prices",
                                        {"items": [{"gpu_model": L4_M,
                                                    "price_micro": CORA2_OVERRIDE}]})
        assert r.status == 200, r
        cls.outage = cls._outage("cora-2")
        # Every machine's offers in the index, at their prices, cora-2 with its lowered score.
        cls._wait_offers(lambda offers: len(offers) == cls._offer_count() and any(
            o["price_micro"] == CORA2_OVERRIDE and o["reliability_score"] < 90 for o in offers))
        cls._wait_return_scored("cora-2")

    @classmethod
    def _offer_count(cls):
        """One offer per machine and GPU model."""
        n = sum(len(gpus.split(",")) for _, gpus, _ in MACHINES.values())
        return n + 1  # the fake agent's L4

    @classmethod
    def _answer_benchmark(cls, fake):
        """The fake agent's first benchmark: L4 figures at 0.9 of the reference, real (not
        emulated), network and storage as test_benchmarks' fake agents report them."""
        cmd = fake.expect_command("run_benchmark", timeout=10)
        fake.send({"type": "ack", "command_id": cmd["command_id"]})
        gpus = [{"uuid": g["uuid"], "ok": True, "result": dict(l4_figures(0.9), emulated=False)}
                for g in cmd["payload"]["gpus"]]
        fake.send({"type": "result", "command_id": cmd["command_id"], "ok": True,
                   "data": {"benchmark_id": cmd["payload"]["benchmark_id"], "emulated": False,
                            "gpus": gpus, "network": GOOD_NETWORK, "storage": GOOD_STORAGE}})

    @classmethod
    def _machines(cls):
        r = cls.admin.c.get(f"{API}/machines")
        assert r.status == 200, r
        return r.body["items"]

    @classmethod
    def _wait_listed(cls, names, timeout=90):
        """Waits until the agents `names` have each a machine, online, every GPU listed."""
        wait_until(lambda: cls._match_machines(names), timeout, f"the machines of {names}",
                   interval=0.2)

        def ready():
            for name in names:
                m = cls.admin.c.get(f"{API}/machines/{cls.machine_of[name]}").body
                if m["status"] != "online" or not all(g["listing_state"] == "listed"
                                                      for g in m["gpus"]):
                    return None
            return True

        wait_until(ready, timeout, f"the machines of {names} online with every GPU listed",
                   interval=0.25)

    @classmethod
    def _match_machines(cls, names):
        """Finds each agent's machine by its provider and its GPUs (model counts)."""
        machines = cls._machines()
        for name in names:
            if name in cls.machine_of:
                continue
            a = cls.agents[name]
            if a.proc.poll() is not None:
                raise AssertionError(f"agent {name} exited ({a.proc.returncode}):\n{a.logs()}")
            prov, gpus, _ = MACHINES[name]
            want = sorted((part.split(":")[0], int(part.split(":")[1]))
                          for part in gpus.split(","))
            prov_id = cls.providers[prov].id
            for m in machines:
                if m["id"] in cls.machine_of.values() or m["provider_id"] != prov_id:
                    continue
                counts = {}
                for g in m["gpus"]:
                    counts[g["catalog_id"]] = counts.get(g["catalog_id"], 0) + 1
                if sorted(counts.items()) == want:
                    cls.machine_of[name] = m["id"]
                    break
            else:
                return False
        return True

    @classmethod
    def _search_all(cls, client=None, **query):
        q = {"limit": "200", "explain": "true"}
        q.update(query)
        r = (client or cls.customer.c).get(f"{API}/offers", query=q)
        assert r.status == 200, r
        return r.body["items"]

    @classmethod
    def _wait_offers(cls, pred, timeout=20):
        return wait_until(lambda: (lambda o: o if pred(o) else None)(cls._search_all()),
                          timeout, "the offers", interval=0.2)

    def setUp(self):
        super().setUp()
        self._wait_scores_quiet()

    @classmethod
    def _wait_scores_quiet(cls, quiet_s=2.0, timeout=60):
        """Waits until no machine's reliability score has been refreshed for `quiet_s`. A
        refresh follows each change (an earlier test's schedule, GPUs or the outage's end)
        within a second, later on a loaded machine, and accounts the time since, which
        moves cora-2's score: a test compares scores read at different times, so none may
        come in the middle of one."""
        def computed():
            return [cls.admin.c.get(f"{API}/machines/{mid}/reliability").body.get("computed_at")
                    for mid in sorted(cls.name_of)]
        last, since = computed(), time.monotonic()
        deadline = since + timeout
        while time.monotonic() < deadline:
            time.sleep(0.25)
            now = computed()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return
        raise AssertionError(f"reliability scores kept being refreshed for {timeout} s")

    @classmethod
    def _wait_return_scored(cls, name, timeout=30):
        """Waits for the reliability refresh that follows the machine's return (within a
        second of it, later on a loaded machine) and for its score in the machine's offers:
        the tests compare scores read at different times, so that refresh must not come in
        the middle of one."""
        mid = cls.machine_of[name]
        seen = {}

        def check():
            m = cls.admin.c.get(f"{API}/machines/{mid}").body
            r = cls.admin.c.get(f"{API}/machines/{mid}/reliability")
            assert r.status == 200, r
            scores = {o["reliability_score"] for o in cls._search_all(cls.admin.c)
                      if o["machine_id"] == mid}
            seen.update(status=m["status"], since=m["status_since"],
                        computed_at=r.body["computed_at"], score=r.body["score"], offers=scores)
            if m["status"] != "online":
                return None
            if parse_time(r.body["computed_at"]) <= parse_time(m["status_since"]):
                return None
            # (the reliability page shows the score to two decimals)
            return {round(x, 2) for x in scores} == {r.body["score"]} or None
        try:
            wait_until(check, timeout, f"the score of {name} refreshed after its return",
                       interval=0.2)
        except AssertionError as e:
            raise AssertionError(f"{e}: {seen}") from None

    @classmethod
    def _outage(cls, name):
        """Kills the agent `name` and watches the machine go offline and its offers leave
        search; restarts it 3 s later and waits until its offers are back. Returns what was
        seen (wall-clock times)."""
        mid = cls.machine_of[name]
        admin = cls.admin.c
        before = [o["id"] for o in cls._search_all(admin) if o["machine_id"] == mid]
        assert before, f"{name} has no offers before the outage"
        killed = time.time()
        cls.agents[name].kill()
        offline_at = gone_at = None
        deadline = time.monotonic() + OFFLINE_AFTER_S + 15
        while (offline_at is None or gone_at is None) and time.monotonic() < deadline:
            if offline_at is None:
                m = admin.get(f"{API}/machines/{mid}").body
                if m["status"] == "offline":
                    offline_at = parse_time(m["status_since"]).timestamp()
            if gone_at is None:
                ids = {o["id"] for o in cls._search_all()}
                if not ids & set(before):
                    gone_at = time.time()
            time.sleep(0.03)
        # An outage counts from when the platform marks the machine offline: a few
        # seconds of it lower the score well below the others' (which have no outage).
        time.sleep(3)
        cls.agents[name].start()
        wait_until(lambda: {o["id"] for o in cls._search_all()} >= set(before), 30,
                   f"the offers of {name} back after the outage", interval=0.2)
        return {"killed": killed, "offline_at": offline_at, "gone_at": gone_at, "offers": before}

    # ------------------------------------------------------------------ helpers

    def stable(self, fn, tries=5):
        """fn(base) with `base` every offer (as the customer searches them) and the same
        list again after fn: a score refreshed meanwhile makes it try again."""
        for _ in range(tries):
            base = self._search_all()
            out = fn(base)
            if self._search_all() == base:
                return base, out
        self.fail("the offers kept changing while they were compared")

    def offers_by_machine(self):
        """offer id -> machine name (from the admin's view, which has the machine ids)."""
        return {o["id"]: self.name_of[o["machine_id"]] for o in self._search_all(self.admin.c)}

    def assertExplain(self, got, want, msg=""):
        self.assertEqual(set(got), set(want), msg)
        for k, v in want.items():
            self.assertTrue(close(got[k], v), f"{msg} explain.{k}: {got[k]!r} != {v!r}")

    def assertSearch(self, base, query, sort, label):
        """The search (as the customer) with `query` and `sort` answers exactly the offers
        of `base` that match, in the formula's order, with the formula's factors."""
        want, med = expected_order(base, query, sort)
        q = dict(query, sort=sort, explain="true", limit="200")
        r = self.customer.c.get(f"{API}/offers", query=q)
        self.assertStatus(r, 200, label)
        got = r.body
        self.assertEqual([o["id"] for o in got["items"]], [o["id"] for o, _ in want],
                         f"{label}: ids/order\n got  {self.describe(got['items'])}\n"
                         f" want {self.describe([o for o, _ in want])}")
        self.assertEqual(got["matched"], len(want), label)
        self.assertEqual(got["sort"], sort, label)
        self.assertIsNone(got["next_cursor"], label)
        self.assertTrue(close(got["median_value"], med),
                        f"{label}: median {got['median_value']} != {med}")
        for i, (item, (o, e)) in enumerate(zip(got["items"], want)):
            self.assertEqual(item["position"], i + 1, label)
            self.assertExplain(item["explain"], e, f"{label} {o['id']}")
            self.assertNotIn("machine_id", item, f"{label}: a customer sees no machine")
        return want

    def describe(self, offers):
        return [(o["id"][-6:], o["gpu_model"], o["price_micro"], round(o["performance_score"], 3),
                 round(o["reliability_score"], 3)) for o in offers]

    def within_deadline(self, pred, t0, what, clock=time.monotonic):
        """Polls pred() until it is true; fails unless that is within CHANGE_DEADLINE_S of
        t0 (on `clock`). Returns the seconds taken."""
        last = None
        while True:
            last = pred()
            now = clock()
            if last:
                took = now - t0
                self.assertLessEqual(took, CHANGE_DEADLINE_S,
                                     f"{what}: shown in search after {took:.3f} s")
                return took
            if now - t0 > CHANGE_DEADLINE_S:
                self.fail(f"{what}: not shown in search within {CHANGE_DEADLINE_S} s; "
                          f"last {last!r}")
            time.sleep(0.02)

    def price(self, machine, model=L4_M):
        """The price_micro of the machine's offer of `model` in search (None: no offer)."""
        return (self.offer(machine, model) or {}).get("price_micro")

    def offer(self, machine, model, client=None):
        """The machine's offer of `model` in search (None when it is not there)."""
        mid = self.machine_of[machine]
        for o in self._search_all(client or self.admin.c, gpu_model=model):
            if o["machine_id"] == mid:
                return o
        return None

    # ------------------------------------------------------------------ the fleet itself

    def test_fleet_offers_agree_with_the_machines(self):
        """One offer per machine and model, with the machine's GPUs, prices, benchmark
        figures and the provider's application terms."""
        offers = self._search_all(self.admin.c)
        self.assertEqual(len(offers), self._offer_count(), self.describe(offers))
        seen = set()
        listed_too_early = []
        for o in offers:
            name = self.name_of[o["machine_id"]]
            prov = self.providers[self.owner_of[name]]
            spec = prov.spec
            with self.subTest(offer=o["id"], machine=name, model=o["gpu_model"]):
                self.assertRegex(o["id"], r"^ofr_[0-9a-f]{20}$")
                self.assertNotIn((name, o["gpu_model"]), seen)
                seen.add((name, o["gpu_model"]))
                m = self.admin.c.get(f"{API}/machines/{o['machine_id']}").body
                gpus = sorted((g for g in m["gpus"] if g["catalog_id"] == o["gpu_model"]),
                              key=lambda g: g["index"])
                self.assertTrue(gpus)
                self.assertEqual((o["gpus_total"], o["gpus_available"]), (len(gpus), len(gpus)))
                self.assertEqual(o["gpu_performance_scores"],
                                 [g["performance_score"] for g in gpus])
                self.assertEqual(o["performance_score"], min(g["performance_score"] for g in gpus))
                self.assertGreater(o["performance_score"], 0, "benchmarked")
                cat = self.catalog[o["gpu_model"]]
                self.assertEqual(o["vram_gb"], cat["vram_gb"])
                self.assertEqual(o["emulated"], name != VERIFIED)
                self.assertEqual(o["cuda_version"], "12.4" if name == VERIFIED else "emulated")
                self.assertEqual(o["tier"], spec["tier"])
                self.assertEqual(o["commitment_months"], spec["commitment"])
                entry = next((e for e in spec["entries"] if e[0] == o["gpu_model"]),
                             spec["entries"][0])
                self.assertEqual((o["city"], o["country"], o["region"]), entry[1:])
                want_price = (CORA2_OVERRIDE if (name, o["gpu_model"]) == ("cora-2", L4_M)
                              else spec["prices"][o["gpu_model"]])
                self.assertEqual(o["price_micro"], want_price)
                self.assertEqual(o["price_usdc"], f"{want_price / 1e6:.6f}")
                eff = self.admin.c.get(f"{API}/machines/{o['machine_id']}/prices").body["effective"]
                self.assertIn({"gpu_model": o["gpu_model"], "price_micro": want_price}, eff)
                self.assertEqual(o["reliability_status"], "new")
                host, present = m["host"], len([g for g in m["gpus"] if g["present"]])
                self.assertAlmostEqual(o["ram_gb_per_gpu"], host["ram_mb"] / 1024 / present)
                self.assertAlmostEqual(o["cpu_cores_per_gpu"], host["cpu_cores"] / present)
                self.assertAlmostEqual(o["storage"]["disk_free_gb"], host["disk_free_mb"] / 1024)
                # The whole machine, as its agent reported it (nothing else of the host).
                self.assertEqual(o["host"], {"cpu_model": host["cpu_model"],
                                             "cpu_cores": host["cpu_cores"],
                                             "ram_gb": host["ram_mb"] / 1024,
                                             "disk_total_gb": host["disk_total_mb"] / 1024,
                                             "disk_free_gb": host["disk_free_mb"] / 1024})
                self.assertIsNotNone(o["down_mbps"])
                self.assertIsNotNone(o["storage"]["seq_read_mb_s"])
                # The offer was not on the marketplace before its GPUs were listed (the
                # listing's start is the "older listing" of the ranking's ties).
                first_listed = min((g["listed_since"] for g in gpus), key=parse_time)
                if parse_time(o["listed_since"]) < parse_time(first_listed):
                    listed_too_early.append(f"{name} {o['gpu_model']}: offer {o['listed_since']}, "
                                            f"GPUs listed since {first_listed}")
                r = self.admin.c.get(f"{API}/offers/{o['id']}")
                self.assertStatus(r, 200)
                self.assertEqual(r.body, {k: v for k, v in o.items()
                                          if k not in ("position", "explain")})
        if listed_too_early:
            self.fail("offers whose listed_since is before any of their GPUs was listed "
                      "(GET /machines/{id} gpus[].listed_since):\n" + "\n".join(listed_too_early))
        # What the fixture is for: scores differ (cora-2's outage), and one exact tie.
        self.assertEqual(len({o["reliability_score"] for o in offers}), 2,
                         [o["reliability_score"] for o in offers])
        ranks = [o["explain"]["rank"] for o in offers]
        self.assertLess(len(set(ranks)), len(ranks), "dino-1's and dino-2's L4 offers tie")

    # ------------------------------------------------------------------ search

    def filters(self, base):
        """(label, query, expect): expect "some" (a proper, non-empty subset of the
        offers), "all" or "none". Thresholds are taken from the offers themselves, at a
        value an offer has (the filters are inclusive)."""
        perf = sorted({o["performance_score"] for o in base})
        down = sorted({o["down_mbps"] for o in base})
        up = sorted({o["up_mbps"] for o in base})
        mid_perf, mid_down, mid_up = perf[len(perf) // 2], down[len(down) // 2], up[len(up) // 2]
        return [
            ("no filter", {}, "all"),
            ("gpu_model one", {"gpu_model": L4_M}, "some"),
            ("gpu_model two", {"gpu_model": f"{L4_M},{H100}"}, "some"),
            ("gpu_model three", {"gpu_model": f"{A100},{RTX},{H100}"}, "some"),
            ("gpu_model without offers", {"gpu_model": "l40s-48gb"}, "none"),
            ("min_gpus 2", {"min_gpus": "2"}, "some"),
            ("min_gpus 3", {"min_gpus": "3"}, "some"),
            ("min_gpus 1", {"min_gpus": "1"}, "all"),
            ("min_vram_gb 48", {"min_vram_gb": "48"}, "some"),
            ("min_vram_gb 80", {"min_vram_gb": "80"}, "some"),
            ("min_vram_gb 80.5", {"min_vram_gb": "80.5"}, "none"),
            ("max_price_micro at a price", {"max_price_micro": "420000"}, "some"),
            ("max_price_micro below it", {"max_price_micro": "419999"}, "some"),
            ("max_price_micro 1.5 USDC", {"max_price_micro": "1500000"}, "some"),
            ("country IT", {"country": "IT"}, "some"),
            ("country de (lower case)", {"country": "de"}, "some"),
            ("country US", {"country": "US"}, "some"),
            ("region eu-south", {"region": "eu-south"}, "some"),
            ("region EU-South (any case)", {"region": "EU-South"}, "some"),
            ("region eu-central", {"region": "eu-central"}, "some"),
            ("region without offers", {"region": "ap-south-1"}, "none"),
            ("tier enterprise", {"tier": "enterprise"}, "some"),
            ("tier community", {"tier": "community"}, "some"),
            ("min_reliability 95", {"min_reliability": "95"}, "some"),
            ("min_reliability 0", {"min_reliability": "0"}, "all"),
            ("min_performance at the median", {"min_performance": repr(mid_perf)}, "some"),
            ("min_down_mbps at the median", {"min_down_mbps": repr(mid_down)}, "some"),
            ("min_up_mbps at the median", {"min_up_mbps": repr(mid_up)}, "some"),
            ("min_cuda 12.4", {"min_cuda": "12.4"}, "some"),
            ("min_cuda 12.3", {"min_cuda": "12.3"}, "some"),
            ("min_cuda 12.5", {"min_cuda": "12.5"}, "none"),
            ("min_cuda 0.0", {"min_cuda": "0.0"}, "all"),
            ("verified_only true", {"verified_only": "true"}, "some"),
            ("verified_only false", {"verified_only": "false"}, "all"),
            ("L4 in eu-south, community", {"gpu_model": L4_M, "region": "eu-south",
                                           "tier": "community"}, "some"),
            ("48 GB+ in IT up to 2 USDC", {"min_vram_gb": "48", "country": "IT",
                                          "max_price_micro": "2000000"}, "some"),
            ("L4 with 2+ free, fast", {"gpu_model": L4_M, "min_gpus": "2",
                                       "min_performance": repr(perf[0]),
                                       "min_reliability": "90"}, "some"),
            ("everything at once", {"gpu_model": f"{L4_M},{A100}", "min_gpus": "1",
                                    "min_vram_gb": "24", "max_price_micro": "1000000",
                                    "country": "DE", "region": "eu-central", "tier": "community",
                                    "min_reliability": "50", "min_performance": "1",
                                    "min_down_mbps": "1", "min_up_mbps": "1",
                                    "min_cuda": "12.0", "verified_only": "true"}, "some"),
        ]

    def test_every_filter_with_every_sort(self):
        def check(base):
            for label, query, expect in self.filters(base):
                hits = [o for o in base if matches(o, query)]
                with self.subTest(filter=label):
                    if expect == "all":
                        self.assertEqual(len(hits), len(base), label)
                    elif expect == "none":
                        self.assertEqual(hits, [], label)
                    else:
                        self.assertTrue(0 < len(hits) < len(base),
                                        f"{label}: the fixture should have offers on both "
                                        f"sides of the filter ({len(hits)} of {len(base)})")
                    for sort in SORTS:
                        self.assertSearch(base, query, sort, f"{label}, sort {sort}")
        base, _ = self.stable(check)
        self.assertEqual(len(base), self._offer_count())

    def test_default_sort_is_rank_and_ties_break_by_listing(self):
        def check(base):
            r = self.customer.c.get(f"{API}/offers", query={"explain": "true"})
            self.assertStatus(r, 200)
            self.assertEqual(r.body["sort"], "rank")
            want, _ = expected_order(base, {}, "rank")
            self.assertEqual([o["id"] for o in r.body["items"]], [o["id"] for o, _ in want])
            return r.body["items"]
        base, items = self.stable(check)
        by_machine = self.offers_by_machine()
        l4 = {by_machine[o["id"]]: o for o in items if o["gpu_model"] == L4_M}
        d1, d2 = l4["dino-1"], l4["dino-2"]
        # The exact tie: equal rank and uptime; dino-1, listed first, comes first.
        self.assertEqual(d1["explain"]["rank"], d2["explain"]["rank"])
        self.assertEqual(d1["uptime_30d"], d2["uptime_30d"])
        self.assertLess(parse_time(d1["listed_since"]), parse_time(d2["listed_since"]))
        self.assertEqual(d2["position"], d1["position"] + 1, (d1, d2))

    def test_paging_walks_every_result_once(self):
        def check(base):
            for query in ({}, {"gpu_model": L4_M}, {"tier": "enterprise"}):
                for sort in SORTS:
                    label = f"{query} sort {sort}"
                    want, _ = expected_order(base, query, sort)
                    seen, cursor, pages = [], None, 0
                    while True:
                        q = dict(query, sort=sort, limit="2")
                        if cursor:
                            q["cursor"] = cursor
                        r = self.customer.c.get(f"{API}/offers", query=q)
                        self.assertStatus(r, 200, label)
                        pages += 1
                        self.assertLessEqual(len(r.body["items"]), 2, label)
                        first = len(seen) + 1
                        self.assertEqual([o["position"] for o in r.body["items"]],
                                         list(range(first, first + len(r.body["items"]))), label)
                        self.assertEqual(r.body["matched"], len(want), label)
                        seen += [o["id"] for o in r.body["items"]]
                        cursor = r.body["next_cursor"]
                        if not cursor:
                            break
                        self.assertLess(pages, 100, label)
                    self.assertEqual(seen, [o["id"] for o, _ in want], label)
                    self.assertEqual(pages, max(1, math.ceil(len(want) / 2)), label)
        self.stable(check)

    def test_fields_choose_an_offers_members_in_its_order(self):
        def check(base):
            # Every field named: the same items as naming none (for each kind of caller,
            # who see different fields); a few named: those and the id, in the offer's order.
            for client, sees_machines in ((self.customer.c, False), (self.admin.c, True),
                                          (self.srv.client(), False)):
                whole = self._search_all(client)
                names = sorted({k for o in whole for k in o}, reverse=True)
                self.assertEqual("machine_id" in names, sees_machines, names)
                self.assertEqual(self._search_all(client, fields=",".join(names)), whole)
            chosen = self._search_all(fields="price_micro,position,host,reliability_score")
            self.assertEqual(chosen, [{k: o[k] for k in o
                                       if k in ("id", "price_micro", "position", "host",
                                                "reliability_score")} for o in base])
            self.assertEqual([list(o) for o in chosen[:1]],
                             [["id", "reliability_score", "price_micro", "host", "position"]])
            # The explanation only when asked for and named.
            r = self.customer.c.get(f"{API}/offers",
                                    query={"fields": "explain,gpu_model", "limit": "200"})
            self.assertStatus(r, 200)
            self.assertEqual(r.body["items"], [{"id": o["id"], "gpu_model": o["gpu_model"]}
                                               for o in base])
            self.assertEqual(r.body["matched"], len(base))
        self.stable(check)

    # ------------------------------------------------------------------ who sees what

    def test_anonymous_search_shows_pseudonyms_only(self):
        anon = self.srv.client()
        first = self._search_all(anon)
        second = self._search_all(anon)
        by_machine = self.offers_by_machine()
        self.assertEqual({o["id"] for o in first}, set(by_machine))
        pseudonym_of = {}  # provider -> pseudonym
        for o in first + second:
            self.assertNotIn("machine_id", o)
            self.assertEqual(set(o["provider"]), {"pseudonym"}, o)
            prov = self.owner_of[by_machine[o["id"]]]
            self.assertRegex(o["provider"]["pseudonym"], r"^[a-z]+-[a-z]+-[0-9a-f]{4}$")
            pseudonym_of.setdefault(prov, o["provider"]["pseudonym"])
            self.assertEqual(o["provider"]["pseudonym"], pseudonym_of[prov],
                             f"{prov}'s offers show one pseudonym, in every search")
        self.assertEqual(len(set(pseudonym_of.values())), len(PROVIDERS), pseudonym_of)
        # Two machines of one provider, one pseudonym.
        machines_of = {}
        for name in by_machine.values():
            machines_of.setdefault(self.owner_of[name], set()).add(name)
        self.assertGreaterEqual(len(machines_of["dino"]), 2)
        # Nothing that names a provider or a machine, in a search or an offer by id.
        secrets = set(self.machine_of.values())
        for u in self.providers.values():
            secrets |= {u.email, u.id, u.name, u.contact_email, u.spec["company"]}
        texts = [anon.get(f"{API}/offers", query={"explain": "true"}).raw,
                 self.customer.c.get(f"{API}/offers").raw]
        texts += [anon.get(f"{API}/offers/{o['id']}").raw for o in first]
        texts += [self.customer.c.get(f"{API}/offers/{o['id']}").raw for o in first[:3]]
        for raw in texts:
            text = raw.decode("utf-8")
            for s in secrets:
                self.assertNotIn(s, text)
        # The providers see their own machines, and only those; admins every machine.
        for name, u in self.providers.items():
            own = {self.machine_of[m] for m, p in self.owner_of.items() if p == name}
            offers = self._search_all(u.c)
            shown = {o["machine_id"] for o in offers if "machine_id" in o}
            self.assertEqual(shown, own, name)
            for o in offers:
                self.assertEqual("machine_id" in o, self.owner_of[by_machine[o["id"]]] == name, o)
        self.assertEqual({o["machine_id"] for o in self._search_all(self.admin.c)},
                         set(self.machine_of.values()))

    # ------------------------------------------------------------------ changes show within 1 s

    def test_change_price_edit(self):
        dino = self.providers["dino"]
        new = dict(PROVIDERS["dino"]["prices"], **{L4_M: 355_000})
        try:
            set_prices(dino, new)
            t0 = time.monotonic()
            self.within_deadline(lambda: self.price("dino-1") == self.price("dino-2") == 355_000,
                                 t0, "a provider price edit")
        finally:
            set_prices(dino, PROVIDERS["dino"]["prices"])
        wait_until(lambda: self.price("dino-1") == 350_000, 5, "the old price back")
        hist = dino.c.get(f"{API}/providers/me/prices/history", query={"limit": "2"}).body["items"]
        self.assertEqual([(h["gpu_model"], h["old_price_micro"], h["new_price_micro"],
                           h["machine_id"]) for h in hist],
                         [(L4_M, 355_000, 350_000, None), (L4_M, 350_000, 355_000, None)])
        # A machine's own price.
        cora = self.providers["cora"]
        path = f"{API}/machines/{self.machine_of['cora-2']}/prices"
        try:
            r = cora.c.put(path, {"items": [{"gpu_model": L4_M, "price_micro": 370_000}]})
            self.assertStatus(r, 200)
            t0 = time.monotonic()
            self.within_deadline(lambda: self.price("cora-2") == 370_000, t0,
                                 "a machine price edit")
            self.assertEqual(self.price("cora-1"), PROVIDERS["cora"]["prices"][L4_M])
        finally:
            r = cora.c.put(path, {"items": [{"gpu_model": L4_M, "price_micro": CORA2_OVERRIDE}]})
            self.assertStatus(r, 200)
        wait_until(lambda: self.price("cora-2") == CORA2_OVERRIDE, 5,
                   "the machine's old price back")

    def test_change_gpu_disabled(self):
        cora = self.providers["cora"]
        mid = self.machine_of["cora-1"]
        self.assertEqual(self.offer("cora-1", L4_M)["gpus_available"], 2)
        gpu = next(g for g in cora.c.get(f"{API}/machines/{mid}").body["gpus"]
                   if g["catalog_id"] == L4_M)
        path = f"{API}/machines/{mid}/gpus/{gpu['id']}"
        try:
            r = cora.c.request("PATCH", path, {"enabled": False})
            self.assertStatus(r, 200)
            t0 = time.monotonic()
            self.within_deadline(
                lambda: (lambda o: o and (o["gpus_available"], o["gpus_total"]) == (1, 1))(
                    self.offer("cora-1", L4_M)), t0, "a GPU disabled by its provider")
            g = next(g for g in cora.c.get(f"{API}/machines/{mid}").body["gpus"]
                     if g["id"] == gpu["id"])
            self.assertEqual(g["listing_state"], "disabled_by_provider")
            # Not among the offers of min_gpus=2 any more.
            self.assertNotIn(mid, {o["machine_id"] for o in
                                   self._search_all(self.admin.c, gpu_model=L4_M, min_gpus="2")})
        finally:
            r = cora.c.request("PATCH", path, {"enabled": True})
            self.assertStatus(r, 200)
        wait_until(lambda: (self.offer("cora-1", L4_M) or {}).get("gpus_available") == 2, 5,
                   "the GPU back in the offer")

    def test_change_agent_killed(self):
        """The fixture's outage of cora-2 (setUpClass): its offers left search within 1 s
        of the machine going offline (GET /machines/{id}: status and status_since)."""
        o = self.outage
        self.assertIsNotNone(o["offline_at"], f"the machine went offline: {o}")
        self.assertIsNotNone(o["gone_at"], f"its offers left search: {o}")
        self.assertGreaterEqual(o["offline_at"] - o["killed"], OFFLINE_AFTER_S - 1.5, o)
        took = o["gone_at"] - o["offline_at"]
        self.assertLessEqual(took, CHANGE_DEADLINE_S,
                             f"the killed agent's offers left search {took:.3f} s after the "
                             f"machine went offline: {o}")
        self.assertGreaterEqual(o["gone_at"], o["killed"], o)

    def test_change_schedule_closing(self):
        elio = self.providers["elio"]
        mid = self.machine_of["elio-1"]
        now = dt.datetime.now(UTC)
        start = (now + dt.timedelta(hours=12)).replace(minute=0, second=0, microsecond=0)
        away = {"kind": "schedule", "timezone": "UTC",
                "windows": [{"days": [DAYS[start.weekday()]], "start": start.strftime("%H:%M"),
                             "end": (start + dt.timedelta(hours=1)).strftime("%H:%M")
                             if start.hour != 23 else "24:00"}]}
        before = {o["id"] for o in self._search_all(self.admin.c) if o["machine_id"] == mid}
        self.assertEqual(len(before), 2)
        try:
            r = elio.c.put(f"{API}/machines/{mid}/availability", {"schedule": away})
            self.assertStatus(r, 200)
            self.assertIs(r.body["inside_schedule"], False, r.body)
            t0 = time.monotonic()
            self.within_deadline(lambda: not ({o["id"] for o in self._search_all()} & before),
                                 t0, "a schedule that excludes now")
            self.assertEqual({g["listing_state"] for g in
                              elio.c.get(f"{API}/machines/{mid}").body["gpus"]},
                             {"outside_schedule"})
            for oid in before:
                self.assertError(self.customer.c.get(f"{API}/offers/{oid}"), 404)
        finally:
            r = elio.c.put(f"{API}/machines/{mid}/availability", {"schedule": {"kind": "always"}})
            self.assertStatus(r, 200)
        wait_until(lambda: {o["id"] for o in self._search_all()} >= before, 5,
                   "the offers back inside the schedule")

    def test_change_price_removed(self):
        elio = self.providers["elio"]
        mid = self.machine_of["elio-1"]
        l4 = self.offer("elio-1", L4_M)
        self.assertIsNotNone(l4)
        try:
            set_prices(elio, {A100: PROVIDERS["elio"]["prices"][A100]})
            t0 = time.monotonic()
            self.within_deadline(lambda: l4["id"] not in {o["id"] for o in self._search_all()},
                                 t0, "a price removed")
            gpus = elio.c.get(f"{API}/machines/{mid}").body["gpus"]
            g = next(g for g in gpus if g["catalog_id"] == L4_M)
            self.assertEqual((g["listing_state"], g["listed"]), ("no_price_set", False), g)
            self.assertEqual(g["listing_note"], "no price set for NVIDIA L4", g)
            self.assertIsNotNone(self.offer("elio-1", A100), "the priced model stays")
            self.assertError(self.customer.c.get(f"{API}/offers/{l4['id']}"), 404)
        finally:
            set_prices(elio, PROVIDERS["elio"]["prices"])
        wait_until(lambda: self.offer("elio-1", L4_M) is not None, 5, "the L4 offer back")

    def test_include_busy_shows_offers_whose_gpus_are_all_taken(self):
        """An offer whose only GPU is being benchmarked (the fake agent holds its answer) is
        left out of search, and shown with include_busy=true (gpus_available 0); min_gpus
        then counts the offer's GPUs; its host facts are what the agent reported."""
        dino = self.providers["dino"]
        mid = self.machine_of[VERIFIED]
        oid = self.offer(VERIFIED, L4_M)["id"]
        busy = lambda **q: next((o for o in self._search_all(self.admin.c, gpu_model=L4_M,
                                                             include_busy="true", **q)
                                 if o["id"] == oid), None)
        free = busy()
        self.assertIsNotNone(free, "include_busy shows the free offers too")
        self.assertEqual(free["host"], {"cpu_model": "Fake EPYC 9654", "cpu_cores": 96,
                                        "ram_gb": 1024, "disk_total_gb": 4000000 / 1024,
                                        "disk_free_gb": 3500000 / 1024}, free)
        self.assertEqual(free["host"]["disk_free_gb"], free["storage"]["disk_free_gb"])
        self.assertTrue(free["cuda_version"], free)
        r = dino.c.post(f"{API}/machines/{mid}/benchmarks", {})
        self.assertStatus(r, 202)
        cmd = self.fake.expect_command("run_benchmark", timeout=10)
        try:
            self.fake.send({"type": "ack", "command_id": cmd["command_id"]})
            wait_until(lambda: self.offer(VERIFIED, L4_M) is None, 5,
                       "the offer out of the default search while its GPU is benchmarked")
            o = wait_until(lambda: (lambda x: x if x and x["gpus_available"] == 0 else None)(
                busy()), 5, "the busy offer with include_busy=true")
            self.assertEqual((o["gpus_available"], o["gpus_total"]), (0, 1), o)
            self.assertIsNone(busy(min_gpus="2"), "min_gpus counts the offer's GPUs")
            self.assertIsNotNone(busy(min_gpus="1"))
            self.assertError(self.admin.c.get(f"{API}/offers", query={"include_busy": "maybe"}),
                             422, ["include_busy"])
            # The offer itself is still readable (its page says no GPU is free).
            self.assertEqual(self.customer.c.get(f"{API}/offers/{oid}").body["gpus_available"], 0)
        finally:
            gpus = [{"uuid": g["uuid"], "ok": True, "result": dict(l4_figures(0.9), emulated=False)}
                    for g in cmd["payload"]["gpus"]]
            self.fake.send({"type": "result", "command_id": cmd["command_id"], "ok": True,
                            "data": {"benchmark_id": cmd["payload"]["benchmark_id"],
                                     "emulated": False, "gpus": gpus, "network": GOOD_NETWORK,
                                     "storage": GOOD_STORAGE}})
        wait_until(lambda: (self.offer(VERIFIED, L4_M) or {}).get("gpus_available") == 1, 10,
                   "the offer back once the benchmark passed")

    # ------------------------------------------------------------------ market data

    def test_recommendation_without_rentals_is_the_catalog_price(self):
        anon = self.srv.client()
        for model in (L4_M, RTX, A100, H100, "l40s-48gb"):
            for region in (None, "eu-south"):
                q = {"gpu_model": model}
                if region:
                    q["region"] = region
                r = anon.get(f"{API}/market/recommendation", query=q)
                with self.subTest(model=model, region=region):
                    self.assertStatus(r, 200)
                    b = r.body
                    default = self.catalog[model]["default_price_micro"]
                    self.assertEqual((b["gpu_model"], b["region"], b["basis"], b["sample_rentals"]),
                                     (model, region, "catalog", 0), b)
                    self.assertEqual((b["price_micro"], b["catalog_price_micro"]),
                                     (default, default), b)
                    self.assertEqual(b["price_usdc"], f"{default / 1e6:.6f}", b)
                    self.assertIsNone(b["median_price_micro"], b)
                    self.assertIn("catalog", b["note"], b)
                    self.assertEqual(b["global_window"]["rentals"], 0, b)

    def test_stats_count_the_listed_gpus_and_their_prices(self):
        def percentile(sorted_prices, q):
            n = len(sorted_prices)
            if not n:
                return None
            k = min(max(math.ceil(q * n), 1), n)  # nearest rank
            return sorted_prices[k - 1]

        def check(base):
            self.assertTrue(all(o["gpus_available"] == o["gpus_total"] for o in base),
                            "no rentals: every GPU of an offer is free")
            out = []
            for model, region in ((None, None), (L4_M, None), (None, "eu-south"),
                                  (L4_M, "eu-south"), (A100, "eu-central"), (RTX, "us-east")):
                q = {k: v for k, v in (("gpu_model", model), ("region", region)) if v}
                r = self.srv.client().get(f"{API}/market/stats", query=q)
                self.assertStatus(r, 200)
                mine = [o for o in base if (not model or o["gpu_model"] == model)
                        and (not region or o["region"] == region)]
                prices = sorted(p for o in mine for p in [o["price_micro"]] * o["gpus_total"])
                want = {"gpu_model": model, "region": region, "offers": len(mine),
                        "listed_gpus": sum(o["gpus_total"] for o in mine),
                        "available_gpus": sum(o["gpus_available"] for o in mine),
                        "rented_gpus": 0,
                        "price_p25_micro": percentile(prices, 0.25),
                        "price_median_micro": percentile(prices, 0.5),
                        "price_p75_micro": percentile(prices, 0.75)}
                self.assertEqual(r.body, want, q)
                out.append(want)
            return out
        _, out = self.stable(check)
        gpus = sum(int(part.split(":")[1]) for _, spec, _ in MACHINES.values()
                   for part in spec.split(","))
        self.assertEqual(out[0]["listed_gpus"], gpus + 1)  # every emulated GPU and the fake one
        self.assertIsNone(out[-1]["price_median_micro"])

    def test_provider_offers_rank_among_their_model_and_region(self):
        by_machine = self.offers_by_machine()

        def check(base):
            summaries = []
            for pname, u in self.providers.items():
                r = u.c.get(f"{API}/providers/me/offers")
                self.assertStatus(r, 200)
                own = {o["id"] for o in base if self.owner_of[by_machine[o["id"]]] == pname}
                self.assertEqual({o["id"] for o in r.body["items"]}, own, pname)
                for item in r.body["items"]:
                    label = f"{pname} {item['gpu_model']} {item['region']}"
                    self.assertIn(item["machine_id"], self.machine_of.values())
                    rank = item["rank"]
                    # The provider's view ranks among every offer of the model and region,
                    # free or not; a search only shows those with a free GPU (min_gpus=0 is
                    # not a filter). Here every offer has one, so the two agree.
                    q = {"gpu_model": item["gpu_model"], "region": item["region"]}
                    group = [o for o in base if matches(o, q)]
                    self.assertTrue(all(o["gpus_available"] > 0 for o in group), label)
                    want, med = expected_order(base, q)
                    ids = [o["id"] for o, _ in want]
                    s = self.customer.c.get(f"{API}/offers", query=dict(q, explain="true"))
                    self.assertEqual([o["id"] for o in s.body["items"]], ids, label)
                    pos = ids.index(item["id"]) + 1
                    self.assertEqual((rank["position"], rank["of"]), (pos, len(ids)), label)
                    self.assertEqual(rank["summary"],
                                     f"{ordinal(pos)} of {len(ids)} {item['gpu_name']} "
                                     f"offer{'s' if len(ids) != 1 else ''} in {item['region']}",
                                     label)
                    self.assertExplain(rank["explain"], s.body["items"][pos - 1]["explain"], label)
                    self.assertExplain(rank["explain"], want[pos - 1][1], label)
                    nxt = rank["price_for_next_place_micro"]
                    if pos == 1:
                        self.assertIsNone(nxt, label)
                    elif nxt is None:
                        self.assertGreaterEqual(place_at(group, item, 1), pos, label)
                    else:
                        # The highest price that gains a place, in whole cents (in micro-USDC
                        # below a cent): the next step up no longer gains it.
                        step = CENT if nxt >= CENT else 1
                        self.assertEqual(nxt % step, 0, f"{label}: {nxt} in whole cents")
                        self.assertLess(place_at(group, item, nxt), pos, f"{label} at {nxt}")
                        self.assertGreaterEqual(place_at(group, item, nxt + step), pos,
                                                f"{label} at {nxt + step}: the highest such price")
                        self.assertLess(nxt, item["price_micro"], label)
                        # The place it would take at that price (offers tied above it may
                        # all be passed at once).
                        at = place_at(group, item, nxt)
                        self.assertTrue(any(f"rank {ordinal(at)} of {len(ids)}" in a
                                            for a in rank["advice"]), rank["advice"])
                    if item["tier"] == "community":
                        self.assertTrue(any("Enterprise" in a for a in rank["advice"]), label)
                    summaries.append(rank["summary"])
            return summaries
        _, summaries = self.stable(check)
        # The L4 offers in eu-south: cora-1, cora-2 and elio-1's (three of them).
        self.assertTrue(any(re.fullmatch(r"(1st|2nd|3rd) of 3 NVIDIA L4 offers in eu-south", s)
                            for s in summaries), summaries)

    # ------------------------------------------------------------------ bad inputs

    def bad_rows(self):
        o = f"{API}/offers"
        mp = f"{API}/providers/me/prices"
        mine = f"{API}/machines/{{mCora2}}/prices"
        V = "validation_failed"

        def search(label, bad, **q):
            return (f"search {label}", "GET", f"{o}?{urllib.parse.urlencode(q)}", "customer",
                    None, 422,
                    bad, V)

        def put(label, body, fields, path=mp, who="owner", status=422, code=V):
            return (f"prices {label}", "PUT", path, who, body, status, fields, code)

        def item(**kw):
            it = {"gpu_model": L4_M, "price_micro": 400_000}
            it.update(kw)
            return {k: v for k, v in it.items() if v is not DROP}

        return [
            search("unknown gpu_model", ["gpu_model"], gpu_model="h100"),
            search("gpu_model one unknown of two", ["gpu_model"], gpu_model=f"{L4_M},nvidia-l4"),
            search("gpu_model empty", ["gpu_model"], gpu_model=""),
            search("gpu_model upper case", ["gpu_model"], gpu_model="L4-24GB"),
            search("min_gpus 0", ["min_gpus"], min_gpus="0"),
            search("min_gpus -1", ["min_gpus"], min_gpus="-1"),
            search("min_gpus 1025", ["min_gpus"], min_gpus="1025"),
            search("min_gpus two", ["min_gpus"], min_gpus="two"),
            search("min_gpus 1.5", ["min_gpus"], min_gpus="1.5"),
            search("min_vram_gb -1", ["min_vram_gb"], min_vram_gb="-1"),
            search("min_vram_gb x", ["min_vram_gb"], min_vram_gb="x"),
            search("max_price_micro 0", ["max_price_micro"], max_price_micro="0"),
            search("max_price_micro 1000000001", ["max_price_micro"], max_price_micro="1000000001"),
            search("max_price_micro 1.5", ["max_price_micro"], max_price_micro="1.5"),
            search("country ITA", ["country"], country="ITA"),
            search("country 1T", ["country"], country="1T"),
            search("region with a space", ["region"], region="eu south"),
            search("region 65 characters", ["region"], region="r" * 65),
            search("tier gold", ["tier"], tier="gold"),
            search("min_reliability 101", ["min_reliability"], min_reliability="101"),
            search("min_reliability -1", ["min_reliability"], min_reliability="-1"),
            search("min_performance -5", ["min_performance"], min_performance="-5"),
            search("min_performance nan", ["min_performance"], min_performance="nan"),
            search("min_down_mbps fast", ["min_down_mbps"], min_down_mbps="fast"),
            search("min_up_mbps -1", ["min_up_mbps"], min_up_mbps="-1"),
            search("min_cuda 12", ["min_cuda"], min_cuda="12"),
            search("min_cuda x.y", ["min_cuda"], min_cuda="x.y"),
            search("min_cuda 12.4.1", ["min_cuda"], min_cuda="12.4.1"),
            search("verified_only yes", ["verified_only"], verified_only="yes"),
            search("include_busy yes", ["include_busy"], include_busy="yes"),
            search("sort cheap", ["sort"], sort="cheap"),
            search("sort performance without the minus", ["sort"], sort="performance"),
            search("explain maybe", ["explain"], explain="maybe"),
            search("fields unknown", ["fields"], fields="id,price"),
            search("fields empty", ["fields"], fields=""),
            search("fields a trailing comma", ["fields"], fields="id,"),
            search("fields upper case", ["fields"], fields="ID"),
            search("limit 0", ["limit"], limit="0"),
            search("limit 201", ["limit"], limit="201"),
            search("cursor junk", ["cursor"], cursor="junk"),
            search("unknown parameter colour", ["colour"], colour="red"),
            search("several at once", ["min_gpus", "tier", "colour"], min_gpus="0", tier="gold",
                   colour="red"),
            ("recommendation without gpu_model", "GET", f"{API}/market/recommendation", "customer",
             None, 422, ["gpu_model"], V),
            ("recommendation unknown gpu_model", "GET",
             f"{API}/market/recommendation?gpu_model=h100", "customer", None, 422,
             ["gpu_model"], V),
            ("recommendation bad region", "GET",
             f"{API}/market/recommendation?gpu_model={L4_M}&region=EU%20SOUTH", "customer", None,
             422, ["region"], V),
            ("stats unknown parameter", "GET", f"{API}/market/stats?sort=price", "customer", None,
             422, ["sort"], V),
            ("stats unknown gpu_model", "GET", f"{API}/market/stats?gpu_model=h100", "customer",
             None, 422, ["gpu_model"], V),
            ("offer that does not exist", "GET", f"{o}/ofr_00000000000000000000", "customer", None,
             404, [], "not_found"),
            put("price_micro 0", {"items": [item(price_micro=0)]}, ["items[0].price_micro"]),
            put("price_micro -1", {"items": [item(price_micro=-1)]}, ["items[0].price_micro"]),
            put("price_micro 1000000001", {"items": [item(price_micro=1_000_000_001)]},
                ["items[0].price_micro"]),
            put("price_micro 1.5", {"items": [item(price_micro=1.5)]}, ["items[0].price_micro"]),
            put("price_micro a string", {"items": [item(price_micro="400000")]},
                ["items[0].price_micro"]),
            put("price_micro null", {"items": [item(price_micro=None)]}, ["items[0].price_micro"]),
            put("price_micro missing", {"items": [item(price_micro=DROP)]},
                ["items[0].price_micro"]),
            put("gpu_model missing", {"items": [item(gpu_model=DROP)]}, ["items[0].gpu_model"]),
            put("gpu_model unknown", {"items": [item(gpu_model="nvidia-l4")]},
                ["items[0].gpu_model"]),
            put("gpu_model other", {"items": [item(gpu_model="other")]}, ["items[0].gpu_model"]),
            put("gpu_model a number", {"items": [item(gpu_model=4)]}, ["items[0].gpu_model"]),
            put("a model twice", {"items": [item(), item(price_micro=500_000)]},
                ["items[1].gpu_model"]),
            put("the second item bad", {"items": [item(gpu_model=RTX), item(price_micro=0)]},
                ["items[1].price_micro"]),
            put("items not an array", {"items": {"gpu_model": L4_M, "price_micro": 400_000}},
                ["items"]),
            put("items missing", {}, ["items"]),
            put("item not an object", {"items": ["l4-24gb=400000"]}, ["items[0]"]),
            put("extra field in an item", {"items": [item(currency="USDC")]},
                ["items[0].currency"]),
            put("extra top-level field", {"items": [item()], "force": True}, ["force"]),
            put("body an array", [item()], ["body"]),
            put("body not JSON", ("raw", '{"items": [', "application/json"), ["body"], status=400,
                code=None),
            put("65 items", {"items": [item(gpu_model=m) for m in (list(self.catalog) * 65)[:65]]},
                ["items"]),
            put("machine price 0", {"items": [item(price_micro=0)]}, ["items[0].price_micro"],
                path=mine),
            put("machine price unknown model", {"items": [item(gpu_model="nvidia-l4")]},
                ["items[0].gpu_model"], path=mine),
            put("machine prices of another provider's machine", {"items": [item()]}, [],
                path=mine, who="other", status=404, code="not_found"),
            ("prices read of another provider's machine", "GET", mine, "other", None, 404, [],
             "not_found"),
            put("machine prices of no machine", {"items": [item()]}, [],
                path=f"{API}/machines/mch_nosuchmachine/prices", status=404, code="not_found"),
            put("machine prices by an admin", {"items": [item()]}, [], path=mine, who="admin",
                status=403, code=None),
            put("provider prices by a customer", {"items": [item()]}, [], who="customer",
                status=403, code=None),
            put("provider prices by an admin", {"items": [item()]}, [], who="admin", status=403,
                code=None),
            ("price history limit 0", "GET", f"{mp}/history?limit=0", "owner", None, 422,
             ["limit"], V),
            ("price history cursor junk", "GET", f"{mp}/history?cursor=junk", "owner", None, 422,
             ["cursor"], V),
        ]

    def price_state(self):
        """What no refused request may change: both providers' prices, their machines'
        overrides, the price history, the offers."""
        out = {}
        for who, machine in (("cora", "cora-2"), ("dino", "dino-1")):
            u = self.providers[who]
            out[f"{who} prices"] = u.c.get(f"{API}/providers/me/prices").body
            mid = self.machine_of[machine]
            out[f"{machine} prices"] = u.c.get(f"{API}/machines/{mid}/prices").body
            out[f"{who} history"] = u.c.get(f"{API}/providers/me/prices/history").body
        out["offers"] = sorted((o["id"], o["price_micro"]) for o in self._search_all())
        return out

    def test_bad_inputs_are_refused_naming_the_field(self):
        rows = self.bad_rows()
        self.assertGreaterEqual(len(rows), 40)
        clients = {"customer": self.customer.c, "owner": self.providers["cora"].c,
                   "other": self.providers["dino"].c, "admin": self.admin.c}
        ctx = {"mCora2": self.machine_of["cora-2"]}
        before = self.price_state()
        self.assertEqual(before["cora prices"]["items"][0]["price_micro"],
                         PROVIDERS["cora"]["prices"][L4_M])
        self.assertRefusedRows(rows, clients, ctx, self.price_state)
        self.assertEqual(self.price_state(), before)
        # The rows' valid starting point is accepted (and put back).
        cora = self.providers["cora"]
        r = cora.c.put(f"{API}/providers/me/prices",
                       {"items": [{"gpu_model": L4_M, "price_micro": 400_000},
                                  {"gpu_model": RTX, "price_micro": 1_000_000_000}]})
        self.assertStatus(r, 200)
        self.assertEqual([(i["gpu_model"], i["price_micro"], i["price_usdc"])
                          for i in r.body["items"]],
                         [(L4_M, 400_000, "0.400000"), (RTX, 1_000_000_000, "1000.000000")])
        set_prices(cora, PROVIDERS["cora"]["prices"])
        wait_until(lambda: sorted((o["id"], o["price_micro"]) for o in self._search_all())
                   == before["offers"], 5, "the offers at their prices again")


DROP = object()


class MarketplaceSqliteTest(MarketplaceMixin, unittest.TestCase):
    BACKEND = "sqlite"


class MarketplacePostgresTest(MarketplaceMixin, unittest.TestCase):
    BACKEND = "postgresql"


class AnonymousRateLimitTest(ServerTestCase):
    """[market] anonymous_burst searches, then 429 with Retry-After for that address; a
    logged-in client and another address are not held back (its own gpunexd: no fleet)."""

    SMTP = False
    EXTRA_TOML = "\n[market]\nanonymous_burst = 5\nanonymous_searches_per_s = 1\n"

    def test_anonymous_searches_are_limited_per_address(self):
        anon = self.srv.client(source="127.0.0.2")
        user = self.srv.user("Lena Logged-In")
        user_c = self.srv.client(user.token, source="127.0.0.2")
        for i in range(5):
            self.assertStatus(anon.get(f"{API}/offers"), 200, f"search {i + 1} of the burst")
        for path in (f"{API}/offers", f"{API}/offers/ofr_00000000000000000000",
                     f"{API}/market/stats", f"{API}/market/recommendation?gpu_model={L4_M}"):
            r = anon.get(path)
            err = self.assertError(r, 429, msg=path)
            self.assertEqual(err["code"], "rate_limited", r)
            retry = r.header("Retry-After")
            self.assertIsNotNone(retry, r.headers)
            self.assertRegex(retry, r"^[1-9][0-9]*$")
        for i in range(20):
            self.assertStatus(user_c.get(f"{API}/offers"), 200, f"logged-in search {i + 1}")
        self.assertStatus(self.srv.client(source="127.0.0.3").get(f"{API}/offers"), 200,
                          "another address")
        time.sleep(int(retry))
        self.assertStatus(anon.get(f"{API}/offers"), 200, "after Retry-After")


if __name__ == "__main__":
    unittest.main()
