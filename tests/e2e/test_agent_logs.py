"""Workload output on the agent channel (issue 24) end to end: a real gpunexd and a real
gpunex-agent with EMULATED L4s whose workloads run in a private Docker engine
(dockerenv.TestDockerd, a workload image made of the host's static busybox; nothing is
pulled).

A blank line printed by a container used to drop the machine's agent connection: the
agent forwarded a whitespace-only log chunk, the platform refused the message as invalid
and closed the session, and every rental on the machine lost its log lines (81 reconnects
in 80 s). Here one container prints, round after round, blank lines, whitespace of every
kind, invalid UTF-8 bytes, NUL, an escape character and accented text, while a second
container on the other GPU prints plain numbered lines. It checks that

- the agent stays connected the whole time: one "connected" event of the machine and no
  "disconnected", no reconnect in the agent's log, nothing refused in /metrics;
- every line of both containers is logged, in order, as it was printed, with each byte
  that is not text (invalid UTF-8, NUL, control characters other than whitespace)
  replaced by U+FFFD;
- both workloads end as exited 0.

Needs root, dockerd (docker.io) and busybox-static (skips with the reason otherwise);
GPUNEX_AGENT names the agent binary. Runs on SQLite and, with GPUNEX_TEST_PG_URL, on
PostgreSQL.
"""

import re
import unittest

from harness import API, ServerTestCase, provider_with_agent_token, wait_until
# The module's engine (setUpModule, tearDownModule) and its agents, as test_rentals has them.
from test_rentals import (BUSYBOX_REF, FLEET_TOML, L4, DockerAgent, EngineAgentsMixin,
                          setUpModule, tearDownModule)  # noqa: F401 (unittest calls them)

ROUNDS = 20
REPLACEMENT = "\ufffd"

# Each round: an empty line, two more, spaces only, tabs and spaces, vertical tab, form
# feed and carriage return, invalid UTF-8 (a lone continuation byte, 0xFF 0xFE, a sequence
# cut short), NUL, an ANSI escape, and accented text. Printed with busybox printf's octal
# escapes, so the bytes are exactly these.
NOISY_SCRIPT = (
    "i=0; while [ $i -lt %d ]; do "
    "echo; printf '\\n\\n'; printf '   \\n'; printf '\\t \\t\\n'; printf ' \\v\\f \\r\\n'; "
    "printf 'bad \\200 \\377\\376 \\342\\202 %%d\\n' $i; printf 'nul \\000 byte\\n'; "
    "printf '\\033[1mbold\\033[0m\\n'; printf 'caf\\303\\251 %%d\\n' $i; "
    "i=$((i+1)); sleep 0.1; done; echo noisy-done" % ROUNDS)
PLAIN_SCRIPT = ("i=0; while [ $i -lt %d ]; do echo \"tick $i\"; i=$((i+1)); sleep 0.1; done; "
                "echo plain-done" % (ROUNDS * 2))


def expected_noisy():
    """What the platform must hold: the bytes printed, each one that is not text replaced
    by U+FFFD (whitespace of every kind kept)."""
    r = REPLACEMENT
    out = []
    for i in range(ROUNDS):
        out.append("\n" + "\n\n" + "   \n" + "\t \t\n" + " \v\f \r\n")
        out.append(f"bad {r} {r}{r} {r}{r} {i}\n")
        out.append(f"nul {r} byte\n")
        out.append(f"{r}[1mbold{r}[0m\n")
        out.append(f"café {i}\n")
    out.append("noisy-done\n")
    return "".join(out)


def expected_plain():
    return "".join(f"tick {i}\n" for i in range(ROUNDS * 2)) + "plain-done\n"


# --------------------------------------------------------------------------- the tests


