"""Three gpunexd instances on one PostgreSQL database behind HAProxy (issue 28, SPEC OPS-2),
all started here on loopback: HAProxy from Debian with deploy/cluster/haproxy.cfg's
settings, the instances' own ports, real or fake agents, EMULATED GPUs; rentals run in a
private Docker engine (dockerenv.TestDockerd).

- The seed's path with its steps spread over the instances: the agent connects through
  HAProxy (to whichever instance its token hashes to), the provider prices through
  another, the admin credits and the customer rents through a third, the rental is read
  through another, and the container is reached (an exec, its files) through an instance
  that does not hold the agent: the stream goes through the one that does. Then the instance that
  holds the agent is SIGKILLed: the agent reconnects through HAProxy to a live instance
  within 15 s, the rental keeps running in the same container and is reached again through
  the instance that does not hold it, a stop sent through the instance that does not hold the agent
  reaches it, and the rental is billed each second once although all the instances run
  the meter: the formula's charge, no more seconds than it ran, the ledger holds.
- SIGTERM: the instance exits cleanly and its agent moves to a live instance.
- A command written through one instance reaches the agent held by another at once (the
  writing transaction's NOTIFY), not at that instance's next sweep.
- An agent token revoked through one instance ends its connection on another within a
  second.
- deploy/cluster's files: the instance settings load and migrate, haproxy -c takes the
  HAProxy file.

Needs root, dockerd (docker.io), busybox-static, haproxy, and GPUNEX_TEST_PG_URL (skips
with the reason otherwise); GPUNEX_AGENT names the agent binary.
"""

import http.client
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import unittest
import urllib.parse

import dockerenv
import wsclient
from harness import (API, Client, Gpunexd, RealAgent, ServerTestCase, free_port,
                     provider_with_agent_token, source_dir, terminate, wait_until)
from test_agent_channel import H100, FakeAgent
from test_rentals import (BUSYBOX_REF, L4, LONG_COMMAND, USDC, DockerAgent, EngineAgentsMixin,
                          expected_money, offer_of, parse_time,
                          setUpModule, tearDownModule, wait_machine_listed)

__all__ = ["setUpModule", "tearDownModule"]

HEARTBEAT_S = 1
# Long enough that the agent's move to another instance (its backoff, HAProxy's health
# check) never ends the rental as agent_lost; the point is that it keeps running.
AGENT_LOST_GRACE_S = 60
CLUSTER_TOML = f"""
[fleet]
heartbeat_interval_s = {HEARTBEAT_S}
offline_after_s = 3
allow_private_registries = true

[rentals]
meter_interval_s = 1
agent_lost_grace_s = {AGENT_LOST_GRACE_S}
sweep_ms = 200
"""


def haproxy_config(port, backends):
    """deploy/cluster/haproxy.cfg's defaults and backend, on loopback: `backends` is a list
    of (name, port)."""
    with open(os.path.join(source_dir(), "deploy", "cluster", "haproxy.cfg"),
              encoding="utf-8") as f:
        shipped = f.read()
    # Everything but the frontend's bind and the servers comes from the shipped file.
    text = re.sub(r"(?m)^\s*log .*\n", "", shipped)
    text = text.replace("    option httplog\n", "")
    text = re.sub(r"(?m)^    bind :8080$", f"    bind 127.0.0.1:{port}", text)
    text = re.sub(r"(?m)^    server .*\n", "", text)
    # A few connections here (the shipped maxconn needs a raised open-file limit), and
    # checks twice as often as shipped, so that the test's waits stay short.
    text = re.sub(r"(?m)^    maxconn \d+$", "    maxconn 1000", text)
    text = text.replace("maxconn 10000", "maxconn 500")
    text = text.replace("default-server inter 1s", "default-server inter 500ms")
    text = text.rstrip("\n") + "\n" + "".join(
        f"    server {name} 127.0.0.1:{p} check\n" for name, p in backends)
    assert f"bind 127.0.0.1:{port}" in text and "balance hdr(Authorization)" in text, text
    return text


