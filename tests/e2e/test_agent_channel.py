"""The agent channel (AGT-3, AGT-4, AGT-5, ISO-2, ISO-3, RNT-2, RNT-3) end to end.

A fake agent (FakeAgent, on wsclient.py) speaks the agent protocol to a real gpunexd over
GET /api/v1/agent/connect with emulated GPUs:

- connect → welcome → the machine is Online with its GPUs (the docs/api.md fields), heartbeat
  telemetry shows in GET /machines/{id}; providers see only their own machines, admins
  all, customers none; the provider designates GPUs with PATCH .../gpus/{gpu_id};
- missed heartbeats → Offline (offline_after_s = 3), every transition kept as an interval;
  a reconnect with the same machine key is the same machine, never a duplicate;
- hostile agents: bad, revoked or non-agent credentials, malformed / oversized / binary /
  unmasked frames, messages before hello, claims on another provider's machine, emulated
  GPUs where they are not allowed, connections that never say hello: refused or closed,
  and nothing changes; after the hello a bad message is refused alone (counted in
  /metrics) and the connection goes on;
- workloads: create → start_workload command → ack/result/events/logs → exited with its
  exit code and end party; policy fields refused by name; tenants isolated;
- exactly once: a command is re-sent after a reconnect and after a gpunexd SIGKILL until
  its result arrives, and done once;
- reconcile on hello: a started workload whose container the agent no longer has fails
  ("container lost", provider) once a grace period passes without its end being
  reported; pending and reported ones are kept.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import json
import secrets
import threading
import time
import unittest

import wsclient
from harness import API, ServerTestCase, provider_with_agent_token, wait_until

CONNECT_PATH = f"{API}/agent/connect"
HEARTBEAT_S = 1
OFFLINE_AFTER_S = 3
HELLO_TIMEOUT_S = 3  # [fleet] hello_timeout_s

FLEET_TOML = f"""
[fleet]
heartbeat_interval_s = {HEARTBEAT_S}
offline_after_s = {OFFLINE_AFTER_S}
hello_timeout_s = {HELLO_TIMEOUT_S}
"""

GPU_FIELDS = {"id", "index", "uuid", "name", "catalog_id", "vram_mb", "emulated", "enabled",
              "listed", "delisted_reason", "performance_score", "last_benchmark_at"}

H100 = ("h100-sxm-80gb", "NVIDIA H100 80GB HBM3", 81559)
L4 = ("l4-24gb", "NVIDIA L4", 23034)




class AgentRefused(AssertionError):
    def __init__(self, error, code, reason, seen):
        self.error = error      # the error message (dict) or None
        self.code = code        # the close code
        self.reason = reason
        self.seen = seen
        super().__init__(f"refused: error={error} close={code} {reason!r} seen={seen}")


class FakeAgent:
    """One fake gpunex-agent on one fake machine. The machine key stays with the object, so
    connect()/hello() again is a reconnect of the same machine."""

    def __init__(self, srv, token, models=(H100, H100), machine_key=None, emulated=True,
                 gpu_emulated=None):
        self.srv = srv
        self.token = token
        self.machine_key = machine_key or "mk-" + secrets.token_hex(24)
        self.machine_id = ""
        self.emulated = emulated
        tag = secrets.token_hex(4)
        gpu_emulated = emulated if gpu_emulated is None else gpu_emulated
        self.gpus = []
        for i, (catalog_id, name, vram) in enumerate(models):
            uuid = (f"GPU-emu-{tag}-aaaa-bbbb-cccc-{i:012x}" if gpu_emulated else
                    f"GPU-{tag}-1111-2222-3333-{i:012x}")
            self.gpus.append({
                "index": i, "uuid": uuid, "name": name, "catalog_id": catalog_id,
                "vram_mb": vram, "driver_version": "550.54.15", "cuda_driver_version": "12.4",
                "pcie_gen_max": 5, "pcie_gen_current": 5, "pcie_width_max": 16,
                "pcie_width_current": 16, "power_limit_w": 700, "emulated": gpu_emulated})
        self.hostname = f"rig-{tag}"
        self.network_isolation = {"state": "isolated", "reached": [], "detail": "fake: isolated"}
        self.ws = None
        self.all_ws = []  # every connection made, for the cleanup
        self.backlog = []
        self.seq = 0
        self.utilization = 37
        self._hb_thread = None
        self._hb_stop = threading.Event()

    # -- connection

    def connect(self, token=None, headers=None):
        self.stop_heartbeats()
        hdrs = {"Authorization": f"Bearer {self.token if token is None else token}"}
        if headers is not None:
            hdrs = headers
        self.ws = wsclient.connect(self.srv.port, CONNECT_PATH, headers=hdrs)
        self.all_ws.append(self.ws)
        self.backlog = []
        return self.ws

    def hello_msg(self, containers=(), machine_id=None, **over):
        m = {"type": "hello", "protocol": 1, "agent_version": "0.1.0-fake",
             "machine_id": self.machine_id if machine_id is None else machine_id,
             "machine_key": self.machine_key, "emulated": self.emulated,
             "host": {"hostname": self.hostname, "cpu_model": "Fake EPYC 9654", "os": "Ubuntu 22.04",
                      "kernel": "6.5.0", "docker_version": "24.0.7", "cpu_cores": 96,
                      "ram_mb": 1048576, "disk_total_mb": 4000000, "disk_free_mb": 3500000,
                      # What the real agent says once its check passed (docs/trust.md).
                      "network_isolation": self.network_isolation},
             "gpus": self.gpus, "containers": list(containers)}
        m.update(over)
        return m

    def hello(self, containers=(), machine_id=None, **over):
        """Sends hello; returns the welcome (raises AgentRefused on an error + close)."""
        self.send(self.hello_msg(containers, machine_id, **over))
        # A hello is one SERIALIZABLE transaction on PostgreSQL, retried on a conflict; under
        # ASan on a loaded machine its retries took more than 10 s once.
        welcome = self.expect(lambda m: m["type"] in ("welcome", "error"), 30, "welcome")
        if welcome["type"] == "error":
            code, reason, seen = self.ws.wait_closed(5)
            raise AgentRefused(welcome, code, reason, seen)
        self.machine_id = welcome["machine_id"]
        return welcome

    def join(self, containers=(), heartbeats=True):
        """connect + hello (+ a heartbeat thread); returns the welcome."""
        self.connect()
        welcome = self.hello(containers)
        if heartbeats:
            self.start_heartbeats()
        return welcome

    def send(self, obj):
        assert self.ws.send_json(obj), f"could not send {obj}"

    def heartbeat(self):
        self.seq += 1
        return self.ws.send_json({"type": "heartbeat", "seq": self.seq, "gpus": [
            {"uuid": g["uuid"], "utilization_pct": self.utilization, "memory_used_mb": 1024,
             "temperature_c": 55, "power_w": 250.5, "sm_clock_mhz": 1980,
             "throttle_reasons": []} for g in self.gpus]})

    def start_heartbeats(self, interval=0.4):
        self.stop_heartbeats()
        self._hb_stop = threading.Event()
        stop = self._hb_stop

        def run():
            while not stop.is_set():
                if not self.heartbeat():
                    return
                stop.wait(interval)

        self._hb_thread = threading.Thread(target=run, daemon=True)
        self._hb_thread.start()

    def stop_heartbeats(self):
        if self._hb_thread:
            self._hb_stop.set()
            self._hb_thread.join(timeout=5)
            self._hb_thread = None

    def disconnect(self, abrupt=False):
        self.stop_heartbeats()
        if self.ws:
            if abrupt:
                self.ws.abort()
            else:
                self.ws.close()

    def cleanup(self):
        self.stop_heartbeats()
        for ws in self.all_ws:
            ws.abort()

    # -- receiving

    def expect(self, pred, timeout=5, what="a message"):
        """The first message (parsed) matching pred; others are kept in the backlog."""
        for i, m in enumerate(self.backlog):
            if pred(m):
                return self.backlog.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {what} within {timeout}s; backlog {self.backlog}")
            try:
                m = self.ws.recv(left)
            except wsclient.Timeout:
                continue
            if m.kind == "close":
                raise AssertionError(f"connection closed {m.data} while waiting for {what}; "
                                     f"backlog {self.backlog}")
            assert m.kind == "text", m
            msg = json.loads(m.data)
            if pred(msg):
                return msg
            self.backlog.append(msg)

    def expect_command(self, kind=None, timeout=5):
        return self.expect(lambda m: m["type"] == "command" and (kind is None or m["kind"] == kind),
                           timeout, f"command {kind or ''}")

    def assert_no_command(self, duration):
        """No command arrives within `duration` seconds."""
        try:
            m = self.expect(lambda m: m["type"] == "command", duration, "command")
        except AssertionError as e:
            if "no command" in str(e):
                return
            raise
        raise AssertionError(f"unexpected command {m}")

    def expect_refusal(self, timeout=5):
        """The platform sends an error message (optional for frame-level errors) and
        closes. Returns (error dict or None, close code, close reason)."""
        code, reason, seen = self.ws.wait_closed(timeout)
        texts = [json.loads(t) for t in seen] + self.backlog
        errors = [m for m in texts if m.get("type") == "error"]
        return (errors[0] if errors else None), code, reason


class AgentChannelMixin:
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = FLEET_TOML
    SMTP = False

    def setUp(self):
        super().setUp()
        self.admin = self.srv.admin()
        self.agents = []
        self.addCleanup(self._disconnect_agents)

    def _disconnect_agents(self):
        for a in self.agents:
            try:
                a.cleanup()
            except Exception:  # best effort
                pass

    def agent(self, token, **kw):
        a = FakeAgent(self.srv, token, **kw)
        self.agents.append(a)
        return a

    def provider(self, name):
        return provider_with_agent_token(self.srv, self.admin, name=name)

    def q(self, sql, params=()):
        return self.srv.backend.query(sql, params)

    def snapshot(self):
        """Everything an agent could change, less the clock-driven status fields."""
        return {
            "machines": self.q("SELECT id, provider_id, key_hash, name, emulated, agent_version, "
                               "host FROM machines ORDER BY id"),
            "gpus": self.q("SELECT id, machine_id, idx, uuid, name, catalog_id, vram_mb, emulated, "
                           "present, enabled, benchmark_verdict, benchmark_note FROM machine_gpus ORDER BY id"),
            "workloads": self.q("SELECT id, machine_id, state, exit_code, end_reason, end_party, "
                                "container_id FROM workloads ORDER BY id"),
            "commands": self.q("SELECT id, machine_id, kind, state, ok FROM agent_commands "
                               "ORDER BY id"),
            "logs": self.q("SELECT workload_id, stream, seq, data FROM workload_logs "
                           "ORDER BY workload_id, stream, seq"),
        }

    def machine(self, user, mid):
        r = user.c.get(f"{API}/machines/{mid}")
        self.assertStatus(r, 200)
        return r.body

    def wait_status(self, user, mid, status, timeout):
        return wait_until(lambda: (lambda m: m if m["status"] == status else None)(
            self.machine(user, mid)), timeout, f"machine {mid} {status}")

    def create_workload(self, user, mid, gpu_ids, command=("sh", "-c", "echo hi; exit 3"), **extra):
        body = {"machine_id": mid, "gpu_ids": list(gpu_ids), "image": "gpunex-test/busybox:1",
                "command": list(command)}
        body.update(extra)
        return user.c.post(f"{API}/workloads", body)

    def workload(self, user, wid):
        r = user.c.get(f"{API}/workloads/{wid}")
        self.assertStatus(r, 200)
        return r.body

    def refused_messages(self):
        """gpunex_agent_messages_refused from /metrics, by reason."""
        r = self.srv.client().get("/metrics")
        self.assertStatus(r, 200)
        out = {"invalid_message": 0, "protocol_error": 0, "forbidden": 0}
        for line in r.raw.decode("utf-8").splitlines():
            if line.startswith("gpunex_agent_messages_refused{"):
                reason = line.split('reason="', 1)[1].split('"', 1)[0]
                out[reason] = float(line.rsplit(" ", 1)[1])
        return out

    def command_rows(self, command_id):
        return self.q("SELECT id, state, ok, done_at, result FROM agent_commands WHERE id = ?",
                      (command_id,))

    # ------------------------------------------------------------------ tests

    def test_machine_online_gpus_visibility_offline_reconnect(self):
        srv = self.srv
        prov, token, _ = self.provider("Pia")
        other, other_token, _ = self.provider("Oscar")
        customer = srv.user("Carl Customer")

        r = srv.client().get(f"{API}/gpu-models")
        self.assertStatus(r, 200)
        models = r.body["items"] if isinstance(r.body, dict) else r.body
        self.assertIn(H100[0], {m["id"] for m in models})

        agent = self.agent(token)
        agent.connect()
        welcome = agent.hello()
        self.assertEqual(set(welcome), {"type", "machine_id", "heartbeat_interval_s",
                                        "keep_workload_ids"})
        self.assertEqual(welcome["heartbeat_interval_s"], HEARTBEAT_S)
        self.assertEqual(welcome["keep_workload_ids"], [])
        mid = welcome["machine_id"]
        self.assertTrue(mid)
        # The server answers pings (keepalive from the agent's side).
        self.assertTrue(agent.ws.ping(b"keepalive-1"))
        with self.assertRaises(wsclient.Timeout):
            agent.ws.recv(0.5)
        self.assertEqual(agent.ws.pongs, [b"keepalive-1"])
        agent.start_heartbeats()

        # --- Online within a few seconds, with its GPUs, in the provider's list
        def listed_online():
            r = prov.c.get(f"{API}/machines")
            self.assertStatus(r, 200)
            items = [m for m in r.body["items"] if m["id"] == mid]
            return items[0] if items and items[0]["status"] == "online" else None

        m = wait_until(listed_online, 5, "the machine online in GET /machines")
        self.assertEqual(len(prov.c.get(f"{API}/machines").body["items"]), 1)
        self.assertTrue(m["last_seen"])
        self.assertEqual(len(m["gpus"]), 2)
        for i, g in enumerate(m["gpus"]):
            self.assertLessEqual(GPU_FIELDS, set(g), g)
            self.assertTrue(g["id"])
            self.assertEqual(g["index"], i)
            self.assertEqual(g["uuid"], agent.gpus[i]["uuid"])
            self.assertEqual(g["name"], H100[1])
            self.assertEqual(g["catalog_id"], H100[0])
            self.assertEqual(g["vram_mb"], H100[2])
            self.assertIs(g["emulated"], True)
            self.assertIs(g["enabled"], True)
            self.assertIs(g["listed"], True)
            self.assertIsNone(g["delisted_reason"])
            self.assertIsNone(g["performance_score"])
            self.assertIsNone(g["last_benchmark_at"])
        self.assertEqual(len({g["id"] for g in m["gpus"]}), 2)

        # --- heartbeat telemetry in GET /machines/{id}
        def telemetry():
            d = self.machine(prov, mid)
            return d if all(g.get("telemetry") for g in d["gpus"]) else None

        d = wait_until(telemetry, 5, "telemetry")
        self.assertEqual(d["status"], "online")
        self.assertEqual(d["host"]["hostname"], agent.hostname)
        self.assertEqual(d["host"]["cpu_cores"], 96)
        for g in d["gpus"]:
            t = g["telemetry"]
            self.assertEqual(t["utilization_pct"], 37)
            self.assertEqual(t["memory_used_mb"], 1024)
            self.assertEqual(t["temperature_c"], 55)
            self.assertEqual(t["sm_clock_mhz"], 1980)
            self.assertAlmostEqual(t["power_w"], 250.5)
            self.assertTrue(g["telemetry_at"])
        agent.utilization = 88
        wait_until(lambda: all(g["telemetry"]["utilization_pct"] == 88
                               for g in self.machine(prov, mid)["gpus"]), 5, "new telemetry")

        # --- who sees it
        self.assertError(other.c.get(f"{API}/machines/{mid}"), 404)
        r = other.c.get(f"{API}/machines")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["items"], [])
        r = self.admin.c.get(f"{API}/machines")
        self.assertStatus(r, 200)
        self.assertIn(mid, [x["id"] for x in r.body["items"]])
        self.assertEqual(self.machine(self.admin, mid)["id"], mid)
        # A customer lacks the provider role: refused before the machine is looked up.
        self.assertError(customer.c.get(f"{API}/machines"), 403)
        self.assertError(customer.c.get(f"{API}/machines/{mid}"), 403)
        self.assertError(srv.client().get(f"{API}/machines"), 401)
        self.assertError(srv.client(token).get(f"{API}/machines"), 401,
                         msg="agent tokens are refused on the REST API")

        # --- PATCH /machines/{id}/gpus/{gpu_id}: the owner designates GPUs
        gid = m["gpus"][1]["id"]
        gpath = f"{API}/machines/{mid}/gpus/{gid}"
        before = self.snapshot()
        self.assertError(other.c.request("PATCH", gpath, {"enabled": False}), 404)
        self.assertError(customer.c.request("PATCH", gpath, {"enabled": False}), 403)
        self.assertError(self.admin.c.request("PATCH", gpath, {"enabled": False}), 403)
        self.assertError(prov.c.request("PATCH", gpath, {"enabled": "no"}), 422, fields=["enabled"])
        self.assertError(prov.c.request("PATCH", gpath, {}), 422, fields=["enabled"])
        self.assertError(prov.c.request("PATCH", gpath, {"enabled": False, "listed": True}), 422,
                         fields=["listed"])
        self.assertError(prov.c.request("PATCH", f"{API}/machines/{mid}/gpus/gpu_nosuch",
                                        {"enabled": False}), 404)
        self.assertEqual(self.snapshot(), before, "rejected PATCHes change nothing")
        r = prov.c.request("PATCH", gpath, {"enabled": False})
        self.assertStatus(r, 200)
        g = [x for x in r.body["gpus"] if x["id"] == gid][0]
        self.assertIs(g["enabled"], False)
        self.assertIs(g["listed"], False)
        other_gpu = [x for x in r.body["gpus"] if x["id"] != gid][0]
        self.assertIs(other_gpu["enabled"], True)
        g = [x for x in self.machine(prov, mid)["gpus"] if x["id"] == gid][0]
        self.assertEqual((g["enabled"], g["listed"]), (False, False))

        # --- missed heartbeats (connection open) → Offline after ~offline_after_s
        agent.stop_heartbeats()
        stopped = time.monotonic()
        self.wait_status(prov, mid, "offline", OFFLINE_AFTER_S + 4)
        self.assertGreaterEqual(time.monotonic() - stopped, OFFLINE_AFTER_S - 1.5,
                                "offline too early")
        # A heartbeat on the same connection brings it back.
        agent.start_heartbeats()
        self.wait_status(prov, mid, "online", 5)

        # --- the agent goes away → Offline; the intervals show it all
        agent.disconnect()
        gone = time.monotonic()
        d = self.wait_status(prov, mid, "offline", OFFLINE_AFTER_S + 4)
        self.assertGreaterEqual(time.monotonic() - gone, OFFLINE_AFTER_S - 1.5)
        self.assertFalse(d["connected_here"])
        intervals = list(reversed(d["recent_intervals"]))  # oldest first
        # The zero-length "offline" interval from before the first hello may be there.
        real = [iv for iv in intervals if iv["started_at"] != iv["ended_at"]]
        self.assertEqual([iv["state"] for iv in real], ["online", "offline", "online", "offline"],
                         intervals)
        for a, b in zip(real, real[1:]):
            self.assertEqual(a["ended_at"], b["started_at"], intervals)
        self.assertIsNone(real[-1]["ended_at"])
        self.assertTrue(all(iv["ended_at"] and iv["end_reason"] for iv in real[:-1]), intervals)
        self.assertEqual(len([iv for iv in intervals if iv["ended_at"] is None]), 1, intervals)

        # --- reconnect with the same key and id → the same machine, Online again
        count = len(self.q("SELECT id FROM machines"))
        gpu_rows = self.q("SELECT id, uuid FROM machine_gpus ORDER BY id")
        agent.connect()
        welcome = agent.hello()
        self.assertEqual(welcome["machine_id"], mid)
        agent.start_heartbeats()
        self.wait_status(prov, mid, "online", 5)
        r = prov.c.get(f"{API}/machines")
        self.assertEqual([x["id"] for x in r.body["items"]], [mid])
        self.assertEqual(len(self.q("SELECT id FROM machines")), count)
        self.assertEqual(self.q("SELECT id, uuid FROM machine_gpus ORDER BY id"), gpu_rows)
        g = [x for x in self.machine(prov, mid)["gpus"] if x["id"] == gid][0]
        self.assertEqual((g["enabled"], g["listed"]), (False, False),
                         "the designation survives a reconnect")

        # A second connection of the same machine (key only, no id) takes over the first.
        first = agent.ws
        agent.stop_heartbeats()
        agent.connect()
        welcome = agent.hello(machine_id="")
        self.assertEqual(welcome["machine_id"], mid)
        code, reason, seen = first.wait_closed(5)
        self.assertEqual(code, 1008)
        self.assertIn("replaced", [json.loads(t).get("code") for t in seen])
        self.assertEqual(len(self.q("SELECT id FROM machines")), count)
        agent.start_heartbeats()

        # Re-enable the GPU: listed again.
        r = prov.c.request("PATCH", gpath, {"enabled": True})
        self.assertStatus(r, 200)
        g = [x for x in r.body["gpus"] if x["id"] == gid][0]
        self.assertEqual((g["enabled"], g["listed"]), (True, True))

        # A GPU missing from the next hello stays known but is not listed nor usable.
        all_gpus = agent.gpus
        agent.gpus = all_gpus[:1]
        agent.connect()
        agent.hello()
        g = [x for x in self.machine(prov, mid)["gpus"] if x["id"] == gid][0]
        self.assertIs(g["listed"], False)
        self.assertError(self.create_workload(prov, mid, [gid]), 422, fields=["gpu_ids[0]"])
        agent.gpus = all_gpus
        agent.connect()
        agent.hello()
        agent.start_heartbeats()
        g = [x for x in self.machine(prov, mid)["gpus"] if x["id"] == gid][0]
        self.assertIs(g["listed"], True)
        self.assertEqual(self.q("SELECT id, uuid FROM machine_gpus ORDER BY id"), gpu_rows)

    def test_hostile_agents(self):
        srv = self.srv
        prov, token, token_id = self.provider("Hana")
        other, other_token, _ = self.provider("Ivo")

        # A connection that never says hello: closed after the time limit (checked last).
        # Opened with the token that is rotated below: rotation ends it.
        silent = self.agent(token)
        silent.connect()

        owned = self.agent(token)
        owned.join()
        mid = owned.machine_id
        theirs = self.agent(other_token)
        theirs.join()
        their_mid = theirs.machine_id

        def refused_upgrade(headers, what):
            with self.assertRaises(wsclient.HandshakeRefused, msg=what) as cm:
                wsclient.connect(srv.port, CONNECT_PATH, headers=headers)
            e = cm.exception
            self.assertEqual(e.status, 401, f"{what}: {e}")
            self.assertIsInstance(e.body, dict, what)
            self.assertTrue(e.body["error"]["code"], what)
            self.assertTrue(e.body["error"]["message"], what)

        before = self.snapshot()

        # --- credentials
        refused_upgrade({}, "no Authorization")
        refused_upgrade({"Authorization": "Bearer "}, "empty bearer")
        refused_upgrade({"Authorization": "Bearer nope"}, "garbage token")
        refused_upgrade({"Authorization": "Bearer gpx_a_" + "A" * 43}, "unknown agent token")
        refused_upgrade({"Authorization": token}, "no Bearer prefix")
        refused_upgrade({"Authorization": "Basic " + token}, "Basic scheme")
        refused_upgrade({"Authorization": f"Bearer {prov.token}"}, "a session token")
        r = prov.c.post(f"{API}/api-keys", {"name": "ci"})
        self.assertStatus(r, 201)
        refused_upgrade({"Authorization": f"Bearer {r.body['key']}"}, "an API key")
        # Revoked: a new token works, then is revoked and refused.
        r = prov.c.post(f"{API}/providers/me/agent-tokens", {"name": "rack 9"})
        self.assertStatus(r, 201)
        doomed = r.body
        wsclient.connect(srv.port, CONNECT_PATH,
                         headers={"Authorization": f"Bearer {doomed['token']}"}).close()
        self.assertStatus(prov.c.delete(f"{API}/providers/me/agent-tokens/{doomed['id']}"), 204)
        refused_upgrade({"Authorization": f"Bearer {doomed['token']}"}, "a revoked token")
        # Rotated away: the old token is refused, the new one works.
        r = prov.c.post(f"{API}/providers/me/agent-tokens/{token_id}/rotate")
        self.assertStatus(r, 201)
        refused_upgrade({"Authorization": f"Bearer {token}"}, "a rotated-away token")
        token = r.body["token"]
        # A live connection made with the rotated-away token is ended at once.
        err, code, reason = silent.expect_refusal(5)
        self.assertEqual(code, 1008, reason)
        self.assertEqual(err["code"], "token_revoked")
        for a in (owned,):
            a.token = token
        silent = self.agent(token)
        silent.connect()
        silent_opened = time.monotonic()
        # A token sent as a query parameter is not a credential.
        with self.assertRaises(wsclient.HandshakeRefused):
            wsclient.connect(srv.port, CONNECT_PATH + "?token=" + token, headers={})
        self.assertEqual(self.snapshot(), before)

        def hostile(send, expect_code=1008, expect_error=None, agent=None, hello=False):
            a = agent or self.agent(token)
            a.connect()
            if hello:
                a.hello()
            send(a)
            err, code, reason = a.expect_refusal(8)
            self.assertEqual(code, expect_code, f"close code; error={err} reason={reason!r}")
            if expect_error:
                self.assertIsNotNone(err, "an error message before the close")
                self.assertEqual(err["code"], expect_error, err)
                self.assertTrue(err["message"], err)
            return err

        # --- malformed frames and messages, before and after hello
        hostile(lambda a: a.ws.send_text("{not json"), expect_error="invalid_message")
        hostile(lambda a: a.ws.send_text("[1, 2]"), expect_error="invalid_message")
        hostile(lambda a: a.send({"type": "launch_missiles"}), expect_error="invalid_message")
        hostile(lambda a: a.send({"type": "heartbeat", "seq": 1, "gpus": []}),
                expect_error="protocol_error")
        hostile(lambda a: a.send({"type": "ack", "command_id": "cmd_x"}),
                expect_error="protocol_error")
        for bad in ({"machine_key": "short"}, {"protocol": 2}, {"surprise": True},
                    {"gpus": [dict(owned.gpus[0], uuid="not-a-gpu")]},
                    {"gpus": [owned.gpus[0], owned.gpus[0]]}):
            a = self.agent(token)
            err = hostile(lambda a, bad=bad: a.send(a.hello_msg(**bad)), agent=a)
            self.assertIsNotNone(err, bad)
            self.assertIn(err["code"], ("invalid_message", "refused"), (bad, err))
        self.assertEqual(self.snapshot(), before, "nothing changed by bad hellos")

        spare = self.agent(token)  # a second machine of the same provider
        spare.join(heartbeats=False)
        spare.heartbeat()
        spare.disconnect()
        before = self.snapshot()
        # After the hello the connection carries the machine's rentals (issue 24): a bad
        # message is refused alone, nothing sent back, counted in /metrics, and the same
        # connection goes on working.
        refused_before = self.refused_messages()
        spare.connect()
        spare.hello()
        for i, send in enumerate((
                lambda a: a.ws.send_text("{not json"),
                lambda a: a.send({"type": "heartbeat", "seq": 1, "gpus": [
                    {"uuid": "GPU-emu-00000000-dead-beef-0000-000000000000",
                     "utilization_pct": 1, "memory_used_mb": 1, "temperature_c": 1,
                     "power_w": 1, "sm_clock_mhz": 1}]}),
                lambda a: a.send(a.hello_msg()),
                lambda a: a.send({"type": "workload_event", "workload_id": "wl_x",
                                  "state": "exploded"}))):
            send(spare)
            spare.send({"type": "ping", "id": 100 + i})
            spare.expect(lambda m, i=i: m["type"] == "pong" and m["id"] == 100 + i, 5, "pong")
            self.assertFalse([m for m in spare.backlog if m["type"] == "error"], spare.backlog)
            self.assertFalse(spare.ws.closed)
        refused = self.refused_messages()
        self.assertEqual(refused["invalid_message"] - refused_before["invalid_message"], 3)
        self.assertEqual(refused["protocol_error"] - refused_before["protocol_error"], 1)
        spare.disconnect()
        # Oversized (> 1 MiB), binary and unmasked frames: closed by the WebSocket layer.
        big = json.dumps({"type": "heartbeat", "seq": 1, "gpus": [], "pad": "x" * (1 << 20)})
        self.assertGreater(len(big), 1 << 20)
        hostile(lambda a: a.ws.send_text(big), agent=spare, hello=True, expect_code=1009)
        hostile(lambda a: a.ws.send_binary(b"\x00\x01hello"), agent=spare, hello=True,
                expect_code=1003)
        hostile(lambda a: a.ws.send_frame(wsclient.OP_TEXT, b"{}", mask=False), agent=spare,
                expect_code=1002)
        hostile(lambda a: a.ws.send_text(big), expect_code=1009)  # before hello too
        self.assertEqual(self.snapshot(), before, "nothing changed by bad frames")

        # --- claims on another provider's machine
        # Its machine_id with a fresh key:
        a = self.agent(token)
        a.connect()
        with self.assertRaises(AgentRefused) as cm:
            a.hello(machine_id=their_mid)
        self.assertEqual(cm.exception.error["code"], "forbidden", cm.exception)
        self.assertEqual(cm.exception.code, 1008)
        # Its machine_key (the key identifies the machine):
        a = self.agent(token, machine_key=theirs.machine_key)
        a.connect()
        with self.assertRaises(AgentRefused) as cm:
            a.hello(machine_id="")
        self.assertEqual(cm.exception.error["code"], "forbidden", cm.exception)
        a.connect()
        with self.assertRaises(AgentRefused):
            a.hello(machine_id=their_mid)
        # Its own machine id with the wrong key, and its own key with another id.
        a = self.agent(token)
        a.connect()
        with self.assertRaises(AgentRefused) as cm:
            a.hello(machine_id=mid)
        self.assertEqual(cm.exception.error["code"], "forbidden", cm.exception)
        a = self.agent(token, machine_key=owned.machine_key)
        a.connect()
        with self.assertRaises(AgentRefused):
            a.hello(machine_id=spare.machine_id)
        self.assertEqual(self.snapshot(), before, "nothing changed by claims")
        # The victims are untouched: still connected, still theirs.
        d = self.machine(other, their_mid)
        self.assertTrue(d["connected_here"])
        self.assertEqual(d["provider_id"], other.id)
        self.assertEqual(d["status"], "online")
        self.assertTrue(self.machine(prov, mid)["connected_here"])
        self.assertError(prov.c.get(f"{API}/machines/{their_mid}"), 404)
        # ... and their connections still work.
        theirs.stop_heartbeats()
        self.assertTrue(theirs.heartbeat())
        theirs.start_heartbeats()
        time.sleep(0.3)
        self.assertFalse(theirs.ws.closed)

        # --- no hello within the time limit → closed
        left = HELLO_TIMEOUT_S + 4 - (time.monotonic() - silent_opened)
        err, code, reason = silent.expect_refusal(max(left, 1))
        self.assertGreaterEqual(time.monotonic() - silent_opened, HELLO_TIMEOUT_S - 1)
        self.assertEqual(code, 1008, reason)
        self.assertIsNotNone(err)
        self.assertEqual(err["code"], "protocol_error")
        self.assertEqual(self.snapshot(), before)

    def test_workloads(self):
        prov, token, _ = self.provider("Wanda")
        other, other_token, _ = self.provider("Xavi")
        agent = self.agent(token, models=(H100, H100, L4))
        agent.join()
        mid = agent.machine_id
        gpus = self.machine(prov, mid)["gpus"]
        g0, g1, g2 = (g["id"] for g in gpus)
        intruder = self.agent(other_token)
        intruder.join()

        # --- policy fields are refused by name; nothing is created
        before = self.snapshot()
        for field, value in (("binds", ["/:/host"]), ("privileged", True),
                             ("devices", ["/dev/nvidia0"]), ("network_mode", "host")):
            r = self.create_workload(prov, mid, [g0], **{field: value})
            self.assertError(r, 422, fields=[field], msg=field)
        r = self.create_workload(prov, mid, [g0], binds=[], privileged=False, devices=[],
                                 network_mode="bridge", cap_add=["SYS_ADMIN"])
        self.assertError(r, 422, fields=["binds", "privileged", "devices", "network_mode", "cap_add"])
        self.assertError(self.create_workload(prov, mid, ["gpu_nosuch"]), 422, fields=["gpu_ids[0]"])
        self.assertError(self.create_workload(prov, mid, [g0, g0]), 422, fields=["gpu_ids"])
        self.assertError(self.create_workload(prov, mid, [g0], image="Not An Image!"), 422,
                         fields=["image"])
        # The machine's own host and network are no registry (issue 24).
        for image in ("127.0.0.1:5000/gpunex-test/busybox:1", "169.254.169.254/latest:1"):
            self.assertError(self.create_workload(prov, mid, [g0], image=image), 422,
                             fields=["image"], msg=image)
        self.assertError(self.create_workload(prov, mid, [g0], memory_mb=1 << 30), 422,
                         fields=["memory_mb"])
        # Another provider can neither use this machine nor its GPUs.
        self.assertError(self.create_workload(other, mid, [g0]), 422, fields=["machine_id"])
        self.assertError(self.create_workload(other, intruder.machine_id, [g0]), 422,
                         fields=["gpu_ids[0]"])
        # A GPU the provider does not offer.
        self.assertStatus(prov.c.request("PATCH", f"{API}/machines/{mid}/gpus/{g2}",
                                         {"enabled": False}), 200)
        self.assertError(self.create_workload(prov, mid, [g2]), 422, fields=["gpu_ids[0]"])
        self.assertStatus(prov.c.request("PATCH", f"{API}/machines/{mid}/gpus/{g2}",
                                         {"enabled": True}), 200)
        after = self.snapshot()
        self.assertEqual(after["workloads"], before["workloads"])
        self.assertEqual(after["commands"], before["commands"])

        # --- create → pending → the agent gets start_workload
        r = self.create_workload(prov, mid, [g0], memory_mb=2048, env={"FOO": "bar"})
        self.assertStatus(r, 201)
        w = r.body
        wid = w["id"]
        self.assertEqual(w["state"], "pending")
        self.assertEqual(w["machine_id"], mid)
        self.assertEqual(w["gpu_ids"], [g0])
        self.assertIsNone(w["exit_code"])
        cmd = agent.expect_command("start_workload")
        cid = cmd["command_id"]
        self.assertTrue(cid)
        p = cmd["payload"]
        self.assertEqual(p["workload_id"], wid)
        self.assertEqual(p["gpu_uuids"], [agent.gpus[0]["uuid"]])
        self.assertEqual(p["image"], "gpunex-test/busybox:1")
        self.assertEqual(p["command"], ["sh", "-c", "echo hi; exit 3"])
        self.assertEqual(p["env"], {"FOO": "bar"})
        self.assertEqual(p["memory_mb"], 2048)
        for k in ("cpus", "pids_limit", "scratch_mb", "timeout_s"):
            self.assertIn(k, p)
        for k in ("binds", "privileged", "devices", "network_mode"):
            self.assertNotIn(k, p)
        self.assertEqual(self.command_rows(cid)[0][1], "sent")

        # The other provider sees nothing of it.
        self.assertError(other.c.get(f"{API}/workloads/{wid}"), 404)
        self.assertError(other.c.get(f"{API}/workloads/{wid}/logs"), 404)
        self.assertError(other.c.post(f"{API}/workloads/{wid}/stop"), 404)
        r = other.c.get(f"{API}/workloads")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["items"], [])
        intruder.assert_no_command(0.3)

        agent.send({"type": "ack", "command_id": cid})
        wait_until(lambda: self.command_rows(cid)[0][1] == "acked", 5, "acked")
        agent.send({"type": "result", "command_id": cid, "ok": True, "data": {}})
        wait_until(lambda: self.command_rows(cid)[0][1] == "done", 5, "done")
        agent.send({"type": "workload_event", "workload_id": wid, "state": "running",
                    "container_id": "c0ffee" * 4})
        w = wait_until(lambda: (lambda w: w if w["state"] == "running" else None)(
            self.workload(prov, wid)), 5, "running")
        self.assertEqual(w["container_id"], "c0ffee" * 4)
        self.assertTrue(w["started_at"])

        # The GPU is busy now: a second workload on it is refused; another GPU is fine.
        self.assertError(self.create_workload(prov, mid, [g0]), 422, fields=["gpu_ids[0]"])
        self.assertError(self.create_workload(prov, mid, [g1, g0]), 422, fields=["gpu_ids[1]"])

        # Another machine's agent cannot touch this workload.
        before = self.snapshot()
        intruder.send({"type": "workload_event", "workload_id": wid, "state": "exited",
                       "exit_code": 0})
        intruder.send({"type": "logs", "workload_id": wid, "stream": "stdout", "seq": 0,
                       "data": "forged\n"})
        intruder.send({"type": "result", "command_id": cid, "ok": False, "error": "forged"})
        intruder.heartbeat()
        time.sleep(0.5)
        self.assertEqual(self.snapshot(), before, "another machine's agent changed nothing")

        agent.send({"type": "logs", "workload_id": wid, "stream": "stdout", "seq": 0,
                    "data": "hi\n"})
        agent.send({"type": "logs", "workload_id": wid, "stream": "stdout", "seq": 0,
                    "data": "hi\n"})  # a repeat is stored once
        agent.send({"type": "workload_event", "workload_id": wid, "state": "exited",
                    "exit_code": 3, "container_id": "c0ffee" * 4})
        w = wait_until(lambda: (lambda w: w if w["state"] == "exited" else None)(
            self.workload(prov, wid)), 5, "exited")
        self.assertEqual(w["exit_code"], 3)
        self.assertEqual(w["end_party"], "customer")
        self.assertTrue(w["ended_at"])
        r = prov.c.get(f"{API}/workloads/{wid}/logs")
        self.assertStatus(r, 200)
        self.assertEqual([(x["stream"], x["seq"], x["data"]) for x in r.body["items"]],
                         [("stdout", 0, "hi\n")])
        r2 = prov.c.get(f"{API}/workloads/{wid}/logs", query={"after": r.body["next_cursor"]})
        self.assertStatus(r2, 200)
        self.assertEqual(r2.body["items"], [])
        self.assertEqual(self.workload(self.admin, wid)["state"], "exited")
        # Ended states are final.
        agent.send({"type": "workload_event", "workload_id": wid, "state": "running"})
        self.assertError(prov.c.post(f"{API}/workloads/{wid}/stop"), 409)
        time.sleep(0.3)
        self.assertEqual(self.workload(prov, wid)["state"], "exited")
        r = prov.c.get(f"{API}/workloads", query={"machine_id": mid})
        self.assertStatus(r, 200)
        self.assertEqual([x["id"] for x in r.body["items"]], [wid])

        # --- stop a running workload: stop_workload reaches the agent
        r = self.create_workload(prov, mid, [g0, g1], command=["sleep", "infinity"])
        self.assertStatus(r, 201)
        wid2 = r.body["id"]
        cmd = agent.expect_command("start_workload")
        self.assertEqual(cmd["payload"]["workload_id"], wid2)
        self.assertEqual(cmd["payload"]["gpu_uuids"], [agent.gpus[0]["uuid"], agent.gpus[1]["uuid"]])
        agent.send({"type": "ack", "command_id": cmd["command_id"]})
        agent.send({"type": "result", "command_id": cmd["command_id"], "ok": True})
        agent.send({"type": "workload_event", "workload_id": wid2, "state": "running",
                    "container_id": "beef" * 6})
        wait_until(lambda: self.workload(prov, wid2)["state"] == "running", 5, "running")
        r = prov.c.post(f"{API}/workloads/{wid2}/stop")
        self.assertStatus(r, 202)
        stop = agent.expect_command("stop_workload")
        self.assertEqual(stop["payload"]["workload_id"], wid2)
        agent.send({"type": "ack", "command_id": stop["command_id"]})
        agent.send({"type": "result", "command_id": stop["command_id"], "ok": True})
        agent.send({"type": "workload_event", "workload_id": wid2, "state": "stopped",
                    "exit_code": 137})
        w = wait_until(lambda: (lambda w: w if w["state"] == "stopped" else None)(
            self.workload(prov, wid2)), 5, "stopped")
        self.assertEqual(w["end_party"], "customer")

        # --- a start refused by the agent fails the workload
        r = self.create_workload(prov, mid, [g2])
        self.assertStatus(r, 201)
        wid3 = r.body["id"]
        cmd = agent.expect_command("start_workload")
        agent.send({"type": "result", "command_id": cmd["command_id"], "ok": False,
                    "error": "image pull failed: not found"})
        w = wait_until(lambda: (lambda w: w if w["state"] == "failed" else None)(
            self.workload(prov, wid3)), 5, "failed")
        self.assertIn("image pull failed", w["end_reason"])
        # The GPU is free again.
        self.assertStatus(self.create_workload(prov, mid, [g2]), 201)

    def test_commands_exactly_once_across_reconnects_and_restart(self):
        srv = self.srv
        prov, token, _ = self.provider("Enzo")
        agent = self.agent(token, models=(H100, H100, H100))
        agent.join()
        mid = agent.machine_id
        g0, g1, g2 = (g["id"] for g in self.machine(prov, mid)["gpus"])

        r = self.create_workload(prov, mid, [g0])
        self.assertStatus(r, 201)
        wid = r.body["id"]
        cmd = agent.expect_command("start_workload")
        cid = cmd["command_id"]
        agent.send({"type": "ack", "command_id": cid})
        wait_until(lambda: self.command_rows(cid)[0][1] == "acked", 5, "acked")
        # The agent dies before the result.
        agent.disconnect(abrupt=True)

        agent.connect()
        welcome = agent.hello()
        self.assertEqual(welcome["machine_id"], mid)
        self.assertEqual(welcome["keep_workload_ids"], [wid])
        again = agent.expect_command("start_workload")
        self.assertEqual(again["command_id"], cid)
        self.assertEqual(again["payload"], cmd["payload"])
        agent.start_heartbeats()
        agent.send({"type": "ack", "command_id": cid})
        agent.send({"type": "result", "command_id": cid, "ok": True, "data": {"container_id": "abc"}})
        wait_until(lambda: self.command_rows(cid)[0][1] == "done", 5, "done")
        rows = self.q("SELECT id, state, ok FROM agent_commands WHERE machine_id = ?", (mid,))
        self.assertEqual(rows, [(cid, "done", 1)])
        done_row = self.command_rows(cid)
        # A repeated result (even a different one) changes nothing.
        agent.send({"type": "result", "command_id": cid, "ok": False, "error": "late duplicate"})
        agent.send({"type": "ack", "command_id": cid})
        time.sleep(0.5)
        self.assertEqual(self.command_rows(cid), done_row)
        self.assertEqual(self.workload(prov, wid)["state"], "pending")
        agent.send({"type": "workload_event", "workload_id": wid, "state": "running",
                    "container_id": "abc"})
        wait_until(lambda: self.workload(prov, wid)["state"] == "running", 5, "running")
        # A done command is not sent again on the next connect.
        agent.disconnect()
        agent.connect()
        agent.hello(containers=[{"container_id": "abc", "workload_id": wid, "state": "running"}])
        agent.start_heartbeats()
        agent.assert_no_command(1.0)

        # --- a command pending when gpunexd is SIGKILLed is delivered after the restart
        r = self.create_workload(prov, mid, [g1])
        self.assertStatus(r, 201)
        wid2 = r.body["id"]
        cmd2 = agent.expect_command("start_workload")
        self.assertEqual(cmd2["payload"]["workload_id"], wid2)
        srv.kill()
        agent.stop_heartbeats()
        code, _, _ = agent.ws.wait_closed(5)
        self.assertIsNone(code, "a killed server sends no close frame")
        srv.start()
        # Queued while the agent is away.
        r = self.create_workload(prov, mid, [g2])
        self.assertStatus(r, 201)
        wid3 = r.body["id"]
        agent.connect()
        welcome = agent.hello(containers=[{"container_id": "abc", "workload_id": wid,
                                           "state": "running"}])
        self.assertEqual(welcome["machine_id"], mid)
        self.assertEqual(sorted(welcome["keep_workload_ids"]), sorted([wid, wid2, wid3]))
        agent.start_heartbeats()
        got = [agent.expect_command("start_workload"), agent.expect_command("start_workload")]
        self.assertEqual(sorted(c["payload"]["workload_id"] for c in got), sorted([wid2, wid3]))
        self.assertIn(cmd2["command_id"], [c["command_id"] for c in got])
        for c in got:
            agent.send({"type": "ack", "command_id": c["command_id"]})
            agent.send({"type": "result", "command_id": c["command_id"], "ok": True})
        wait_until(lambda: all(r[1] == "done" for r in self.q(
            "SELECT id, state FROM agent_commands WHERE machine_id = ?", (mid,))), 5, "all done")
        rows = self.q("SELECT kind, state, ok FROM agent_commands WHERE machine_id = ? ORDER BY id",
                      (mid,))
        self.assertEqual(rows, [("start_workload", "done", 1)] * 3)
        self.assertEqual(self.workload(prov, wid)["state"], "running")
        agent.assert_no_command(0.5)
        self.assertEqual(len(self.q("SELECT id FROM machines")), 1)

    def test_reconcile_on_hello(self):
        prov, token, _ = self.provider("Remy")
        agent = self.agent(token, models=(H100, H100, H100, H100))
        agent.join()
        mid = agent.machine_id
        gids = [g["id"] for g in self.machine(prov, mid)["gpus"]]

        def start(gid, state):
            r = self.create_workload(prov, mid, [gid])
            self.assertStatus(r, 201)
            wid = r.body["id"]
            cmd = agent.expect_command("start_workload")
            self.assertEqual(cmd["payload"]["workload_id"], wid)
            agent.send({"type": "ack", "command_id": cmd["command_id"]})
            if state != "pending":
                agent.send({"type": "result", "command_id": cmd["command_id"], "ok": True})
                agent.send({"type": "workload_event", "workload_id": wid, "state": state,
                            "container_id": "ctr-" + wid})
                wait_until(lambda: self.workload(prov, wid)["state"] == state, 5, state)
            return wid

        lost = start(gids[0], "running")         # its container is gone
        pending = start(gids[1], "pending")      # never started: kept
        alive = start(gids[2], "running")        # reported: kept
        lost_starting = start(gids[3], "starting")

        agent.disconnect(abrupt=True)
        agent.connect()
        welcome = agent.hello(containers=[
            {"container_id": "ctr-" + alive, "workload_id": alive, "state": "running"},
            {"container_id": "stray", "workload_id": "wl_unknown", "state": "running"},
            {"container_id": "unlabelled", "workload_id": "", "state": "exited"}])
        agent.start_heartbeats()
        self.assertEqual(sorted(welcome["keep_workload_ids"]), sorted([pending, alive]))

        # Lost only after a grace period in which the agent could still report their end.
        self.assertEqual(self.workload(prov, lost)["state"], "running")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(
                self.workload(prov, wid)["state"] != "failed" for wid in (lost, lost_starting)):
            time.sleep(0.5)
        for wid in (lost, lost_starting):
            w = self.workload(prov, wid)
            self.assertEqual(w["state"], "failed", w)
            self.assertEqual(w["end_party"], "provider", w)
            self.assertEqual(w["end_reason"], "container lost", w)
            self.assertTrue(w["ended_at"])
        self.assertEqual(self.workload(prov, alive)["state"], "running")
        self.assertEqual(self.workload(prov, pending)["state"], "pending")
        self.assertEqual(len(self.q("SELECT id FROM workloads")), 4, "no workload from a stray")
        # The pending one's command is delivered again; the lost one's GPU is free.
        cmd = agent.expect_command("start_workload")
        self.assertEqual(cmd["payload"]["workload_id"], pending)
        agent.assert_no_command(0.5)
        self.assertStatus(self.create_workload(prov, mid, [gids[0]]), 201)
        # A late event for a lost workload does not bring it back.
        agent.send({"type": "workload_event", "workload_id": lost, "state": "running"})
        time.sleep(0.3)
        self.assertEqual(self.workload(prov, lost)["state"], "failed")

    def test_refused_connection_handles_nothing_more(self):
        """Before the hello, after the platform refuses a message (error + close), the
        messages that the agent had already sent on that connection are not acted upon:
        "nothing changed". After it, a bad message is refused alone (issue 24): the ones
        sent after it are acted upon on the same connection."""
        prov, token, _ = self.provider("Nora")

        pad = [0] * 300_000  # slow to parse, yet under 1 MiB

        def pipelined(agent, first, then):
            # A slow-to-parse bad message (an unknown field "pad") and, in the same TCP
            # write, a valid one: the valid one is read before the bad one is handled.
            ws = agent.ws
            ws.send_raw(ws.encode_frame(wsclient.OP_TEXT, json.dumps(first, separators=(",", ":")))
                        + ws.encode_frame(wsclient.OP_TEXT, json.dumps(then)))
            return agent.expect_refusal(8)

        with self.subTest("before hello"):
            # Before hello: a bad hello then a good one → no machine.
            for _ in range(3):
                a = self.agent(token)
                a.connect()
                err, code, _ = pipelined(a, dict(a.hello_msg(), pad=pad), a.hello_msg())
                self.assertEqual((err["code"], code), ("invalid_message", 1008))
            time.sleep(0.5)
            self.assertEqual(self.q("SELECT id, status FROM machines"), [],
                             "a refused connection registered a machine")

        with self.subTest("after hello"):
            # After hello: a bad message then a workload event → the bad one alone is
            # refused (its log line is not stored), the event is applied, the connection
            # stays up.
            b = self.agent(token, models=(H100, H100, H100))
            b.join(heartbeats=False)
            wids = []
            for i in range(3):
                gid = self.machine(prov, b.machine_id)["gpus"][i]["id"]
                r = self.create_workload(prov, b.machine_id, [gid])
                self.assertStatus(r, 201)
                wid = r.body["id"]
                wids.append(wid)
                b.expect_command("start_workload")
                ws = b.ws
                ws.send_raw(ws.encode_frame(wsclient.OP_TEXT, json.dumps(
                    {"type": "logs", "workload_id": wid, "stream": "stdout", "seq": 0,
                     "data": "ok", "pad": pad}, separators=(",", ":")))
                    + ws.encode_frame(wsclient.OP_TEXT, json.dumps(
                        {"type": "workload_event", "workload_id": wid, "state": "running",
                         "container_id": "sneaky"})))
            wait_until(lambda: all(self.workload(prov, w)["state"] == "running" for w in wids),
                       10, "the events after the refused messages applied")
            self.assertEqual([self.workload(prov, w)["container_id"] for w in wids],
                             ["sneaky"] * 3)
            self.assertEqual(self.q("SELECT COUNT(*) FROM workload_logs")[0][0], 0)
            self.assertFalse(b.ws.closed)
            self.assertFalse([m for m in b.backlog if m["type"] == "error"], b.backlog)

    def test_command_reaches_the_connection_that_took_over(self):
        """A command sent on a connection that is then replaced by a new connection of the
        same machine (its TCP lingering after a network change) is sent again on the new
        one: nothing is lost."""
        prov, token, _ = self.provider("Tom")
        agent = self.agent(token)
        agent.join()
        mid = agent.machine_id
        gid = self.machine(prov, mid)["gpus"][0]["id"]
        old = agent.ws
        agent.stop_heartbeats()
        # The new connection is open (not yet said hello) when the workload is created.
        new = wsclient.connect(self.srv.port, CONNECT_PATH,
                               headers={"Authorization": f"Bearer {token}"})
        agent.all_ws.append(new)
        time.sleep(0.2)
        r = self.create_workload(prov, mid, [gid])
        self.assertStatus(r, 201)
        wid = r.body["id"]
        first = agent.expect_command("start_workload")  # on the old connection, never answered
        self.assertEqual(first["payload"]["workload_id"], wid)
        agent.ws, agent.backlog = new, []
        welcome = agent.hello()
        self.assertEqual(welcome["machine_id"], mid)
        self.assertEqual(welcome["keep_workload_ids"], [wid])
        code, _, seen = old.wait_closed(5)
        self.assertEqual(code, 1008)
        agent.start_heartbeats()
        again = agent.expect_command("start_workload", timeout=4)
        self.assertEqual(again["command_id"], first["command_id"])


class EmulatedRefusedMixin:
    """allow_emulated_gpus = false: emulated GPUs are refused and no machine is made."""

    ROOT_TOML = "allow_emulated_gpus = false"
    EXTRA_TOML = FLEET_TOML
    SMTP = False

    def test_emulated_gpus_refused(self):
        admin = self.srv.admin()
        prov, token, _ = provider_with_agent_token(self.srv, admin, name="Emil")
        for kw in ({}, {"emulated": True, "gpu_emulated": False},
                   {"emulated": False, "gpu_emulated": True}):
            a = FakeAgent(self.srv, token, **kw)
            self.addCleanup(a.cleanup)
            a.connect()
            with self.assertRaises(AgentRefused, msg=str(kw)) as cm:
                a.hello()
            self.assertEqual(cm.exception.error["code"], "refused", cm.exception)
            self.assertIn("emulated", cm.exception.error["message"])
            self.assertEqual(cm.exception.code, 1008)
        self.assertEqual(self.srv.backend.query("SELECT COUNT(*) FROM machines")[0][0], 0)
        self.assertEqual(self.srv.backend.query("SELECT COUNT(*) FROM machine_gpus")[0][0], 0)
        r = prov.c.get(f"{API}/machines")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["items"], [])
        # Real (non-emulated) GPUs are accepted.
        a = FakeAgent(self.srv, token, emulated=False)
        self.addCleanup(a.cleanup)
        a.connect()
        try:
            welcome = a.hello()
            self.assertTrue(welcome["machine_id"])
            m = prov.c.get(f"{API}/machines/{welcome['machine_id']}").body
            self.assertEqual(m["status"], "online")
            self.assertFalse(m["emulated"])
            self.assertTrue(all(g["emulated"] is False for g in m["gpus"]))
        finally:
            a.disconnect()


class AgentChannelSqliteTest(AgentChannelMixin, ServerTestCase):
    BACKEND = "sqlite"


class AgentChannelPostgresTest(AgentChannelMixin, ServerTestCase):
    BACKEND = "postgresql"


class MachineCapTest(ServerTestCase):
    """fleet.max_machines_per_provider = 2: a third machine's hello is refused with an error
    that names the cap, and nothing of it is stored; the provider's machines still
    reconnect, and another provider is not held back."""

    SMTP = False
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = FLEET_TOML + "max_machines_per_provider = 2\n"

    def test_a_machine_beyond_the_cap_is_refused(self):
        admin = self.srv.admin()
        _, token, _ = provider_with_agent_token(self.srv, admin, name="Capped")
        agents = [FakeAgent(self.srv, token) for _ in range(3)]
        self.addCleanup(lambda: [a.cleanup() for a in agents])
        agents[0].join(heartbeats=False)
        agents[1].join(heartbeats=False)
        agents[2].connect()
        with self.assertRaises(AgentRefused) as refused:
            agents[2].hello()
        self.assertEqual(refused.exception.error["code"], "refused")
        self.assertIn("already has 2 machines", refused.exception.error["message"])
        self.assertIn("fleet.max_machines_per_provider", refused.exception.error["message"])
        self.assertEqual(refused.exception.code, 1008)
        rows = self.srv.backend.query("SELECT COUNT(*) FROM machines")
        self.assertEqual(rows[0][0], 2)
        agents[0].connect()
        agents[0].hello()
        _, other_token, _ = provider_with_agent_token(self.srv, admin, name="Other")
        other = FakeAgent(self.srv, other_token)
        self.addCleanup(other.cleanup)
        other.join(heartbeats=False)


class EmulatedRefusedSqliteTest(EmulatedRefusedMixin, ServerTestCase):
    BACKEND = "sqlite"


class EmulatedRefusedPostgresTest(EmulatedRefusedMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