class AgentLogsMixin(EngineAgentsMixin):
    EXTRA_TOML = FLEET_TOML

    def q(self, sql, params=()):
        return self.srv.backend.query(sql, params)

    def machine_online(self, prov):
        """The machine once online and its agent's network isolation check passed (no
        workload starts before)."""
        def check():
            r = prov.c.get(f"{API}/machines")
            self.assertStatus(r, 200)
            ms = [m for m in r.body["items"] if m["status"] == "online"]
            if not ms:
                return None
            r = prov.c.get(f"{API}/machines/{ms[0]['id']}")
            self.assertStatus(r, 200)
            isolation = r.body["host"].get("network_isolation") or {}
            self.assertNotIn(isolation.get("state"), ("not_isolated", "unverified"), isolation)
            return r.body if isolation.get("state") == "isolated" else None
        return wait_until(check, 120, "the machine online and its network isolation checked",
                          interval=0.2)

    def start_workload(self, prov, mid, gpu_id, script):
        r = prov.c.post(f"{API}/workloads", {"machine_id": mid, "gpu_ids": [gpu_id],
                                             "image": BUSYBOX_REF,
                                             "command": ["/bin/sh", "-c", script]})
        self.assertStatus(r, 201)
        return r.body["id"]

    def wait_exited(self, prov, wid, timeout=60):
        def check():
            r = prov.c.get(f"{API}/workloads/{wid}")
            self.assertStatus(r, 200)
            return r.body if r.body["state"] not in ("pending", "starting", "running") else None
        return wait_until(check, timeout, f"workload {wid} ended", interval=0.2)

    def stdout(self, prov, wid):
        """The workload's stdout as stored, every page, chunks in their order."""
        chunks, after = [], None
        while True:
            r = prov.c.get(f"{API}/workloads/{wid}/logs", query={"after": after} if after else None)
            self.assertStatus(r, 200)
            if not r.body["items"]:
                break
            chunks += [i for i in r.body["items"] if i["stream"] == "stdout"]
            after = r.body["next_cursor"]
        seqs = [c["seq"] for c in chunks]
        self.assertEqual(seqs, sorted(seqs), "listed in the order sent")
        self.assertEqual(len(seqs), len(set(seqs)))
        return "".join(c["data"] for c in chunks)

    def refused_in_metrics(self):
        r = self.srv.client().get("/metrics")
        self.assertStatus(r, 200)
        text = r.raw.decode("utf-8")
        found = re.findall(r'^gpunex_agent_messages_refused\{reason="([a-z_]+)"\} (\S+)$', text,
                           re.M)
        self.assertTrue(found, "the refusals are counted in /metrics")
        return {reason: float(v) for reason, v in found}

    def test_blank_lines_whitespace_and_invalid_utf8_keep_the_agent_connected(self):
        prov, token, _ = provider_with_agent_token(self.srv, self.admin, name="Logs",
                                                   priced=False)
        agent = DockerAgent(self.srv, token, f"{L4}:2", self.dock, name="logs")
        self.agents.append(agent)
        agent.start()
        m = self.machine_online(prov)
        mid = m["id"]
        gpus = [g["id"] for g in m["gpus"]]

        noisy = self.start_workload(prov, mid, gpus[0], NOISY_SCRIPT)
        plain = self.start_workload(prov, mid, gpus[1], PLAIN_SCRIPT)
        for wid in (noisy, plain):
            ended = self.wait_exited(prov, wid)
            self.assertEqual((ended["state"], ended["exit_code"]), ("exited", 0), ended)

        # Every line of both, as printed (what is not text replaced), once the last arrived.
        want = {noisy: expected_noisy(), plain: expected_plain()}
        for wid, done in ((noisy, "noisy-done\n"), (plain, "plain-done\n")):
            wait_until(lambda: self.stdout(prov, wid).endswith(done), 15,
                       f"the last line of {wid}", interval=0.2)
            self.assertEqual(self.stdout(prov, wid), want[wid], wid)

        # The agent never lost its connection: one connect, no disconnect, no reconnect.
        events = [k for (k,) in self.q(
            "SELECT kind FROM machine_events WHERE machine_id = ? ORDER BY at", (mid,))]
        self.assertEqual(events.count("connected"), 1, events)
        self.assertEqual(events.count("disconnected"), 0, events)
        self.assertNotIn("agent.disconnected", agent.logs())
        self.assertEqual(agent.proc.poll(), None, "the agent still runs")
        self.assertEqual(self.machine_online(prov)["id"], mid)
        refused = self.refused_in_metrics()
        self.assertEqual(sum(refused.values()), 0, refused)


class AgentLogsSqliteTest(AgentLogsMixin, ServerTestCase):
    BACKEND = "sqlite"


class AgentLogsPostgresTest(AgentLogsMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
