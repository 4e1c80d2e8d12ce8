"""A provider names a machine (PATCH /api/v1/machines/{id} {name}) end to end: the name is
trimmed and kept across the agent's reconnects (its hello carries the hostname, which
names a machine only when it registers); a bad name is refused with 422 naming `name`
and changes nothing; another provider's machine is not found, an admin may not rename.
"""

import unittest

from harness import API, ServerTestCase, provider_with_agent_token
from test_agent_channel import FLEET_TOML, FakeAgent


class MachineRenameMixin:
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = FLEET_TOML
    SMTP = False

    def test_the_providers_name_survives_the_next_hello(self):
        admin = self.srv.admin()
        pia, token, _ = provider_with_agent_token(self.srv, admin, name="Pia")
        oscar, _, _ = provider_with_agent_token(self.srv, admin, name="Oscar")
        agent = FakeAgent(self.srv, token)
        self.addCleanup(agent.cleanup)
        agent.join(heartbeats=False)
        mid = agent.machine_id
        path = f"{API}/machines/{mid}"
        r = pia.c.get(path)
        self.assertStatus(r, 200)
        self.assertEqual(r.body["name"], agent.hostname, "named after its host at first")

        for bad in ("", "   ", "m" * 101, "rack\n1"):
            r = pia.c.request("PATCH", path, {"name": bad})
            self.assertError(r, 422, fields=["name"], msg=repr(bad))
        self.assertError(oscar.c.request("PATCH", path, {"name": "mine"}), 404)
        self.assertError(admin.c.request("PATCH", path, {"name": "mine"}), 403)
        self.assertEqual(pia.c.get(path).body["name"], agent.hostname)

        r = pia.c.request("PATCH", path, {"name": "  Rack 1, top shelf  "})
        self.assertStatus(r, 200)
        self.assertEqual(r.body["name"], "Rack 1, top shelf")
        self.assertEqual(r.body["id"], mid)

        # The agent reconnects with its hostname: the provider's name stays.
        agent.disconnect()
        agent.connect()
        agent.hello()
        self.assertEqual(agent.machine_id, mid)
        self.assertEqual(pia.c.get(path).body["name"], "Rack 1, top shelf")
        listed = pia.c.get(f"{API}/machines").body["items"]
        self.assertEqual([m["name"] for m in listed], ["Rack 1, top shelf"])


class MachineRenameSqliteTest(MachineRenameMixin, ServerTestCase):
    BACKEND = "sqlite"


class MachineRenamePostgresTest(MachineRenameMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
