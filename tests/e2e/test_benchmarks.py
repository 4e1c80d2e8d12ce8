"""Automatic benchmarks (BEN-1..6) end to end.

With a fake agent (the protocol driven by hand, on SQLite and PostgreSQL):
- first connect → a run_benchmark command for every GPU, with the machine phases; the GPUs
  are not listed until it passes ("awaiting its first benchmark") and cannot be rented
  while they are benchmarked;
- a passing result → scores (docs/performance-score.md), GPUs listed, a dashboard
  notification;
- the periodic run (interval_s) skips the GPU that is rented and the machine phases;
- a GPU below its thresholds is delisted with the reason; the provider gets a dashboard
  notification and an email naming what failed and what to check;
- a re-run the provider asks for that passes lists it again (notification and email);
- malformed results and error results change no listing and make the GPUs due again.

With the real gpunex-agent and EMULATED GPUs (--emulate-perf): the whole loop through the
real network and storage benchmarks: 0.5 → delisted, restart at 1.0 → re-run → relisted.
"""

import math
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import API, ServerTestCase, provider_with_agent_token, wait_until
from test_agent_channel import L4, FakeAgent

BENCH_TOML = """
[fleet]
heartbeat_interval_s = 1
offline_after_s = 3
hello_timeout_s = 3

[benchmarks]
tick_ms = 100
interval_s = {interval}
retry_after_s = 600
sustain_s = 0
storage_file_mb = 8
storage_seconds = 1
network_mb = 4
pings = 3

# The test machine's own disk and loopback speed depend on what else runs at the time: only
# the GPU figures decide pass or fail here (the fake agent reports fixed machine figures).
[benchmarks.thresholds]
download_mbit_s = 0
upload_mbit_s = 0
rtt_p50_ms = 100000
seq_read_mb_s = 0
seq_write_mb_s = 0
rand_read_iops = 0
"""

L4_REF = {"fp32": 30.3, "fp16": 30.3, "tensor": 121.0, "tf32": 60.0, "mem": 300.0}
A100_REF = {"fp32": 19.5, "fp16": 78.0, "tensor": 312.0, "tf32": 156.0, "mem": 2039.0}
WEIGHTS = {"fp32": 0.15, "fp16": 0.05, "tensor": 0.35, "tf32": 0.10, "mem": 0.35}


def l4_figures(factor=0.9, mem_factor=None, thermal=0.0):
    mem = L4_REF["mem"] * (factor if mem_factor is None else mem_factor)
    return {"tool": "gpunex-gpubench", "version": "1", "emulated": True,
            "device": {"pcie_gen": 4, "pcie_width": 16},
            "compute": {"fp32_tflops": L4_REF["fp32"] * factor, "fp16_tflops": L4_REF["fp16"] * factor,
                        "fp16_tensor_tflops": L4_REF["tensor"] * factor,
                        "bf16_tensor_tflops": L4_REF["tensor"] * factor,
                        "tf32_tensor_tflops": L4_REF["tf32"] * factor},
            "memory": {"read_gbps": mem, "write_gbps": mem, "copy_gbps": mem, "triad_gbps": mem},
            "sustained": {"seconds": 60, "mean_tflops": 100, "min_over_median": 0.98, "cv": 0.01,
                          "thermal_throttle_fraction": thermal, "power_throttle_fraction": 0.0,
                          "max_temperature_c": 70, "mean_power_w": 70},
            "sanity": {"ok": True, "failures": []}}


def expected_score(factor, mem_factor):
    log = 0.0
    for k, w in WEIGHTS.items():
        f = mem_factor if k == "mem" else factor
        log += w * math.log(L4_REF[k] * f / A100_REF[k])
    return 100 * math.exp(log)