class HAProxy:
    """Debian's haproxy in the foreground on a loopback port, in front of `backends`."""

    def __init__(self, backends):
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not os.path.exists(binary):
            raise unittest.SkipTest("haproxy is not installed (scripts/install-deps.sh)")
        self.dir = tempfile.mkdtemp(prefix="gpunex-haproxy-")
        self.port = free_port()
        self.cfg = os.path.join(self.dir, "haproxy.cfg")
        with open(self.cfg, "w", encoding="utf-8") as f:
            f.write(haproxy_config(self.port, backends))
        check = subprocess.run([binary, "-c", "-f", self.cfg], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        self._log = open(os.path.join(self.dir, "haproxy.log"), "wb")
        self.proc = subprocess.Popen([binary, "-db", "-f", self.cfg], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT)

    def client(self, token=None):
        return Client(self.port, token)

    def ready(self):
        """Whether it answers /readyz with 200 (an instance behind it is ready)."""
        assert self.proc.poll() is None, "haproxy exited:\n" + self.log()
        try:
            return self.client().get("/readyz").status == 200
        except OSError:
            return False

    def stop(self):
        terminate(self.proc)
        self._log.close()

    def log(self):
        with open(os.path.join(self.dir, "haproxy.log"), "rb") as f:
            return f.read().decode("utf-8", errors="replace")

    def cleanup(self, keep=False):
        self.stop()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def holds_agent(instance, machine_id, since=0):
    """Whether `instance`'s log says it took the machine's agent (from its `since`-th line)."""
    lines = instance.logs().splitlines()[since:]
    return any('"agent.connected"' in l and machine_id in l for l in lines)


class ClusterTest(EngineAgentsMixin, ServerTestCase):
    BACKEND = "postgresql"
    EXTRA_TOML = CLUSTER_TOML
    ROOT_TOML = "allow_emulated_gpus = true"

    def setUp(self):
        if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):
            self.skipTest("haproxy is not installed (scripts/install-deps.sh)")
        super().setUp()
        # self.srv is the first instance (it made the database); two more share it.
        self.instances = [self.srv]
        for _ in range(2):
            other = Gpunexd(share_database_of=self.srv, extra_toml=CLUSTER_TOML,
                            root_toml=self.ROOT_TOML)
            self.addCleanup(self._cleanup_instance, other)
            other.start()
            self.instances.append(other)
        self.lb = HAProxy([(f"gpunexd-{i + 1}", s.port) for i, s in enumerate(self.instances)])
        self.addCleanup(self._cleanup_lb)
        wait_until(self.lb.ready, 15, "HAProxy to answer /readyz")

    def _cleanup_instance(self, instance):
        failed = self._outcome_failed()
        if failed:
            print(f"\n--- gpunexd {instance.port} ---\n" + instance.logs()[-4000:])
        instance.cleanup(keep=failed)

    def _cleanup_lb(self):
        failed = self._outcome_failed()
        if failed:
            print("\n--- haproxy ---\n" + self.lb.log()[-3000:])
        self.lb.cleanup(keep=failed)

    def via(self, instance, user):
        """`user`'s client on one instance (a session is the database's, valid on all)."""
        return Client(instance.port, user.token)

    def exec_through(self, instance, user, rid, command, stdin=b""):
        """Runs `command` in the rental through `instance`'s exec WebSocket: (stdout, status)."""
        q = "&".join("command=" + urllib.parse.quote(a, safe="") for a in command)
        ws = wsclient.connect(instance.port, f"{API}/rentals/{rid}/exec?{q}",
                              {"Authorization": f"Bearer {user.token}",
                               "Sec-WebSocket-Protocol": "v5.channel.k8s.io"})
        if stdin:
            ws.send_binary(b"\x00" + stdin)
        ws.send_binary(b"\xff\x00")  # stdin is done
        out = b""
        while True:
            m = ws.recv(timeout=30)
            self.assertEqual(m.kind, "binary", m)
            channel, payload = m.data[0], m.data[1:]
            if channel == 3:
                ws.wait_closed(timeout=10)
                return out, json.loads(payload)
            if channel == 1:
                out += payload

    def test_the_seed_path_across_instances_survives_the_agents_instance_dying(self):
        a, b, c = self.instances
        prov, token, _ = provider_with_agent_token(a, self.admin, name="Clara", priced=False)
        r = self.via(b, prov).put(f"{API}/providers/me/prices",
                                  {"items": [{"gpu_model": L4, "price_micro": 360_000}]})
        self.assertStatus(r, 200)
        # The agent knows the platform by HAProxy's address only.
        agent = DockerAgent(self.lb, token, f"{L4}:2", self.dock, name="clara")
        self.agents.append(agent)
        agent.start()
        mid = wait_machine_listed(self.admin, prov, 2)
        holder = wait_until(lambda: next((s for s in self.instances if holds_agent(s, mid)), None),
                            10, "the instance that took the agent")
        others = [s for s in self.instances if s is not holder]
        offer = offer_of(self.admin, mid, min_free=1)
        self.assertEqual(offer["price_micro"], 360_000)

        customer = a.user("Carl Cluster")
        admin_there, customer_there = self.via(others[0], self.admin), self.via(others[0], customer)
        # Each instance's offer index takes in changes on its own poll: the customer rents
        # what the instance it reached lists.
        wait_until(lambda: any(o["id"] == offer["id"] for o in
                               customer_there.get(f"{API}/offers", query={"gpu_model": L4, "limit": "200"})
                               .body.get("items", [])),
                   30, "the offer listed on the instance the customer reaches")
        self.assertStatus(admin_there.post(f"{API}/admin/credits",
                                           {"user_id": customer.id, "amount_micro": 50 * USDC,
                                            "reference": "cluster credit"}), 201)
        r = customer_there.post(f"{API}/rentals",
                                {"offer_id": offer["id"], "gpus": 1, "image": BUSYBOX_REF,
                                 "command": LONG_COMMAND})
        self.assertStatus(r, 201)
        rid = r.body["id"]
        reader = self.via(others[1], customer)

        def state():
            got = reader.get(f"{API}/rentals/{rid}")
            self.assertStatus(got, 200)
            return got.body
        wait_until(lambda: state()["state"] == "running", 60, "the rental running")
        def container_ids():
            return [ct["Id"] for ct in self.dock.containers("io.gpunex.managed=true")]
        containers = container_ids()
        self.assertEqual(len(containers), 1, containers)
        # The container reached through an instance that does not hold the agent: the
        # stream goes through the one that does (its peer connection).
        out, status = self.exec_through(others[1], customer, rid,
                                        ["sh", "-c", "echo reached; cat"], stdin=b"through C\n")
        self.assertEqual((out, status["status"]), (b"reached\nthrough C\n", "Success"), status)
        self.assertIn('"relay.peer_open"', others[1].logs())
        self.assertIn('"relay.peer_attached"', holder.logs())
        # Its files too (an HTTP exchange relayed through the holding instance).
        c = http.client.HTTPConnection("127.0.0.1", others[1].port, timeout=60)
        c.request("GET", f"{API}/rentals/{rid}/files?path=/bin/busybox",
                  headers={"Authorization": f"Bearer {customer.token}"})
        got = c.getresponse()
        data = got.read()
        c.close()
        self.assertEqual(got.status, 200, data[:300])
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            self.assertEqual([m.name for m in t.getmembers()], ["busybox"])

        # The instance holding the agent dies. The agent comes back through HAProxy to a
        # live one within 15 s, and the rental runs on in the same container.
        lines = {id(s): len(s.logs().splitlines()) for s in others}
        holder.kill()
        killed_at = time.monotonic()
        new_holder = wait_until(
            lambda: next((s for s in others if holds_agent(s, mid, lines[id(s)])), None), 15,
            "the agent to reconnect through HAProxy to a live instance")
        reconnect_s = time.monotonic() - killed_at
        print(f"\nthe agent reconnected to another instance {reconnect_s:.1f} s after the kill")
        live = [s for s in others if s is not new_holder][0]
        watcher = self.via(live, customer)
        # Heartbeats reach the database again, so the machine is online where it is not held.
        wait_until(lambda: self.via(live, prov).get(f"{API}/machines/{mid}").body["status"]
                   == "online", 10, "the machine online again, as the other instance reads it")
        time.sleep(3)  # metering goes on on both live instances meanwhile
        now = watcher.get(f"{API}/rentals/{rid}").body
        self.assertEqual(now["state"], "running", now)
        self.assertEqual(container_ids(), containers, "the same container runs on")
        # Reached again through the instance that does not hold it: the route follows the
        # agent to its new instance.
        out, status = self.exec_through(live, customer, rid, ["echo", "moved"])
        self.assertEqual((out, status["status"]), (b"moved\n", "Success"), status)

        # A stop through the instance that does not hold the agent reaches it.
        stop = watcher.post(f"{API}/rentals/{rid}/stop")
        self.assertStatus(stop, 200)
        self.assertIn(stop.body["state"], ("ending", "ended"), stop.body)
        stopped_at = time.monotonic()
        wait_until(lambda: watcher.get(f"{API}/rentals/{rid}").body["state"] == "ended", 15,
                   "the rental ended")
        wait_until(lambda: container_ids() == [], 15,
                   "the container removed by the agent")
        print(f"stopped through the other instance: container gone "
              f"{time.monotonic() - stopped_at:.1f} s after the stop")

        # Billed each second once, by whichever instance metered it: no more seconds than
        # it ran, the formula's money, one usage charge in the statement, the ledger whole.
        ended = watcher.get(f"{API}/rentals/{rid}").body
        self.assertEqual((ended["end_reason"], ended["end_party"]), ("stopped", "customer"),
                         ended)
        ran_s = (parse_time(ended["ended_at"]) - parse_time(ended["running_at"])).total_seconds()
        self.assertGreater(ended["billed_seconds"], 0, ended)
        self.assertLessEqual(ended["billed_seconds"], ran_s + 1, ended)
        charged, fee, provider_part = expected_money(ended)
        self.assertEqual((ended["charged_micro"], ended["fee_micro"], ended["provider_micro"]),
                         (charged, fee, provider_part), ended)
        self.assertGreater(charged, 0, ended)
        items = self.via(live, customer).get(f"{API}/me/statement",
                                             query={"limit": "100"}).body["items"]
        usage = [i for i in items if i["rental_id"] == rid]
        self.assertEqual(-sum(i["amount_micro"] for i in usage
                              if i["kind"] in ("usage_provider", "usage_fee")), charged, usage)
        balance = self.via(live, customer).get(f"{API}/me/balance").body
        self.assertEqual(balance["balance_micro"], 50 * USDC - charged, balance)
        chk = self.via(live, self.admin).get(f"{API}/admin/ledger/check").body
        self.assertIs(chk["ok"], True, chk)
        self.assertEqual(chk["sum_micro"], 0, chk)


    def test_an_instance_stopped_with_sigterm_hands_its_agents_to_the_others(self):
        """SIGTERM: the instance stops taking connections (HAProxy's check fails and
        `redispatch` sends a refused connection elsewhere), finishes what is in flight,
        closes its agents' connections and exits; the agents reconnect through HAProxy to
        a live instance, and HAProxy answers throughout."""
        a, b, c = self.instances
        prov, token, _ = provider_with_agent_token(a, self.admin, name="Tess")
        agent = RealAgent(self.lb, token, f"{L4}:1", name="tess")
        self.agents.append(agent)
        agent.start()

        def held():
            machines = self.via(b, prov).get(f"{API}/machines").body["items"]
            if not machines:
                return None
            return next((s for s in self.instances if holds_agent(s, machines[0]["id"])), None)
        holder = wait_until(held, 30, "the instance that took the agent")
        mid = self.via(b, prov).get(f"{API}/machines").body["items"][0]["id"]
        others = [s for s in self.instances if s is not holder]
        lines = {id(s): len(s.logs().splitlines()) for s in others}
        stopped_at = time.monotonic()
        holder.stop(timeout=30)
        self.assertEqual(holder.proc.returncode, 0, "a clean exit after SIGTERM")
        print(f"\nthe instance took {time.monotonic() - stopped_at:.1f} s to stop")
        wait_until(lambda: any(holds_agent(s, mid, lines[id(s)]) for s in others), 15,
                   "the agent to reconnect through HAProxy to a live instance")
        print(f"the agent was on another instance {time.monotonic() - stopped_at:.1f} s "
              f"after the SIGTERM")
        self.assertTrue(self.lb.ready(), "HAProxy answers /readyz from the live instances")
        live = self.via(others[0], prov)
        wait_until(lambda: live.get(f"{API}/machines/{mid}").body["status"] == "online", 10,
                   "the machine online")

    def test_a_command_written_through_one_instance_reaches_the_agent_on_another_at_once(self):
        """A command is written in the transaction that decides it; the instance holding
        the agent sends it when that commits (a PostgreSQL NOTIFY that instance listens
        for), not at its next sweep (every second)."""
        a, b, c = self.instances
        prov, token, _ = provider_with_agent_token(a, self.admin, name="Lina")
        agent = FakeAgent(a, token, models=[H100] * 32)
        self.addCleanup(agent.cleanup)
        agent.join()
        mid = agent.machine_id
        through_b = self.via(b, prov)
        gpu_ids = [g["id"] for g in through_b.get(f"{API}/machines/{mid}").body["gpus"]]
        self.assertEqual(len(gpu_ids), 32)
        took, answered = [], []
        for gid in gpu_ids:
            started = time.monotonic()
            r = through_b.post(f"{API}/workloads", {
                "machine_id": mid, "gpu_ids": [gid], "image": "gpunex-test/busybox:1",
                "command": ["sleep", "60"]})
            self.assertStatus(r, 201)
            answered.append(time.monotonic() - started)
            cmd = agent.expect_command("start_workload", timeout=5)
            took.append(time.monotonic() - started)
            self.assertEqual(cmd["payload"]["workload_id"], r.body["id"])
        took.sort()
        answered.sort()
        p50, worst = took[len(took) // 2], took[-1]
        # The request's own answer apart: a slow one waits on the machine's rows, which the
        # agent's heartbeat (every second, each GPU's telemetry) writes too.
        print(f"\nrequest through one instance to the command at the agent on another: "
              f"p50 {p50 * 1000:.0f} ms, max {worst * 1000:.0f} ms of {len(took)} "
              f"(the request's answer alone: p50 {answered[len(answered) // 2] * 1000:.0f} ms, "
              f"max {answered[-1] * 1000:.0f} ms)")
        # Left to the sweep, a command would wait half a second on average.
        self.assertLess(p50, 0.25, took)

    def test_a_token_revoked_through_one_instance_ends_its_connection_on_another(self):
        a, b, c = self.instances
        prov, token, token_id = provider_with_agent_token(a, self.admin, name="Rory")
        # A connection to b with the token (not yet a machine: its hello may wait 10 s).
        ws = wsclient.connect(b.port, f"{API}/agent/connect",
                              headers={"Authorization": f"Bearer {token}"})
        self.addCleanup(ws.abort)
        self.assertStatus(self.via(c, prov).delete(f"{API}/providers/me/agent-tokens/{token_id}"),
                          204)
        revoked_at = time.monotonic()
        code, reason, seen = ws.wait_closed(5)
        waited = time.monotonic() - revoked_at
        errors = [m for m in (json.loads(t) for t in seen) if m.get("type") == "error"]
        self.assertEqual((code, [e["code"] for e in errors]), (1008, ["token_revoked"]),
                         (reason, seen))
        # Each instance looks for revocations once a second.
        self.assertLess(waited, 3.0)
        print(f"\nthe connection on the other instance ended {waited:.2f} s after the revocation")
        for instance in self.instances:
            with self.assertRaises(wsclient.HandshakeRefused) as refused:
                wsclient.connect(instance.port, f"{API}/agent/connect",
                                 headers={"Authorization": f"Bearer {token}"})
            self.assertEqual(refused.exception.status, 401)


class ShippedClusterFilesTest(unittest.TestCase):
    """deploy/cluster's instance settings are a configuration gpunexd takes (its secrets and
    paths overridden by the environment, as the unit file does), and its HAProxy file passes
    haproxy's own check once its servers resolve."""

    def test_the_instance_settings_load_and_migrate_a_database(self):
        if not (shutil.which("haproxy") or os.path.exists("/usr/sbin/haproxy")):
            self.skipTest("haproxy is not installed (scripts/install-deps.sh)")
        owner = Gpunexd("postgresql")  # makes a throw-away database; not started
        self.addCleanup(owner.cleanup)
        env = owner.env()
        env["GPUNEX_DATA_DIR"] = owner.data_dir
        toml = os.path.join(source_dir(), "deploy", "cluster", "gpunexd.toml")
        run = subprocess.run([owner.binary, "migrate", "--config", toml], env=env,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("schema at version", run.stdout + run.stderr)
        self.assertIn("ledger_transfers", owner.backend.tables())
        # Each instance's own address comes from the environment, checked.
        env["GPUNEX_INSTANCE_URL"] = "http://10.0.0.11:8080/gpunex"
        bad = subprocess.run([owner.binary, "migrate", "--config", toml], env=env,
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0, bad.stdout + bad.stderr)
        self.assertIn("cluster.instance_url", bad.stdout + bad.stderr)
        # The shipped HAProxy file, its servers on loopback: haproxy -c accepts it.
        lb_dir = tempfile.mkdtemp(prefix="gpunex-haproxy-check-")
        self.addCleanup(shutil.rmtree, lb_dir, True)
        with open(os.path.join(source_dir(), "deploy", "cluster", "haproxy.cfg"),
                  encoding="utf-8") as f:
            shipped = re.sub(r"10\.0\.0\.1\d:8080", "127.0.0.1:8080", f.read())
        cfg = os.path.join(lb_dir, "haproxy.cfg")
        with open(cfg, "w", encoding="utf-8") as f:
            f.write(shipped)
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        check = subprocess.run([binary, "-c", "-f", cfg], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)


if __name__ == "__main__":
    unittest.main()
