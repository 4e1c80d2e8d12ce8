"""Reaching a rental (issue 25, docs/access.md) end to end: a real gpunexd, a real
gpunex-agent whose rental runs in a private Docker engine (dockerenv.TestDockerd), and a
customer's WebSocket to a declared TCP port of the rental's container,
GET /api/v1/rentals/{id}/ports/{port}/connect. The bytes go customer → gpunexd → the
agent's data channel → a socket the agent makes inside the container's network namespace
→ busybox `nc -e cat` in the container, and back:

- bytes come back exactly, a short line and 4 MiB of random bytes (sent while reading, so
  that both directions are paced at once);
- who may: no credentials 401, an API key with the read scope only 403, another customer
  404, the machine's provider 404, a port the rental did not declare 404, a port that is
  no number 422; a declared port where nothing listens opens and closes with 4502;
- the rental's end closes an open connection and a new one is refused (409);
- the agent killed while a connection is open: it closes (4503) and, once the agent is
  back, a new connection works.

One gpunexd, one agent and one rental serve every test of the module (SQLite); each test
leaves them as it found them. Needs root, dockerd (docker.io) and busybox-static (skips
with the reason otherwise); GPUNEX_AGENT names the agent binary.
"""

import json
import os
import threading
import time
import unittest

import wsclient
from harness import API, Gpunexd, ServerTestCase, wait_until
from test_rentals import (BUSYBOX_REF, ENV, L4, RENTALS_TOML, DockerAgent, credit, get_rental,
                          offer_of, provider_with_agent_token, set_prices, wait_ended,
                          wait_machine_listed, wait_running)
from test_rentals import setUpModule as rentals_setup
from test_rentals import tearDownModule as rentals_teardown

ECHO_PORT = 7000  # busybox nc -e cat, one connection at a time
SILENT_PORT = 7001  # declared, nothing listens
ECHO_COMMAND = ["/bin/sh", "-c",
                f"trap 'exit 0' TERM; while true; do nc -l -p {ECHO_PORT} -e cat; done & wait"]
PORTS = [{"port": ECHO_PORT, "protocol": "tcp"}, {"port": SILENT_PORT, "protocol": "tcp"}]

SHARED = {}


def setUpModule():
    rentals_setup()


def tearDownModule():
    rentals_teardown()