GOOD_NETWORK = {"rtt_p50_ms": 1.0, "rtt_p99_ms": 3.0, "download_mbit_s": 900.0, "upload_mbit_s": 800.0}
GOOD_STORAGE = {"seq_read_mb_s": 1500.0, "seq_write_mb_s": 1200.0, "rand_read_iops": 90000.0,
                "rand_read_p50_us": 90.0, "rand_read_p99_us": 400.0, "direct_io": True}


class BenchmarksFakeAgentMixin:
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = BENCH_TOML.format(interval=6)

    def setUp(self):
        super().setUp()
        self.admin = self.srv.admin()
        self.agents = []
        self.addCleanup(lambda: [a.cleanup() for a in self.agents])

    def join_agent(self, models=(L4,)):
        """A provider "Bench" whose fake agent with `models` has joined: (provider, agent, machine id)."""
        prov, token, _ = provider_with_agent_token(self.srv, self.admin, name="Bench")
        agent = FakeAgent(self.srv, token, models=models)
        self.agents.append(agent)
        agent.join()
        return prov, agent, agent.machine_id

    def q(self, sql, params=()):
        return self.srv.backend.query(sql, params)

    def machine(self, user, mid):
        r = user.c.get(f"{API}/machines/{mid}")
        self.assertStatus(r, 200)
        return r.body

    def runs(self, user, mid):
        r = user.c.get(f"{API}/machines/{mid}/benchmarks")
        self.assertStatus(r, 200)
        return r.body["items"]

    def answer(self, agent, cmd, figures_by_uuid, network=GOOD_NETWORK, storage=GOOD_STORAGE, ok=True):
        agent.send({"type": "ack", "command_id": cmd["command_id"]})
        gpus = []
        for g in cmd["payload"]["gpus"]:
            f = figures_by_uuid.get(g["uuid"])
            gpus.append({"uuid": g["uuid"], "ok": True, "result": f} if isinstance(f, dict)
                        else {"uuid": g["uuid"], "ok": False, "error": f or "no GPU"})
        data = {"benchmark_id": cmd["payload"]["benchmark_id"], "emulated": True, "gpus": gpus}
        if cmd["payload"]["machine_phases"]:
            data["network"] = network
            data["storage"] = storage
        msg = {"type": "result", "command_id": cmd["command_id"], "ok": ok, "data": data}
        if not ok:
            msg["error"] = "docker engine unreachable"
        agent.send(msg)

    def wait_run_state(self, user, mid, run_id, states, timeout=5):
        return wait_until(lambda: next((r for r in self.runs(user, mid)
                                        if r["id"] == run_id and r["state"] in states), None),
                          timeout, f"run {run_id} in {states}")

    def notifications(self, user):
        r = user.c.get(f"{API}/notifications")
        self.assertStatus(r, 200)
        return r.body["items"]

    def test_first_connect_periodic_rented_delist_relist(self):
        prov, agent, mid = self.join_agent(models=(L4, L4))
        other, _, _ = provider_with_agent_token(self.srv, self.admin, name="Other")
        u0, u1 = agent.gpus[0]["uuid"], agent.gpus[1]["uuid"]

        # --- first connect: one run on both GPUs, with the machine phases
        cmd = agent.expect_command("run_benchmark", timeout=5)
        p = cmd["payload"]
        self.assertEqual(sorted(g["uuid"] for g in p["gpus"]), sorted([u0, u1]))
        self.assertTrue(p["machine_phases"])
        self.assertEqual((p["sustain_s"], p["storage"]["file_mb"], p["network"]["pings"]), (0, 8, 3))
        runs = self.runs(prov, mid)
        self.assertEqual([(r["reason"], r["state"]) for r in runs], [("first_connect", "running")])
        m = self.machine(prov, mid)
        for g in m["gpus"]:
            self.assertEqual((g["listed"], g["delisted_reason"], g["performance_score"]),
                             (False, "awaiting its first benchmark", None))
        gid0 = [g["id"] for g in m["gpus"] if g["uuid"] == u0][0]
        gid1 = [g["id"] for g in m["gpus"] if g["uuid"] == u1][0]
        r = prov.c.post(f"{API}/workloads", {"machine_id": mid, "gpu_ids": [gid0], "image": "busybox:1"})
        self.assertError(r, 422, fields=["gpu_ids[0]"])
        self.assertIn("benchmarked", r.body["error"]["fields"]["gpu_ids[0]"])
        # Only the owner (and admins) see runs or start them.
        self.assertError(other.c.get(f"{API}/machines/{mid}/benchmarks"), 404)
        self.assertError(other.c.post(f"{API}/machines/{mid}/benchmarks", {}), 404)
        self.assertError(prov.c.post(f"{API}/machines/{mid}/benchmarks", {}), 409)  # one at a time
        agent.assert_no_command(0.5)

        # --- a passing result: scores, listed, a dashboard notification (no email)
        self.answer(agent, cmd, {u0: l4_figures(0.9), u1: l4_figures(0.9)})
        run = self.wait_run_state(prov, mid, runs[0]["id"], ("passed",))
        self.assertEqual(run["network"]["download_mbit_s"], 900.0)
        self.assertEqual(run["storage"]["rand_read_iops"], 90000.0)
        for g in run["gpus"]:
            self.assertAlmostEqual(g["performance_score"], expected_score(0.9, 0.9), places=6)
            self.assertEqual(g["failures"], [])
            self.assertEqual(g["reference"]["memory_gbps"], 300.0)
            self.assertAlmostEqual(g["thresholds"]["memory_triad_gbps"], 210.0)
        m = self.machine(prov, mid)
        for g in m["gpus"]:
            self.assertIs(g["listed"], True)
            self.assertIsNone(g["delisted_reason"])
            self.assertAlmostEqual(g["performance_score"], expected_score(0.9, 0.9), places=6)
            self.assertIsNotNone(g["last_benchmark_at"])
        self.assertIn("benchmark.listed", [n["kind"] for n in self.notifications(prov)])
        self.assertEqual(self.sink.for_addr(prov.email, links=False), [])

        # --- rent GPU 0; the periodic run leaves it and the machine phases out
        r = prov.c.post(f"{API}/workloads", {"machine_id": mid, "gpu_ids": [gid0], "image": "busybox:1",
                                             "command": ["sleep", "1000"]})
        self.assertStatus(r, 201)
        start = agent.expect_command("start_workload")
        wid = start["payload"]["workload_id"]
        agent.send({"type": "ack", "command_id": start["command_id"]})
        agent.send({"type": "result", "command_id": start["command_id"], "ok": True,
                    "data": {"workload_id": wid}})
        agent.send({"type": "workload_event", "workload_id": wid, "state": "running",
                    "container_id": "c1", "reason": "", "exit_code": None})
        cmd = agent.expect_command("run_benchmark", timeout=12)
        self.assertEqual([g["uuid"] for g in cmd["payload"]["gpus"]], [u1])
        self.assertFalse(cmd["payload"]["machine_phases"])
        periodic = self.runs(prov, mid)[0]
        self.assertEqual((periodic["reason"], periodic["state"]), ("periodic", "running"))

        # --- GPU 1 comes back slow: delisted with the reason, notification and email
        self.answer(agent, cmd, {u1: l4_figures(0.9, mem_factor=0.5, thermal=0.6)})
        run = self.wait_run_state(prov, mid, periodic["id"], ("failed",))
        fails = {f["metric"] for f in run["gpus"][0]["failures"]}
        self.assertEqual(fails, {"memory_triad_gbps", "thermal_throttle_fraction"})
        g1 = [g for g in self.machine(prov, mid)["gpus"] if g["id"] == gid1][0]
        self.assertIs(g1["listed"], False)
        self.assertTrue(g1["delisted_reason"].startswith("benchmark: memory_triad_gbps 150 < 210 required"),
                        g1["delisted_reason"])
        self.assertAlmostEqual(g1["performance_score"], expected_score(0.9, 0.5), places=6)
        g0 = [g for g in self.machine(prov, mid)["gpus"] if g["id"] == gid0][0]
        self.assertIs(g0["listed"], True, "the rented GPU keeps its listing")
        n = [n for n in self.notifications(prov) if n["kind"] == "benchmark.delisted"]
        self.assertEqual(len(n), 1)
        self.assertIn("airflow", n[0]["body"])
        mails = self.sink.wait_for_addr(prov.email, 1, links=False)
        self.assertIn("delisted", mails[0].subject)
        self.assertIn("Memory bandwidth is low", mails[0].body)
        self.assertIn("memory_triad_gbps 150 < 210 required", mails[0].body)

        # --- the provider asks for a re-run; it passes → listed again, told by email
        r = prov.c.post(f"{API}/machines/{mid}/benchmarks", {})
        self.assertStatus(r, 202)
        self.assertEqual((r.body["reason"], r.body["state"]), ("requested", "running"))
        self.assertEqual([g["gpu_id"] for g in r.body["gpus"]], [gid1], "the rented GPU is left out")
        cmd = agent.expect_command("run_benchmark")
        self.answer(agent, cmd, {u1: l4_figures(0.95)})
        self.wait_run_state(prov, mid, r.body["id"], ("passed",))
        g1 = [g for g in self.machine(prov, mid)["gpus"] if g["id"] == gid1][0]
        self.assertEqual((g1["listed"], g1["delisted_reason"]), (True, None))
        mails = self.sink.wait_for_addr(prov.email, 2, links=False)
        self.assertIn("listed again", mails[1].subject)

        # --- malformed figures and an error result: no listing change, due again later
        listing = ("SELECT g.id, g.listing_state, g.listing_note, s.performance_score FROM machine_gpus g "
                   "LEFT JOIN gpu_benchmark_status s ON s.gpu_id = g.id ORDER BY g.id")
        before = self.q(listing)
        r = prov.c.post(f"{API}/machines/{mid}/benchmarks", {})
        self.assertStatus(r, 202)
        cmd = agent.expect_command("run_benchmark")
        bad = l4_figures(0.9)
        bad["compute"]["bf16_tensor_tflops"] = -1
        self.answer(agent, cmd, {u1: bad})
        run = self.wait_run_state(prov, mid, r.body["id"], ("error",))
        self.assertIn("bf16_tensor_tflops", run["gpus"][0]["error"])
        r = prov.c.post(f"{API}/machines/{mid}/benchmarks", {})
        self.assertStatus(r, 202)
        cmd = agent.expect_command("run_benchmark")
        self.answer(agent, cmd, {}, ok=False)
        run = self.wait_run_state(prov, mid, r.body["id"], ("error",))
        self.assertIn("docker engine unreachable", run["error"])
        self.assertEqual(self.q(listing), before)
        due = self.q("SELECT due_at FROM gpu_benchmark_status WHERE gpu_id = ?", (gid1,))[0][0]
        self.assertIsNotNone(due)
        # The history keeps every run, newest first.
        self.assertEqual([r["reason"] for r in self.runs(prov, mid)],
                         ["requested", "requested", "requested", "periodic", "first_connect"])
        page = prov.c.get(f"{API}/machines/{mid}/benchmarks?limit=2")
        self.assertEqual(len(page.body["items"]), 2)
        rest = prov.c.get(f"{API}/machines/{mid}/benchmarks?limit=10&cursor={page.body['next_cursor']}")
        self.assertEqual(len(rest.body["items"]), 3)

    def test_figures_no_gpu_of_the_model_reaches_delist_as_implausible(self):
        """An agent answering run_benchmark with 1000 × the reference figures (as an
        outside probe did): the GPU is not listed, the failure says implausible, and no
        score is shown for it."""
        prov, agent, mid = self.join_agent(models=(L4, L4))
        u0, u1 = agent.gpus[0]["uuid"], agent.gpus[1]["uuid"]
        cmd = agent.expect_command("run_benchmark", timeout=5)
        run_id = self.runs(prov, mid)[0]["id"]
        self.answer(agent, cmd, {u0: l4_figures(0.9), u1: l4_figures(1000)})
        run = self.wait_run_state(prov, mid, run_id, ("failed",))
        bad = [g for g in run["gpus"] if g["uuid"] == u1][0]
        self.assertEqual(bad["state"], "failed")
        self.assertIsNone(bad["performance_score"])
        self.assertIn("implausible.fp32_tflops", [f["metric"] for f in bad["failures"]])
        good = [g for g in run["gpus"] if g["uuid"] == u0][0]
        self.assertEqual(good["state"], "passed")
        gpus = {g["uuid"]: g for g in self.machine(prov, mid)["gpus"]}
        self.assertIs(gpus[u1]["listed"], False)
        self.assertEqual(gpus[u1]["listing_state"], "failed_benchmark")
        self.assertIn("plausible", gpus[u1]["delisted_reason"])
        self.assertIsNone(gpus[u1]["performance_score"])
        self.assertIs(gpus[u0]["listed"], True)

    def test_offline_machine_and_inventory_change(self):
        prov, agent, mid = self.join_agent()
        cmd = agent.expect_command("run_benchmark")
        self.answer(agent, cmd, {agent.gpus[0]["uuid"]: l4_figures(1.0)})
        wait_until(lambda: self.runs(prov, mid)[0]["state"] == "passed", 5, "first run passed")
        # A driver update (a changed inventory) → a run on the next connect.
        agent.disconnect()
        wait_until(lambda: self.machine(prov, mid)["status"] == "offline", 8, "offline")
        self.assertError(prov.c.post(f"{API}/machines/{mid}/benchmarks", {}), 409)
        agent.gpus[0]["driver_version"] = "560.28.03"
        agent.join()
        cmd = agent.expect_command("run_benchmark", timeout=5)
        self.assertEqual(self.runs(prov, mid)[0]["reason"], "hardware_change")


    def test_a_run_survives_a_platform_crash_and_counts_once(self):
        prov, agent, mid = self.join_agent()
        cmd = agent.expect_command("run_benchmark")
        agent.send({"type": "ack", "command_id": cmd["command_id"]})
        self.srv.kill()
        agent.stop_heartbeats()
        agent.ws.wait_closed(5)
        self.srv.start()
        agent.join()
        again = agent.expect_command("run_benchmark", timeout=5)
        self.assertEqual(again["command_id"], cmd["command_id"], "the same command, re-sent")
        figures = {agent.gpus[0]["uuid"]: l4_figures(0.9)}
        self.answer(agent, again, figures)
        self.answer(agent, again, figures)  # a repeated result changes nothing
        wait_until(lambda: self.runs(prov, mid)[0]["state"] == "passed", 5, "passed")
        self.assertEqual(len(self.runs(prov, mid)), 1)
        self.assertEqual(len(self.q("SELECT run_id FROM benchmark_gpus")), 1)
        listed = [n for n in self.notifications(prov) if n["kind"] == "benchmark.listed"]
        self.assertEqual(len(listed), 1)
        agent.assert_no_command(0.5)


