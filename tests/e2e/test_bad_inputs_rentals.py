"""Bad requests to the rentals, jobs and balance routes (issue 14): a table of malformed,
mistyped, out-of-range, forbidden and otherwise invalid requests, each answered with the
error shape naming exactly the bad field(s), and each followed by a read-back showing that
nothing was stored: the row counts of rentals, jobs, workloads, agent commands, ledger
accounts and transfers, and the customers' balances. After the table the rows' valid
starting points are accepted (so each refusal is about the one thing its row breaks).

The machines are fake agents (the protocol by hand, test_agent_channel.FakeAgent): no
container is ever started here. Provider A's machine has 4 L4s on the marketplace;
provider B's machine had its one L4 on the marketplace and withdrew it (the offer id is
known, the offer is not listed).

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import json
import unittest

from harness import API, ServerTestCase, provider_with_agent_token, wait_until
from test_agent_channel import L4 as L4_GPU
from test_agent_channel import FakeAgent

L4 = "l4-24gb"
IMAGE = "gpunex-test/busybox:1"
V = "validation_failed"
RENTALS = f"{API}/rentals"
JOBS = f"{API}/jobs"
CREDITS = f"{API}/admin/credits"
DROP = object()

# Tables a refused request must leave as they are.
COUNTED = ("rentals", "jobs", "workloads", "agent_commands", "ledger_accounts",
           "ledger_transfers")


def rental(**changes):
    """A valid rental of one GPU of {oA} changed by `changes` (DROP removes a key)."""
    def body(ctx):
        b = {"offer_id": ctx["oA"], "gpus": 1, "image": IMAGE,
             "command": ["/bin/sleep", "60"], "env": {"MODE": "test"},
             "max_duration_s": 3600, "max_cost_micro": 1_000_000}
        for k, v in changes.items():
            if v is DROP:
                b.pop(k, None)
            else:
                b[k] = v(ctx) if callable(v) else v
        return b
    return body


def job(**changes):
    """A valid job (one L4 at up to 1 USDC per GPU-hour) changed by `changes`."""
    def body(ctx):
        b = {"gpu_model": L4, "gpus": 1, "max_price_micro": 1_000_000, "image": IMAGE,
             "command": ["/bin/sleep", "60"], "deadline_s": 3600}
        for k, v in changes.items():
            if v is DROP:
                b.pop(k, None)
            else:
                b[k] = v
        return b
    return body


def credit(**changes):
    def body(ctx):
        b = {"user_id": ctx["customer"], "amount_micro": 1_000_000, "reference": "wire 7781"}
        for k, v in changes.items():
            if v is DROP:
                b.pop(k, None)
            else:
                b[k] = v
        return b
    return body


def r(name, body, fields, who="customer", status=422, code=V, path=RENTALS, method="POST"):
    return (f"rental: {name}", method, path, who, body, status, fields, code)


def j(name, body, fields, who="customer", status=422, code=V):
    return (f"job: {name}", "POST", JOBS, who, body, status, fields, code)


def c(name, body, fields, who="admin", status=422, code=V):
    return (f"credit: {name}", "POST", CREDITS, who, body, status, fields, code)


ROWS = [
    # --- offer_id
    r("offer_id unknown", rental(offer_id="ofr_00000000000000000000"), ["offer_id"]),
    r("offer_id malformed", rental(offer_id="not an offer"), ["offer_id"]),
    r("offer_id empty", rental(offer_id=""), ["offer_id"]),
    r("offer_id 65 characters", rental(offer_id="ofr_" + "0" * 61), ["offer_id"]),
    r("offer_id a number", rental(offer_id=7), ["offer_id"]),
    r("offer_id missing", rental(offer_id=DROP), ["offer_id"]),
    r("offer_id of another provider's machine, not listed", rental(offer_id=lambda c: c["oB"]),
      ["offer_id"]),
    r("offer_id the provider's own offer", rental(), ["offer_id"], who="owner"),
    # --- gpus
    r("gpus 0", rental(gpus=0), ["gpus"]),
    r("gpus -1", rental(gpus=-1), ["gpus"]),
    r("gpus 9", rental(gpus=9), ["gpus"]),
    r("gpus more than free (5 of 4)", rental(gpus=5), ["gpus"]),
    r("gpus a string", rental(gpus="1"), ["gpus"]),
    r("gpus 1.5", rental(gpus=1.5), ["gpus"]),
    r("gpus null", rental(gpus=None), ["gpus"]),
    r("gpus missing", rental(gpus=DROP), ["gpus"]),
    # --- image
    r("image empty", rental(image=""), ["image"]),
    r("image with a space", rental(image="busy box:1"), ["image"]),
    r("image upper case", rental(image="Gpunex/BusyBox:1"), ["image"]),
    r("image with a bad tag", rental(image="busybox:"), ["image"]),
    r("image 256 characters", rental(image="a" * 256), ["image"]),
    r("image a number", rental(image=5), ["image"]),
    r("image missing", rental(image=DROP), ["image"]),
    # --- image on the provider's own host or network (issue 24): the operator has not
    # allowed private registries here (test_rentals allows them for its local registry)
    r("image on loopback", rental(image="127.0.0.1:5000/gpunex-test/busybox:1"), ["image"]),
    r("image on localhost", rental(image="localhost:5000/gpunex-test/busybox:1"), ["image"]),
    r("image on loopback in decimal", rental(image="2130706433:5000/x:1"), ["image"]),
    r("image on loopback in short form", rental(image="127.1:5000/x:1"), ["image"]),
    r("image on link-local (cloud metadata)", rental(image="169.254.169.254/latest:1"),
      ["image"]),
    r("image on 0.0.0.0", rental(image="0.0.0.0:5000/x:1"), ["image"]),
    r("image on a private range", rental(image="10.0.0.5:5000/x:1"), ["image"]),
    r("image on 192.168", rental(image="192.168.1.20/x:1"), ["image"]),
    r("image on an internal name", rental(image="registry:5000/x:1"), ["image"]),
    r("image on a .internal name", rental(image="metadata.google.internal/x:1"), ["image"]),
    # --- container options the policy never allows
    r("privileged", rental(privileged=True), ["privileged"]),
    r("volumes", rental(volumes={"/var/run/docker.sock": {}}), ["volumes"]),
    r("binds", rental(binds=["/:/host"]), ["binds"]),
    r("mounts", rental(mounts=[{"Type": "bind", "Source": "/etc", "Target": "/e"}]), ["mounts"]),
    r("cap_add", rental(cap_add=["SYS_ADMIN"]), ["cap_add"]),
    r("network_mode host", rental(network_mode="host"), ["network_mode"]),
    r("pid_mode host", rental(pid_mode="host"), ["pid_mode"]),
    r("devices", rental(devices=["/dev/mem:/dev/mem"]), ["devices"]),
    r("security_opt", rental(security_opt=["seccomp=unconfined"]), ["security_opt"]),
    r("user root", rental(user="0:0"), ["user"]),
    r("workload fields: memory_mb", rental(memory_mb=1024), ["memory_mb"]),
    r("unknown field", rental(colour="blue"), ["colour"]),
    r("several forbidden at once", rental(privileged=True, cap_add=["ALL"], network_mode="host"),
      ["privileged", "cap_add", "network_mode"]),
    # --- command
    r("command a string", rental(command="sleep 60"), ["command"]),
    r("command with a number", rental(command=["sleep", 60]), ["command"]),
    r("command of 65 arguments", rental(command=["x"] * 65), ["command"]),
    r("command argument of 4097 characters", rental(command=["echo", "x" * 4097]),
      ["command"]),
    r("command an object", rental(command={"0": "sleep"}), ["command"]),
    # --- env
    r("env not an object", rental(env=["MODE=test"]), ["env"]),
    r("env name starting with a digit", rental(env={"1MODE": "x"}), ["env.1MODE"]),
    r("env name with a dash", rental(env={"MY-VAR": "x"}), ["env.MY-VAR"]),
    r("env name empty", rental(env={"": "x"}), ["env."]),
    r("env NVIDIA_VISIBLE_DEVICES", rental(env={"NVIDIA_VISIBLE_DEVICES": "all"}),
      ["env.NVIDIA_VISIBLE_DEVICES"]),
    r("env NVIDIA_DRIVER_CAPABILITIES", rental(env={"NVIDIA_DRIVER_CAPABILITIES": "all"}),
      ["env.NVIDIA_DRIVER_CAPABILITIES"]),
    r("env value a number", rental(env={"MODE": 1}), ["env.MODE"]),
    r("env value of 32769 characters", rental(env={"MODE": "x" * 32769}), ["env.MODE"]),
    r("env of 129 variables", rental(env={f"V{i}": "x" for i in range(129)}), ["env"]),
    # --- ports (issue 25)
    r("ports not an array", rental(ports={"port": 8080}), ["ports"]),
    r("ports of 17", rental(ports=[{"port": 8000 + i} for i in range(17)]), ["ports"]),
    r("ports element a string", rental(ports=["8080:8080"]), ["ports[0]"]),
    r("port 0", rental(ports=[{"port": 0}]), ["ports[0].port"]),
    r("port 65536", rental(ports=[{"port": 65536}]), ["ports[0].port"]),
    r("port a string", rental(ports=[{"port": "8080"}]), ["ports[0].port"]),
    r("port missing", rental(ports=[{"protocol": "http"}]), ["ports[0].port"]),
    r("port declared twice", rental(ports=[{"port": 22, "protocol": "tcp"}, {"port": 22}]),
      ["ports[1].port"]),
    r("port protocol udp", rental(ports=[{"port": 53, "protocol": "udp"}]),
      ["ports[0].protocol"]),
    r("port public a string", rental(ports=[{"port": 80, "public": "yes"}]),
      ["ports[0].public"]),
    r("port with a host address", rental(ports=[{"port": 80, "host": "10.0.0.1"}]),
      ["ports[0].host"]),
    # --- max_duration_s
    r("max_duration_s 0", rental(max_duration_s=0), ["max_duration_s"]),
    r("max_duration_s -60", rental(max_duration_s=-60), ["max_duration_s"]),
    r("max_duration_s 59", rental(max_duration_s=59), ["max_duration_s"]),
    r("max_duration_s a year and a second", rental(max_duration_s=31_536_001),
      ["max_duration_s"]),
    r("max_duration_s a string", rental(max_duration_s="3600"), ["max_duration_s"]),
    r("max_duration_s 60.5", rental(max_duration_s=60.5), ["max_duration_s"]),
    # --- max_cost_micro
    r("max_cost_micro 0", rental(max_cost_micro=0), ["max_cost_micro"]),
    r("max_cost_micro -1", rental(max_cost_micro=-1), ["max_cost_micro"]),
    r("max_cost_micro 1e12 + 1", rental(max_cost_micro=10 ** 12 + 1), ["max_cost_micro"]),
    r("max_cost_micro 1e19", rental(max_cost_micro=10 ** 19), ["max_cost_micro"]),
    r("max_cost_micro 1e19 as a float", rental(max_cost_micro=1e19), ["max_cost_micro"]),
    r("max_cost_micro 1.5", rental(max_cost_micro=1.5), ["max_cost_micro"]),
    r("max_cost_micro a string", rental(max_cost_micro="1000000"), ["max_cost_micro"]),
    # --- the body, the balance, who
    r("several fields at once", rental(gpus=0, max_duration_s=1, max_cost_micro=0),
      ["gpus", "max_duration_s", "max_cost_micro"]),
    r("several decoding errors at once", rental(gpus="two", image=7, command="ls"),
      ["gpus", "image", "command"]),
    r("body an array", lambda ctx: [rental()(ctx)], ["body"]),
    r("body not JSON", ("raw", '{"offer_id": ', "application/json"), ["body"], status=400,
      code=None),
    r("no balance", rental(), ["balance"], who="poor"),
    r("balance short of the first hour", rental(max_duration_s=DROP, max_cost_micro=DROP),
      ["balance"], who="cents"),
    r("anonymous", rental(), [], who="anon", status=401, code=None),
    # --- stopping what is not there
    r("stop an unknown rental", None, [], status=404, code="not_found",
      path=f"{RENTALS}/rnt_00000000000000000000/stop"),
    r("read an unknown rental", None, [], status=404, code="not_found", method="GET",
      path=f"{RENTALS}/rnt_00000000000000000000"),
    r("list with state paused", None, ["state"], method="GET", path=f"{RENTALS}?state=paused"),
    r("list with limit 0", None, ["limit"], method="GET", path=f"{RENTALS}?limit=0"),
    r("list with a junk cursor", None, ["cursor"], method="GET", path=f"{RENTALS}?cursor=junk"),
]

JOB_ROWS = [
    j("deadline_s 59", job(deadline_s=59), ["deadline_s"]),
    j("deadline_s 604801", job(deadline_s=604_801), ["deadline_s"]),
    j("deadline_s 0", job(deadline_s=0), ["deadline_s"]),
    j("deadline_s a string", job(deadline_s="3600"), ["deadline_s"]),
    j("gpus 0", job(gpus=0), ["gpus"]),
    j("gpus 9", job(gpus=9), ["gpus"]),
    j("gpus -2", job(gpus=-2), ["gpus"]),
    j("max_price_micro 0", job(max_price_micro=0), ["max_price_micro"]),
    j("max_price_micro -5", job(max_price_micro=-5), ["max_price_micro"]),
    j("max_price_micro a string", job(max_price_micro="1000000"), ["max_price_micro"]),
    j("max_price_micro 1.5", job(max_price_micro=1.5), ["max_price_micro"]),
    j("max_price_micro missing", job(max_price_micro=DROP), ["max_price_micro"]),
    j("min_reliability 101", job(min_reliability=101), ["min_reliability"]),
    j("min_reliability -1", job(min_reliability=-1), ["min_reliability"]),
    j("min_reliability a string", job(min_reliability="90"), ["min_reliability"]),
    j("gpu_model unknown", job(gpu_model="h100"), ["gpu_model"]),
    j("gpu_model upper case", job(gpu_model="L4-24GB"), ["gpu_model"]),
    j("gpu_model a number", job(gpu_model=4), ["gpu_model"]),
    j("gpu_models with an unknown one", job(gpu_model=DROP, gpu_models=[L4, "h100"]),
      ["gpu_models[1]"]),
    j("gpu_models empty", job(gpu_model=DROP, gpu_models=[]), ["gpu_models"]),
    j("gpu_models not a list", job(gpu_model=DROP, gpu_models=L4), ["gpu_models"]),
    j("gpu_model and gpu_models both", job(gpu_models=[L4]), ["gpu_model"]),
    j("no GPU model at all", job(gpu_model=DROP), ["gpu_models"]),
    j("min_performance -1", job(min_performance=-1), ["min_performance"]),
    j("min_vram_gb -1", job(min_vram_gb=-1), ["min_vram_gb"]),
    j("region upper case", job(region="EU-SOUTH"), ["region"]),
    j("country ITA", job(country="ITA"), ["country"]),
    j("no balance", job(), ["balance"], who="poor"),
    j("image empty", job(image=""), ["image"]),
    j("image on loopback", job(image="127.0.0.1:5000/gpunex-test/busybox:1"), ["image"]),
    j("image on link-local", job(image="169.254.169.254/latest:1"), ["image"]),
    j("privileged", job(privileged=True), ["privileged"]),
    j("env NVIDIA_VISIBLE_DEVICES", job(env={"NVIDIA_VISIBLE_DEVICES": "all"}),
      ["env.NVIDIA_VISIBLE_DEVICES"]),
    j("max_duration_s 59", job(max_duration_s=59), ["max_duration_s"]),
    j("max_cost_micro 0", job(max_cost_micro=0), ["max_cost_micro"]),
    j("unknown field", job(colour="blue"), ["colour"]),
    j("port declared twice", job(ports=[{"port": 8888}, {"port": 8888}]), ["ports[1].port"]),
    j("anonymous", job(), [], who="anon", status=401, code=None),
]

ROWS += [
    # --- credits
    c("by a customer", credit(), [], who="customer", status=403, code=None),
    c("by a provider", credit(), [], who="owner", status=403, code=None),
    c("anonymous", credit(), [], who="anon", status=401, code=None),
    c("amount 0", credit(amount_micro=0), ["amount_micro"]),
    c("amount -1", credit(amount_micro=-1), ["amount_micro"]),
    c("amount 1e12 + 1", credit(amount_micro=10 ** 12 + 1), ["amount_micro"]),
    c("amount 1.5", credit(amount_micro=1.5), ["amount_micro"]),
    c("amount a string", credit(amount_micro="1000000"), ["amount_micro"]),
    c("amount missing", credit(amount_micro=DROP), ["amount_micro"]),
    c("reference missing", credit(reference=DROP), ["reference"]),
    c("reference empty", credit(reference=""), ["reference"]),
    c("reference 201 characters", credit(reference="r" * 201), ["reference"]),
    c("reference with a newline", credit(reference="wire\n7781"), ["reference"]),
    c("user_id unknown", credit(user_id="usr_00000000000000000000"), ["user_id"]),
    c("user_id missing", credit(user_id=DROP), ["user_id"]),
    c("unknown field", credit(currency="EUR"), ["currency"]),
]


class RentalsBadInputsMixin:
    ROOT_TOML = "allow_emulated_gpus = true"
    SMTP = False

    def test_table_has_enough_rows(self):
        self.assertGreaterEqual(len(ROWS), 50)
        self.assertGreaterEqual(len(JOB_ROWS), 20)
        names = [row[0] for row in ROWS + JOB_ROWS]
        self.assertEqual(len(names), len(set(names)), "row names must be unique")

    def _fixture(self):
        srv = self.srv
        admin = srv.admin()
        prov_a, token_a, _ = provider_with_agent_token(srv, admin, name="Anna")
        prov_b, token_b, _ = provider_with_agent_token(srv, admin, name="Bert")
        agents = {}
        for key, token, gpus in (("a", token_a, 4), ("b", token_b, 1)):
            ag = FakeAgent(srv, token, models=(L4_GPU,) * gpus)
            self.addCleanup(ag.cleanup)
            ag.join()
            agents[key] = ag
        ma, mb = agents["a"].machine_id, agents["b"].machine_id

        def offer_on(mid, free):
            res = admin.c.get(f"{API}/offers", query={"gpu_model": L4, "limit": "200"})
            self.assertStatus(res, 200)
            return next((o["id"] for o in res.body["items"]
                         if o["machine_id"] == mid and o["gpus_available"] == free), None)

        oa = wait_until(lambda: offer_on(ma, 4), 10, "A's offer")
        ob = wait_until(lambda: offer_on(mb, 1), 10, "B's offer")
        # B withdraws its GPU: the offer id is known, the offer is not on the marketplace.
        gpu_b = prov_b.c.get(f"{API}/machines/{mb}").body["gpus"][0]["id"]
        res = prov_b.c.request("PATCH", f"{API}/machines/{mb}/gpus/{gpu_b}", {"enabled": False})
        self.assertStatus(res, 200)
        wait_until(lambda: self.srv.client().get(f"{API}/offers/{ob}").status == 404, 10,
                   "B's offer off the marketplace")
        customer = srv.user("Cora Customer")
        poor = srv.user("Paul Poor")
        cents = srv.user("Cent Customer")
        for u, amount in ((customer, 1000 * 1_000_000), (cents, 1000)):
            res = admin.c.post(CREDITS, {"user_id": u.id, "amount_micro": amount,
                                         "reference": "fixture credit"})
            self.assertStatus(res, 201)
        clients = {"customer": customer.c, "poor": poor.c, "cents": cents.c, "owner": prov_a.c,
                   "other": prov_b.c, "admin": admin.c, "anon": srv.client()}
        ctx = {"oA": oa, "oB": ob, "mA": ma, "mB": mb, "customer": customer.id}
        users = {"customer": customer, "poor": poor, "cents": cents, "owner": prov_a}
        return dict(ctx=ctx, clients=clients, users=users, admin=admin, agents=agents)

    def _state(self, f):
        q = self.srv.backend.query
        # One query for the counts.
        out = dict(q(" UNION ALL ".join(f"SELECT '{t}', COUNT(*) FROM {t}" for t in COUNTED)))
        out["transfers"] = sorted(json.dumps([str(v) for v in row]) for row in q(
            "SELECT id, kind, amount FROM ledger_transfers"))
        for name, u in f["users"].items():
            res = u.c.get(f"{API}/me/balance")
            self.assertStatus(res, 200)
            out[f"balance {name}"] = res.body["balance_micro"]
        return out

    def test_bad_requests_are_refused_and_change_nothing(self):
        f = self._fixture()
        before = self._state(f)
        self.assertEqual(before["rentals"], 0)
        self.assertEqual(before["balance customer"], 1000 * 1_000_000)
        self.assertRefusedRows(ROWS, f["clients"], f["ctx"], lambda: self._state(f))
        self.assertEqual(self._state(f), before)
        # No command reached the agents.
        for ag in f["agents"].values():
            ag.assert_no_command(0.5)

    def test_bad_job_requests_are_refused_and_change_nothing(self):
        f = self._fixture()
        before = self._state(f)
        self.assertRefusedRows(JOB_ROWS, f["clients"], f["ctx"], lambda: self._state(f))
        self.assertEqual(self._state(f), before)

    def test_valid_starting_points_are_accepted(self):
        f = self._fixture()
        ctx, cl = f["ctx"], f["clients"]
        res = cl["admin"].post(CREDITS, credit(amount_micro=10 ** 12)(ctx))
        self.assertStatus(res, 201)
        self.assertEqual(res.body["transfer"]["amount_micro"], 10 ** 12)
        res = cl["customer"].post(RENTALS, rental(max_duration_s=60, max_cost_micro=10 ** 12,
                                                  env={"NVIDIA": "is a fine name"})(ctx))
        self.assertStatus(res, 201)
        self.assertEqual((res.body["gpus"], res.body["max_duration_s"],
                          res.body["max_cost_micro"]), (1, 60, 10 ** 12))
        self.assertEqual(res.body["ports"], [])
        # Declared ports: the defaults filled in, and shown as stored.
        ports = [{"port": 8888}, {"port": 22, "protocol": "tcp"},
                 {"port": 65535, "protocol": "http", "public": True}]
        res = cl["customer"].post(RENTALS, rental(gpus=2, max_duration_s=31_536_000,
                                                  max_cost_micro=1, ports=ports)(ctx))
        self.assertStatus(res, 201)
        rid = res.body["id"]
        # (No access listener here: HTTP ports show no url. Nothing moved yet.)
        none = {"in_bytes": 0, "out_bytes": 0}
        want = [{"port": 8888, "protocol": "http", "public": False,
                 "connect_path": f"/api/v1/rentals/{rid}/ports/8888/connect", "traffic": none},
                {"port": 22, "protocol": "tcp", "public": False,
                 "connect_path": f"/api/v1/rentals/{rid}/ports/22/connect", "traffic": none},
                {"port": 65535, "protocol": "http", "public": True,
                 "connect_path": f"/api/v1/rentals/{rid}/ports/65535/connect", "traffic": none}]
        self.assertEqual(res.body["ports"], want)
        self.assertEqual(res.body["traffic"], none)
        self.assertEqual(cl["customer"].get(f"{RENTALS}/{res.body['id']}").body["ports"], want)
        # The balance short of an hour still rents what it covers.
        res = cl["cents"].post(RENTALS, rental(max_duration_s=DROP, max_cost_micro=1000)(ctx))
        self.assertStatus(res, 201)

    def test_valid_jobs_are_accepted(self):
        f = self._fixture()
        ctx, cl = f["ctx"], f["clients"]
        for label, body in (("deadline 60 s, 8 GPUs, any reliability",
                             job(deadline_s=60, min_reliability=0, gpus=8)),
                            ("deadline a week, reliability 100",
                             job(deadline_s=604_800, min_reliability=100)),
                            ("gpu_models", job(gpu_model=DROP, gpu_models=[L4, "h100-sxm-80gb"]))):
            with self.subTest(job=label):
                res = cl["customer"].post(JOBS, body(ctx))
                self.assertStatus(res, 201, label)
                self.assertIn(res.body["state"], ("queued", "placed", "unplaceable"), res.body)


class RentalsBadInputsSqliteTest(RentalsBadInputsMixin, ServerTestCase):
    BACKEND = "sqlite"


class RentalsBadInputsPostgresTest(RentalsBadInputsMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
