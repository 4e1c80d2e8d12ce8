"""Network isolation of workloads (issue 24) end to end: the real gpunex-agent with EMULATED
GPUs against a real gpunexd, its workloads in a private Docker engine
(dockerenv.TestDockerd, in a network namespace of its own) that either isolates workloads
or does not. The agent checks with throw-away containers whether a workload reaches another
workload's container or a listener on the host (src/agent/isolation/isolation_check.h).

- an engine that does not isolate (dockerd --iptables=false with IP forwarding on, what an
  outside probe found): the check finds both reached; the machine is Online but none of
  its GPUs is listed (listing_state network_not_isolated, the note naming what was reached
  and the fix; host.network_isolation says what the agent found), the marketplace shows
  nothing of it, a workload on it is refused (422 naming machine_id) and no container is
  made for it; `gpunex-agent self-test` fails with the fix; the checks leave nothing in the
  engine;
- an engine with Docker's iptables rules but nothing that keeps workloads from the host's
  services: the check finds the host reached (and only the host), and says how to fix it;
- an engine that isolates as docs/trust.md asks (Docker's iptables rules and
  `iptables -I INPUT -i gpxwl+ -j REJECT`): the check passes, the machine is listed and
  offered, a workload runs on it, and self-test passes; when the engine stops answering
  the agent (its socket gone), the GPUs leave the marketplace as engine_down until it
  answers again.

Needs root, dockerd (docker.io), iproute2, iptables and busybox-static (skips with the
reason otherwise); GPUNEX_AGENT names the agent binary.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import dockerenv
from harness import (API, RealAgent, ServerTestCase, provider_with_agent_token, set_prices,
                     wait_until)

BUSYBOX_REF = "gpunex-test/busybox:1"
L4 = "l4-24gb"
GPUS = f"{L4}:2"

FLEET_TOML = """
[fleet]
heartbeat_interval_s = 1
offline_after_s = 4
"""

NOT_ISOLATED_NOTE = (
    "network not isolated: a workload can reach another workload and the host's services; "
    "fix: turn Docker's iptables rules on (\"iptables\": true, the default); run iptables -I "
    "INPUT -i gpxwl+ -j REJECT on the host; then restart gpunex-agent (docs/trust.md)")
HOST_ONLY_NOTE = (
    "network not isolated: a workload can reach the host's services; fix: run iptables -I "
    "INPUT -i gpxwl+ -j REJECT on the host; then restart gpunex-agent (docs/trust.md)")


def setUpModule():
    dockerenv.require_docker()
    dockerenv.agent_binary()


class IsolationTestBase(ServerTestCase):
    """One private engine for the class, isolating as NETWORK says."""

    SMTP = False
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = FLEET_TOML
    NETWORK = "isolated"

    @classmethod
    def setUpClass(cls):
        cls.dock = dockerenv.TestDockerd(cls.NETWORK).start()
        try:
            cls.dock.import_busybox(BUSYBOX_REF)
        except BaseException:
            cls.dock.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        left = cls.dock.stop()
        if left:
            raise AssertionError("the private dockerd left things behind: " + "; ".join(left))

    def setUp(self):
        super().setUp()
        self.admin = self.srv.admin()
        self.agent = None
        self.addCleanup(self._cleanup_agent)

    def _cleanup_agent(self):
        failed = self._outcome_failed()
        if self.agent:
            if failed:
                print(f"\n--- agent {self.agent.state_dir} ---\n" + self.agent.logs()[-5000:])
            self.agent.cleanup(keep=failed)
        if failed:
            print("\n--- dockerd log ---\n" + self.dock.log_tail(2000))
        self.dock.remove_all()

    # -- helpers

    def start_agent(self, name, socket=None):
        """A provider pricing L4, its agent with two EMULATED L4s on this engine (or at
        `socket`); returns (provider, machine id) once the machine is Online."""
        prov, token, _ = provider_with_agent_token(self.srv, self.admin, name=name, priced=False)
        set_prices(prov, {L4: 400_000})
        self.token = token
        self.agent = RealAgent(self.srv, token, GPUS, name=name.lower(),
                               docker_socket=socket or self.dock.socket).start()

        def online():
            items = prov.c.get(f"{API}/machines").body["items"]
            return items[0] if items and items[0]["status"] == "online" else None
        m = wait_until(online, 20, "the machine online")
        return prov, m["id"]

    def machine(self, user, mid):
        r = user.c.get(f"{API}/machines/{mid}")
        self.assertStatus(r, 200)
        return r.body

    def checked(self, user, mid, timeout=60):
        """host.network_isolation once the agent's first check has ended."""
        def done():
            n = self.machine(user, mid)["host"].get("network_isolation")
            return n if n and n["state"] != "checking" else None
        return wait_until(done, timeout, "the agent's network isolation check")

    def self_test(self):
        """`gpunex-agent self-test` as the provider would run it beside the agent (same state
        directory, engine and platform): (exit status, stdout)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNEX_")}
        env.update({"GPUNEX_PLATFORM_URL": f"http://127.0.0.1:{self.srv.port}",
                    "GPUNEX_TOKEN": self.token, "GPUNEX_STATE_DIR": self.agent.state_dir,
                    "GPUNEX_DOCKER_SOCKET": self.dock.socket})
        out = subprocess.run([dockerenv.agent_binary(), "self-test", "--emulate-gpus", GPUS],
                             capture_output=True, text=True, env=env, timeout=180)
        return out.returncode, out.stdout + out.stderr

    def offers_of(self, mid):
        r = self.admin.c.get(f"{API}/offers", query={"gpu_model": L4, "limit": "200"})
        self.assertStatus(r, 200)
        return [o for o in r.body["items"] if o["machine_id"] == mid]

    def workload(self, user, mid, gpu_ids):
        return user.c.post(f"{API}/workloads", {
            "machine_id": mid, "gpu_ids": gpu_ids, "image": BUSYBOX_REF,
            "command": ["/bin/sh", "-c", "echo isolated; exit 0"], "memory_mb": 128,
            "cpus": 0.5})

    def assert_no_leftovers(self):
        """Nothing of the checks is left in the engine. A check tells its verdict before
        it removes its probes, which takes until the engine has listed none of them for
        5 s (at most 15 s more of retries): what is left is waited for that long."""
        wait_until(lambda: not self.dock.containers("io.gpunex.probe")
                   and not self.dock.networks("io.gpunex.probe"), 30,
                   "the checks' containers and networks removed")
        self.assertEqual(self.dock.containers("io.gpunex.probe"), [])
        self.assertEqual(self.dock.networks("io.gpunex.probe"), [])


class OpenEngineTest(IsolationTestBase):
    NETWORK = "open"

    def test_a_machine_whose_workloads_reach_each_other_and_the_host_is_not_listed(self):
        prov, mid = self.start_agent("Open")
        n = self.checked(prov, mid)
        self.assertEqual(n["state"], "not_isolated", n)
        self.assertEqual(n["reached"], ["workload", "host"])
        self.assertRegex(n["detail"], r"^a container on a workload network reached another "
                         r"workload network's container at [0-9.]+:\d+ and a listener on the "
                         r"host at [0-9.]+:\d+")

        # None of its GPUs is listed, each saying why and what to do; nothing is offered.
        def delisted():
            gpus = self.machine(prov, mid)["gpus"]
            return gpus if all(g["listing_state"] == "network_not_isolated" for g in gpus) else None
        gpus = wait_until(delisted, 10, "the GPUs delisted for the network")
        self.assertEqual(len(gpus), 2)
        for g in gpus:
            self.assertIs(g["listed"], False)
            self.assertEqual(g["listing_note"], NOT_ISOLATED_NOTE)
            self.assertEqual(g["delisted_reason"], NOT_ISOLATED_NOTE)
        self.assertEqual(self.machine(prov, mid)["status"], "online")
        self.assertEqual(self.offers_of(mid), [])

        # No workload is placed there, and nothing reaches the engine for one.
        r = self.workload(prov, mid, [gpus[0]["id"]])
        self.assertError(r, 422, fields=["machine_id"])
        self.assertEqual(r.body["error"]["fields"]["machine_id"],
                         "cannot run workloads now: " + NOT_ISOLATED_NOTE)
        self.assertEqual(self.dock.containers("io.gpunex.managed=true"), [])
        self.assertEqual(self.srv.backend.query("SELECT COUNT(*) FROM workloads"), [(0,)])

        # self-test says it too, with the fix.
        rc, out = self.self_test()
        self.assertEqual(rc, 1, out)
        self.assertIn("[FAIL] workloads are not network-isolated (not_isolated): a container on "
                      "a workload network reached another workload network's container", out)
        self.assertIn("turn Docker's iptables rules on", out)
        self.assertIn("iptables -I INPUT -i gpxwl+ -j REJECT", out)
        self.assertIn("the platform does not list this machine", out)
        self.assertIn('"agent.network_isolation"', self.agent.logs())
        self.assert_no_leftovers()


class DockerRulesOnlyTest(IsolationTestBase):
    NETWORK = "docker"

    def test_docker_keeps_networks_apart_but_not_the_host(self):
        prov, mid = self.start_agent("Rules")
        n = self.checked(prov, mid)
        self.assertEqual(n["state"], "not_isolated", n)
        self.assertEqual(n["reached"], ["host"], "Docker's own rules keep the other workload out")
        wait_until(lambda: all(g["listing_note"] == HOST_ONLY_NOTE
                               for g in self.machine(prov, mid)["gpus"]), 10,
                   "the GPUs delisted for the host")
        self.assertEqual(self.offers_of(mid), [])
        self.assert_no_leftovers()


class IsolatingEngineTest(IsolationTestBase):
    NETWORK = "isolated"

    def test_a_machine_whose_workloads_are_isolated_is_listed_and_runs_them(self):
        # The agent reaches the engine through a link that the test takes away and puts
        # back: to the agent, the engine stops and starts again.
        link_dir = tempfile.mkdtemp(prefix="gpx-sock-", dir="/tmp")
        self.addCleanup(shutil.rmtree, link_dir, True)
        link = os.path.join(link_dir, "docker.sock")
        os.symlink(self.dock.socket, link)
        prov, mid = self.start_agent("Tight", socket=link)
        n = self.checked(prov, mid)
        self.assertEqual(n["state"], "isolated", n)
        self.assertEqual(n["reached"], [])
        self.assertIn("reached neither another workload network's container", n["detail"])

        def listed():
            gpus = self.machine(prov, mid)["gpus"]
            return gpus if all(g["listing_state"] == "listed" for g in gpus) else None
        gpus = wait_until(listed, 45, "the GPUs listed")
        self.assertTrue(all(g["listed"] and g["delisted_reason"] is None for g in gpus))
        offers = wait_until(lambda: self.offers_of(mid), 15, "the machine's offer")
        self.assertEqual(offers[0]["gpus_available"], 2)

        r = self.workload(prov, mid, [gpus[1]["id"]])
        self.assertStatus(r, 201)
        wid = r.body["id"]

        def ended():
            w = prov.c.get(f"{API}/workloads/{wid}").body
            return w if w["state"] not in ("pending", "starting", "running") else None
        w = wait_until(ended, 30, "the workload ended")
        self.assertEqual((w["state"], w["exit_code"]), ("exited", 0), w)

        rc, out = self.self_test()
        self.assertIn("[ok]   workloads are network-isolated: a container on a workload network "
                      "reached neither", out)
        self.assertNotIn("[FAIL] workloads", out)
        self.assertEqual(rc, 0, out)
        self.assert_no_leftovers()

        # Docker stops on the machine (issue 30 item 1): within the agent's ping (10 s) the
        # GPUs leave the marketplace as engine_down, the note saying what to start, and a
        # workload there is refused; when the engine answers again they are listed again.
        os.unlink(link)

        def down():
            gpus = self.machine(prov, mid)["gpus"]
            return gpus if all(g["listing_state"] == "engine_down" for g in gpus) else None
        gpus = wait_until(down, 30, "the GPUs delisted while Docker is not running")
        self.assertTrue(gpus[0]["listing_note"].startswith(
            "Docker is not running on this machine, so no container can start there: start "
            "the Docker Engine (sudo systemctl start docker)."), gpus[0])
        self.assertEqual(self.machine(prov, mid)["host"]["network_isolation"]["state"],
                         "no_engine")
        wait_until(lambda: not self.offers_of(mid), 15, "the offer gone")
        r = self.workload(prov, mid, [gpus[0]["id"]])
        err = self.assertError(r, 422, fields=["machine_id"])
        self.assertIn("Docker is not running", err["fields"]["machine_id"])
        os.symlink(self.dock.socket, link)
        wait_until(listed, 45, "the GPUs listed again once Docker answers")
        wait_until(lambda: self.offers_of(mid), 15, "the machine's offer back")
        self.assert_no_leftovers()


if __name__ == "__main__":
    unittest.main()