class BenchmarksFakeAgentSqlite(BenchmarksFakeAgentMixin, ServerTestCase):
    BACKEND = "sqlite"


class BenchmarksFakeAgentPostgres(BenchmarksFakeAgentMixin, ServerTestCase):
    BACKEND = "postgresql"


AGENT = os.environ.get("GPUNEX_AGENT", "")


@unittest.skipUnless(AGENT, "GPUNEX_AGENT (the gpunex-agent binary) is not set")
class BenchmarksRealAgent(ServerTestCase):
    """The real agent with EMULATED GPUs: real network and storage phases."""

    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = BENCH_TOML.format(interval=3600)

    def start_agent(self, token, state_dir, perf):
        log = open(os.path.join(state_dir, f"agent-{perf}.log"), "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNEX_")}
        env.update({"GPUNEX_PLATFORM_URL": f"http://127.0.0.1:{self.srv.port}", "GPUNEX_TOKEN": token,
                    "GPUNEX_STATE_DIR": state_dir,
                    "GPUNEX_DOCKER_SOCKET": os.path.join(state_dir, "no-docker.sock")})
        p = subprocess.Popen([AGENT, "run", "--emulate-gpus", "l4-24gb:1", "--emulate-perf", str(perf)],
                             env=env, stdout=log, stderr=log)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait(), log.close()))
        return p

    def test_emulated_perf_drives_delisting_and_relisting(self):
        admin = self.srv.admin()
        prov, token, _ = provider_with_agent_token(self.srv, admin, name="Emu")
        state_dir = tempfile.mkdtemp(prefix="gpunex-agent-")
        self.addCleanup(shutil.rmtree, state_dir, True)
        agent = self.start_agent(token, state_dir, 0.5)

        def machine():
            items = prov.c.get(f"{API}/machines").body["items"]
            return items[0] if items else None

        m = wait_until(machine, 10, "the machine")
        mid = m["id"]

        def finished():
            runs = prov.c.get(f"{API}/machines/{mid}/benchmarks").body["items"]
            return runs[0] if runs and runs[0]["state"] != "running" else None

        run = wait_until(finished, 30, "the first run")
        self.assertEqual((run["reason"], run["state"], run["emulated"]), ("first_connect", "failed", True))
        # The real network and storage phases ran and measured something.
        self.assertGreater(run["network"]["download_mbit_s"], 0, run)
        self.assertGreater(run["network"]["upload_mbit_s"], 0, run)
        self.assertGreater(run["network"]["rtt_p50_ms"], 0, run)
        self.assertGreater(run["storage"]["rand_read_iops"], 0, run)
        self.assertEqual([f for f in os.listdir(state_dir) if "bench" in f.lower()], [],
                         "the storage benchmark cleans up after itself")
        g = run["gpus"][0]
        self.assertAlmostEqual(g["figures"]["compute"]["bf16_tensor_tflops"], 60.5)
        self.assertIn("bf16_tensor_tflops", {f["metric"] for f in g["failures"]})
        gpu = machine()["gpus"][0]
        self.assertIs(gpu["listed"], False)
        self.assertTrue(gpu["delisted_reason"].startswith("benchmark: "))
        self.sink.wait_for_addr(prov.email, 1, links=False)

        # The provider fixes the machine (here: restarts the agent at full speed) and asks
        # for a re-run.
        agent.terminate()
        agent.wait(10)
        self.start_agent(token, state_dir, 1.0)
        wait_until(lambda: machine()["status"] == "online" and machine()["last_seen"], 10, "online again")
        time.sleep(1.5)  # the old session's Offline may still be settling
        r = wait_until(lambda: (lambda r: r if r.status == 202 else None)(
            prov.c.post(f"{API}/machines/{mid}/benchmarks", {})), 10, "a re-run accepted")
        run = wait_until(lambda: (lambda x: x if x["id"] == r.body["id"] and x["state"] != "running" else None)(
            prov.c.get(f"{API}/machines/{mid}/benchmarks").body["items"][0]), 30, "the re-run")
        self.assertEqual(run["state"], "passed", run)
        self.assertAlmostEqual(run["gpus"][0]["performance_score"], expected_score(1.0, 1.0), places=3)
        gpu = machine()["gpus"][0]
        self.assertEqual((gpu["listed"], gpu["delisted_reason"]), (True, None))
        mails = self.sink.wait_for_addr(prov.email, 2, links=False)
        self.assertIn("listed again", mails[1].subject)


if __name__ == "__main__":
    unittest.main()