class AccessTest(ServerTestCase):
    BACKEND = "sqlite"
    SMTP = False
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = RENTALS_TOML

    def setUp(self):
        # Not ServerTestCase's gpunexd per test: the shared one below.
        if "srv" not in SHARED:
            self._start_shared()
        self.srv = SHARED["srv"]
        self.agent = SHARED["agent"]
        self.customer = SHARED["customer"]
        self.provider = SHARED["provider"]
        self.rental = SHARED["rental"]
        self.addCleanup(self._print_logs_on_failure)

    def _start_shared(self):
        """The shared platform: a provider's machine on the private engine, a customer
        with a running rental that declares PORTS."""
        srv = Gpunexd(self.BACKEND, None, extra_toml=self.EXTRA_TOML, root_toml=self.ROOT_TOML)
        srv.start()
        SHARED["srv"] = srv
        admin = srv.admin()
        prov, token, _ = provider_with_agent_token(srv, admin, name="Porter", priced=False)
        set_prices(prov, {L4: 360_000})
        agent = DockerAgent(srv, token, f"{L4}:2", ENV["dockerd"], name="porter")
        SHARED["agent"] = agent
        agent.start()
        mid = wait_machine_listed(admin, prov, 2)
        offer = offer_of(admin, mid, min_free=2)
        customer = srv.user("Cora Customer")
        credit(admin, customer.id, 50 * 1_000_000)
        r = customer.c.post(f"{API}/rentals", {"offer_id": offer["id"], "gpus": 1,
                                                "image": BUSYBOX_REF, "command": ECHO_COMMAND,
                                                "ports": PORTS})
        assert r.status == 201, r
        wait_running(customer, r.body["id"])
        SHARED.update(provider=prov, customer=customer, rental=r.body, offer=offer,
                      admin=admin, agent_token=token, machine_id=mid)

    @classmethod
    def tearDownClass(cls):
        agent, srv = SHARED.pop("agent", None), SHARED.pop("srv", None)
        if agent is not None:
            agent.cleanup()
        if srv is not None:
            srv.cleanup()
        SHARED.clear()
        if ENV["dockerd"] is not None:
            ENV["dockerd"].remove_all()
        super().tearDownClass()

    def _print_logs_on_failure(self):
        if self._outcome_failed():
            print(f"\n--- agent {self.agent.state_dir} ---\n" + self.agent.logs()[-4000:])
            print("\n--- gpunexd ---\n" + self.srv.logs()[-4000:])

    # -- helpers

    def connect(self, port, token=None, rental_id=None, headers=None):
        """The WebSocket to a port of the rental, as the customer unless told otherwise."""
        token = token if token is not None else self.customer.token
        h = dict(headers or {})
        if token:
            h["Authorization"] = f"Bearer {token}"
        rid = rental_id or self.rental["id"]
        return wsclient.connect(self.srv.port, f"/api/v1/rentals/{rid}/ports/{port}/connect", h)

    def connect_echo(self):
        """A connection to the echo port, retried while nc is between two connections."""
        def attempt():
            try:
                ws = self.connect(ECHO_PORT)
            except wsclient.HandshakeRefused as e:
                if e.status == 503:  # the agent's data channel is not (yet) back
                    return None
                raise
            ws.send_binary(b"ping\n")
            m = ws.recv(timeout=10)
            if m.kind == "binary" and m.data == b"ping\n":
                return ws
            ws.abort()
            return None
        return wait_until(attempt, 30, "the echo port answering", interval=0.5)

    def refused(self, port, token=None, rental_id=None):
        with self.assertRaises(wsclient.HandshakeRefused) as cm:
            self.connect(port, token=token, rental_id=rental_id)
        return cm.exception

    # -- the tests

    def test_bytes_go_to_the_port_and_back_exactly(self):
        ws = self.connect_echo()
        ws.send_binary(b"hello, container\n")
        got = b""
        while len(got) < 17:
            m = ws.recv(timeout=10)
            self.assertEqual(m.kind, "binary", m)
            got += m.data
        self.assertEqual(got, b"hello, container\n")

        data = os.urandom(4 * 1024 * 1024)
        sender = threading.Thread(target=lambda: [ws.send_binary(data[i:i + 65536])
                                                  for i in range(0, len(data), 65536)])
        sender.start()
        back = bytearray()
        while len(back) < len(data):
            m = ws.recv(timeout=30)
            self.assertEqual(m.kind, "binary", f"after {len(back)} bytes: {m!r}")
            back += m.data
        sender.join()
        self.assertEqual(bytes(back), data)
        ws.close()

        # The access log: the connection's bytes each way, never its content.
        def closed_entry():
            for line in self.srv.logs().splitlines():
                if '"relay.port_closed"' in line:
                    entry = json.loads(line)
                    if entry["bytes_in"] >= len(data):
                        return entry
            return None
        entry = wait_until(closed_entry, 10, "relay.port_closed in gpunexd's log")
        self.assertEqual(entry["bytes_in"], entry["bytes_out"])  # an echo
        self.assertEqual((entry["rental_id"], entry["port"]), (self.rental["id"], ECHO_PORT))
        self.assertNotIn("hello, container", self.srv.logs())

        metrics = self.srv.client().get("/metrics").raw.decode()
        self.assertIn("gpunex_relay_channels 1", metrics)
        self.assertIn("gpunex_relay_bytes_to_agents", metrics)

    def test_the_rental_says_how_to_reach_each_port(self):
        rid = self.rental["id"]
        ports = get_rental(self.customer, rid)["ports"]
        self.assertEqual([p["connect_path"] for p in ports],
                         [f"/api/v1/rentals/{rid}/ports/{p['port']}/connect" for p in PORTS])
        # The provider sees the ports, not a way in.
        r = self.provider.c.get(f"{API}/rentals/{rid}")
        self.assertStatus(r, 200)
        self.assertEqual([sorted(p) for p in r.body["ports"]],
                         [["port", "protocol", "public"]] * len(PORTS))

    def test_only_the_customer_reaches_only_declared_ports(self):
        self.assertEqual(self.refused(ECHO_PORT, token="").status, 401)
        other = self.srv.user("Otto Other")
        self.assertEqual(self.refused(ECHO_PORT, token=other.token).status, 404)
        self.assertEqual(self.refused(ECHO_PORT, token=self.provider.token).status, 404)
        self.assertEqual(self.refused(ECHO_PORT, token=SHARED["admin"].token).status, 404)
        self.assertEqual(self.refused(ECHO_PORT, token=SHARED["agent_token"]).status, 401)
        r = self.customer.c.post(f"{API}/api-keys", {"name": "read only", "scopes": ["read"]})
        self.assertStatus(r, 201)
        self.assertEqual(self.refused(ECHO_PORT, token=r.body["key"]).status, 403)
        e = self.refused(22)
        self.assertEqual(e.status, 404)
        self.assertIn("declared no port 22", e.body["error"]["message"])
        e = self.refused("ssh")
        self.assertEqual(e.status, 422)
        self.assertIn("port", e.body["error"]["fields"])
        self.assertEqual(self.refused(ECHO_PORT, rental_id="rnt_nonexistent").status, 404)

    def test_the_data_channel_takes_only_the_machines_own_agent_token(self):
        def refused(token, query):
            h = {"Authorization": f"Bearer {token}"} if token else {}
            with self.assertRaises(wsclient.HandshakeRefused) as cm:
                wsclient.connect(self.srv.port, f"/api/v1/agent/data{query}", h)
            return cm.exception
        mid = SHARED["machine_id"]
        self.assertEqual(refused("", f"?machine_id={mid}").status, 401)
        self.assertEqual(refused(self.customer.token, f"?machine_id={mid}").status, 401)
        e = refused(SHARED["agent_token"], "")
        self.assertEqual(e.status, 422)
        self.assertIn("machine_id", e.body["error"]["fields"])
        # Another machine's id, or one whose control channel is not here with this token.
        self.assertEqual(refused(SHARED["agent_token"], "?machine_id=mch_other").status, 409)
        other, other_token, _ = provider_with_agent_token(self.srv, SHARED["admin"], name="Else",
                                                          priced=False)
        self.assertEqual(refused(other_token, f"?machine_id={mid}").status, 409)

    def test_a_declared_port_where_nothing_listens_closes_with_4502(self):
        ws = self.connect(SILENT_PORT)
        code, reason, _ = ws.wait_closed(timeout=15)
        self.assertEqual(code, 4502, reason)
        self.assertIn(f"port {SILENT_PORT}", reason)

    def test_the_agent_killed_closes_connections_and_new_ones_work_after(self):
        ws = self.connect_echo()
        self.agent.kill()
        start = time.monotonic()
        code, reason, _ = ws.wait_closed(timeout=15)
        self.assertEqual(code, 4503, reason)  # the machine's data channel closed
        self.assertLess(time.monotonic() - start, 5)
        # Back before the rental counts as lost: the restarted agent adopts the container
        # and reaches its declared ports again.
        self.agent.start()
        ws = self.connect_echo()
        ws.send_binary(b"again\n")
        m = ws.recv(timeout=10)
        self.assertEqual((m.kind, m.data), ("binary", b"again\n"))
        ws.close()
        self.assertEqual(get_rental(self.customer, self.rental["id"])["state"], "running")

    def test_zz_the_rentals_end_closes_its_connections(self):
        """Last (zz): it ends the shared rental."""
        ws = self.connect_echo()
        r = self.customer.c.post(f"{API}/rentals/{self.rental['id']}/stop", {})
        self.assertStatus(r, 200)
        start = time.monotonic()
        code, reason, _ = ws.wait_closed(timeout=20)
        closed_after = time.monotonic() - start
        self.assertIsNotNone(code)
        self.assertLess(closed_after, 5, f"closed after {closed_after:.1f} s ({code} {reason})")
        wait_ended(self.customer, self.rental["id"])
        self.assertEqual(self.refused(ECHO_PORT).status, 409)


if __name__ == "__main__":
    unittest.main()
