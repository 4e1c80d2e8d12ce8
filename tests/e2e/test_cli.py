"""The command-line client, `gpunex` (issue 27, docs/cli.md), end to end: a real gpunexd
and a real gpunex-agent whose rentals run in a private Docker engine, driven with the CLI
alone.

- a customer logs in (the key kept in a 0600 profile), searches offers, rents, waits for
  the rental to run, reads and follows its logs, forwards a local port to it, copies files
  out and in, runs commands in it (their exit codes come back), stops it, and reads the
  balance and the statement;
- a provider lists machines, renames one, sets prices and a maintenance window, reads
  earnings and sets payout settings;
- an admin decides an application, credits a balance by email and checks the ledger;
- `-o json` is the API's objects exactly (compared with the API's own answers), and the
  exit codes hold: 2 usage, 3 a wait that timed out, 4 a refused key (named by its last
  four characters), 5 not found, 130 interrupted.

One gpunexd and one agent serve the module (SQLite). Needs root, dockerd and
busybox-static (skips otherwise); GPUNEX_CLI names the client's binary.
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import unittest
from datetime import datetime, timedelta, timezone

import yaml

from harness import API, Gpunexd, ServerTestCase, enterprise_application, free_port, \
    unique_email, wait_until
from test_rentals import (BUSYBOX_REF, ENV, L4, RENTALS_TOML, DockerAgent, credit, end_shared,
                          get_rental, offer_of, provider_with_agent_token, set_prices,
                          wait_machine_listed)
from test_rentals import setUpModule as rentals_setup
from test_rentals import tearDownModule as rentals_teardown

ECHO_PORT = 7000
SSH_PORT = free_port()
SSH_TOML = f"""
[access]
ssh_listen = "127.0.0.1:{SSH_PORT}"
ssh_public_address = "127.0.0.1"
"""
SCRIPT = (f"trap 'exit 0' TERM; echo hello-from-cli-rental; mkdir -p /scratch/out; "
          f"echo payload > /scratch/out/f.txt; "
          f"while true; do nc -l -p {ECHO_PORT} -e cat; done & "
          f"i=0; while true; do i=$((i+1)); echo tick-$i; sleep 1; done")


def cli_binary():
    path = os.environ.get("GPUNEX_CLI")
    if not path:
        path = os.path.join(os.path.dirname(os.path.dirname(os.environ["GPUNEXD"])), "cli", "gpunex")
    return path


SHARED = {}


def without_traffic(rental):
    """The rental less its traffic counters (its own and each port's)."""
    r = {k: v for k, v in rental.items() if k != "traffic"}
    r["ports"] = [{k: v for k, v in p.items() if k != "traffic"} for p in r.get("ports", [])]
    return r


def setUpModule():
    rentals_setup()


def tearDownModule():
    rentals_teardown()


class CliTest(ServerTestCase):
    BACKEND = "sqlite"
    SMTP = False
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = RENTALS_TOML + SSH_TOML

    def setUp(self):
        if ENV["dockerd"] is None:
            self.skipTest("needs the private Docker engine (root, docker.io, busybox-static)")
        if "srv" not in SHARED:
            self._start_shared()
        self.srv = SHARED["srv"]
        self.admin = SHARED["admin"]
        self.provider = SHARED["provider"]
        self.customer = SHARED["customer"]
        self.addCleanup(self._print_logs_on_failure)

    def _start_shared(self):
        srv = Gpunexd(self.BACKEND, None, extra_toml=self.EXTRA_TOML, root_toml=self.ROOT_TOML)
        srv.start()
        SHARED["srv"] = srv
        admin = srv.admin()
        prov, token, _ = provider_with_agent_token(srv, admin, name="Clio", priced=False)
        set_prices(prov, {L4: 360_000})
        agent = DockerAgent(srv, token, f"{L4}:2", ENV["dockerd"], name="clio")
        SHARED["agent"] = agent
        agent.start()
        mid = wait_machine_listed(admin, prov, 2)
        customer = srv.user("Cli Customer")
        credit(admin, customer.id, 20 * 1_000_000)
        SHARED.update(admin=admin, provider=prov, customer=customer, machine_id=mid,
                      offer=offer_of(admin, mid))

    @classmethod
    def tearDownClass(cls):
        end_shared(SHARED)
        super().tearDownClass()

    def _print_logs_on_failure(self):
        if self._outcome_failed():
            print("\n--- gpunexd ---\n" + self.srv.logs()[-4000:])
            print(f"\n--- agent ---\n" + SHARED["agent"].logs()[-3000:])

    # -- helpers

    def env(self, config_home=None, **extra):
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
             "HOME": config_home or self.home(),
             "XDG_CONFIG_HOME": config_home or self.home(),
             "GPUNEX_URL": f"http://127.0.0.1:{self.srv.port}",
             "NO_COLOR": "1"}
        e.update(extra)
        return e

    def home(self):
        if "home" not in SHARED:
            SHARED["home"] = tempfile.mkdtemp(prefix="gpunex-cli-home-")
        return SHARED["home"]

    def cli(self, *args, key=None, stdin=None, rc=0, timeout=120, env=None):
        """Runs gpunex with `args`; `key` is sent with --api-key. Asserts the exit code."""
        argv = [cli_binary()] + (["--api-key", key] if key else []) + list(args)
        p = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout,
                           env=env or self.env())
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        if rc is not None:
            self.assertEqual(p.returncode, rc, f"gpunex {' '.join(args)}\nstdout: {out}\nstderr: {err}")
        return p.returncode, out, err

    def cli_json(self, *args, **kw):
        _, out, _ = self.cli("-o", "json", *args, **kw)
        return json.loads(out)

    def api_key(self, user, scopes):
        r = user.c.post(f"{API}/api-keys", {"name": "cli test", "scopes": scopes})
        self.assertEqual(r.status, 201, r)
        return r.body["key"]

    def customer_key(self):
        if "customer_key" not in SHARED:
            SHARED["customer_key"] = self.api_key(self.customer, ["read", "write"])
        return SHARED["customer_key"]

    # -- tests

    def test_a_login_keeps_a_private_profile_and_status_names_the_key(self):
        home = tempfile.mkdtemp(prefix="gpunex-cli-login-")
        env = self.env(config_home=home)
        _, out, err = self.cli("auth", "login", "--email", self.customer.email,
                               "--password-stdin", stdin=self.customer.password.encode(), env=env)
        path = os.path.join(home, "gpunex", "config.toml")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertIn("kept in profile \"default\"", err)
        self.assertNotIn("gpx_k_", out + err)  # the key is never printed
        with open(path) as f:
            saved = f.read()
        self.assertIn("gpx_k_", saved)
        # The kept key works alone (no flags), and `auth status` says whose it is.
        me = self.cli_json("auth", "status", env=env)
        api_me = self.customer.c.get(f"{API}/me").body
        self.assertEqual(me["id"], api_me["id"])
        self.assertEqual(me["email"], api_me["email"])
        _, text, _ = self.cli("auth", "status", env=env)
        self.assertIn("profile default", text)
        # The key appears among the customer's API keys, with read and write only.
        keys = self.customer.c.get(f"{API}/api-keys").body["items"]
        self.assertTrue(any(k["name"].startswith("gpunex CLI on") and
                            sorted(k["scopes"]) == ["read", "write"] for k in keys), keys)
        # A wrong password: 401 from the log-in, exit 4, and nothing kept.
        before = saved
        self.cli("auth", "login", "--email", self.customer.email, "--password-stdin",
                 stdin=b"wrong-password-here", env=env, rc=4)
        with open(path) as f:
            self.assertEqual(f.read(), before)
        # A named profile that the file lacks is a usage error, not another platform.
        _, _, err = self.cli("--profile", "nope", "balance", env=env, rc=2)
        self.assertIn('no profile "nope"', err)

    def test_b_a_refused_key_exits_4_naming_its_last_four_characters(self):
        _, _, err = self.cli("balance", key="gpx_k_not-a-real-key-wxyz", rc=4)
        self.assertIn("…wxyz", err)
        self.assertIn("--api-key", err)
        _, _, err = self.cli("balance", rc=4, env=self.env(config_home=tempfile.mkdtemp()))
        self.assertIn("no API key", err)
        # A read-only key may not stop a rental: 403 is exit 4 too.
        ro = self.api_key(self.customer, ["read"])
        self.cli("rentals", "stop", "rnt_doesnotmatter", key=ro, rc=4)

    def test_c_exit_codes_for_usage_and_not_found(self):
        key = self.customer_key()
        self.cli("rentals", "get", "rnt_00000000000000000000000000", key=key, rc=5)
        _, _, err = self.cli("rentals", "create", SHARED["offer"]["id"], key=key, rc=2)
        self.assertIn("--image", err)
        _, _, err = self.cli("offers", "search", "--where", "speed>=3", rc=2)
        self.assertIn('"speed" is not a key', err)
        _, _, err = self.cli("offers", "search", "--max-price", "0.1234567", rc=2)
        self.assertIn("--max-price", err)
        self.cli("no-such-command", rc=2)
        _, out, _ = self.cli("--help")
        self.assertIn("rentals", out)
        _, out, _ = self.cli("version")
        self.assertIn("gpunex 0.1.0", out)

    def test_d_offers_search_is_the_apis_offers(self):
        items = self.cli_json("offers", "search", "--gpu", L4, "--limit", "0")
        api = self.srv.client().get(f"{API}/offers?gpu_model={L4}&limit=100").body["items"]
        self.assertEqual(items, api)
        self.assertIn(SHARED["offer"]["id"], [o["id"] for o in items])
        # --where and the flags both narrow it.
        self.assertEqual(self.cli_json("offers", "search", "--where", "price<=0.1"), [])
        self.assertEqual(len(self.cli_json("offers", "search", "--where",
                                           f"price<=0.36 gpu={L4} gpus>=1")), len(api))
        _, ids, _ = self.cli("-q", "offers", "search", "--gpu", L4)
        self.assertEqual(ids.split(), [o["id"] for o in api])
        # --include-busy: offers whose GPUs are all busy too (the API's include_busy=true).
        busy = self.cli_json("offers", "search", "--gpu", L4, "--include-busy", "--limit", "0")
        self.assertEqual(busy, self.srv.client().get(
            f"{API}/offers?gpu_model={L4}&include_busy=true&limit=100").body["items"])
        self.assertIn(SHARED["offer"]["id"], [o["id"] for o in busy])
        # SkyPilot's catalog: the header, and one row per power of two of the free GPUs.
        _, csv, _ = self.cli("-o", "csv", "offers", "search", "--gpu", L4, "--columns", "skypilot")
        lines = csv.strip().splitlines()
        self.assertEqual(lines[0], "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region")
        self.assertIn(f"{SHARED['offer']['id']}_1x,", csv)
        self.assertTrue(any(line.startswith(f"{SHARED['offer']['id']}_1x,") and ",0.36," in line
                            for line in lines), csv)

    def test_e_a_customer_rents_reaches_and_stops_with_the_cli_alone(self):
        key = self.customer_key()
        offer = SHARED["offer"]["id"]
        rental = self.cli_json("rentals", "create", offer, "--image", BUSYBOX_REF,
                               "--port", f"{ECHO_PORT}/tcp", "--max-duration", "900", "--wait",
                               "--timeout", "120", "--", "/bin/sh", "-c", SCRIPT, key=key)
        rid = rental["id"]
        self.assertEqual(rental["state"], "running")
        api_rental = get_rental(self.customer, rid)
        self.assertEqual((rental["offer_id"], rental["image"], rental["ports"]),
                         (api_rental["offer_id"], api_rental["image"], api_rental["ports"]))
        self.assertEqual(self.cli_json("rentals", "get", rid, key=key)["id"], rid)
        listed = self.cli_json("rentals", "list", "--state", "active", key=key)
        self.assertIn(rid, [r["id"] for r in listed])

        # A wait for the end of a running rental times out: exit 3.
        _, _, err = self.cli("rentals", "wait", rid, "--for", "ended", "--timeout", "1", key=key, rc=3)
        self.assertIn("still running", err)

        # Logs: what the container printed, and -f follows it.
        wait_until(lambda: "tick-2" in self.cli("rentals", "logs", rid, key=key)[1], 30,
                   "the rental's logs through the CLI")
        _, logs, _ = self.cli("rentals", "logs", rid, key=key)
        self.assertIn("hello-from-cli-rental", logs)
        follow = subprocess.Popen([cli_binary(), "--api-key", key, "rentals", "logs", "-f", rid],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env())
        watch = subprocess.Popen([cli_binary(), "--api-key", key, "-o", "json", "rentals", "get",
                                  "--watch", rid],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env())

        # exec: stdout, stdin and the exit code come back.
        _, out, _ = self.cli("rentals", "exec", rid, "--", "cat", "/scratch/out/f.txt", key=key)
        self.assertEqual(out, "payload\n")
        self.cli("rentals", "exec", rid, "--", "sh", "-c", "echo oops >&2; exit 3", key=key, rc=3)
        _, out, _ = self.cli("rentals", "exec", rid, "-i", "--", "tr", "a-z", "A-Z",
                             stdin=b"shout\n", key=key)
        self.assertEqual(out, "SHOUT\n")

        # cp out (a directory, unpacked) and in (a file, then read back with exec).
        dest = tempfile.mkdtemp(prefix="gpunex-cli-cp-")
        self.addCleanup(shutil.rmtree, dest, ignore_errors=True)
        self.cli("rentals", "cp", f"{rid}:/scratch/out", dest, key=key)
        with open(os.path.join(dest, "out", "f.txt")) as f:
            self.assertEqual(f.read(), "payload\n")
        src = os.path.join(dest, "up.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(3 << 20))
        self.cli("rentals", "cp", src, f"{rid}:/scratch", key=key)
        _, out, _ = self.cli("rentals", "exec", rid, "--", "md5sum", "/scratch/up.bin", key=key)
        with open(src, "rb") as f:
            self.assertEqual(out.split()[0], hashlib.md5(f.read()).hexdigest())
        self.cli("rentals", "cp", f"{rid}:/scratch/nothing-here", dest, key=key, rc=5)

        # port-forward: a local port to the rental's echo port, until interrupted (130).
        local = free_port()
        pf = subprocess.Popen([cli_binary(), "--api-key", key, "rentals", "port-forward", rid,
                               f"{local}:{ECHO_PORT}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env())
        try:
            def echoed():
                try:
                    with socket.create_connection(("127.0.0.1", local), timeout=5) as s:
                        s.sendall(b"ping through the cli\n")
                        s.settimeout(5)
                        got = b""
                        while not got.endswith(b"\n"):
                            chunk = s.recv(100)
                            if not chunk:
                                return False
                            got += chunk
                        return got == b"ping through the cli\n"
                except OSError:
                    return False
            wait_until(echoed, 30, "an echo through gpunex rentals port-forward")
        finally:
            pf.send_signal(signal.SIGINT)
            self.assertEqual(pf.wait(timeout=10), 130)
            pf.stdout.close()
            pf.stderr.close()

        # ssh through the platform's gateway, with a key added by the CLI; the gateway's
        # host key is pinned beside the config, so the first connection is checked too.
        keyfile = os.path.join(dest, "id_cli")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "cli", "-f", keyfile],
                       check=True, timeout=30)
        added = self.cli_json("ssh-keys", "add", keyfile + ".pub", "--name", "laptop", key=key)
        self.assertEqual(added["name"], "laptop")
        _, ids, _ = self.cli("-q", "ssh-keys", "list", key=key)
        self.assertIn(added["id"], ids.split())
        rc, out, err = self.cli("rentals", "ssh", rid, "-i", keyfile, "--", "-o", "BatchMode=yes",
                                "-o", "LogLevel=ERROR", "echo hi-over-ssh; exit 4", key=key, rc=None)
        self.assertEqual((rc, out), (4, "hi-over-ssh\n"), err)
        with open(os.path.join(self.home(), "gpunex", "known_hosts")) as f:
            self.assertEqual(f.read().strip(),
                             self.srv.client().get(f"{API}/access/ssh").body["known_hosts_line"])
        self.cli("ssh-keys", "rm", added["id"], key=key)

        # stop, then the ended rental: wait --for ended, and the follower ends by itself.
        stopped = self.cli_json("rentals", "stop", rid, key=key)
        self.assertIn(stopped["state"], ("ending", "ended"))
        ended = self.cli_json("rentals", "wait", rid, "--for", "ended", "--timeout", "60", key=key)
        self.assertEqual(ended["state"], "ended")
        self.assertEqual(follow.wait(timeout=30), 0)
        followed = follow.stdout.read().decode()
        follow.stdout.close()
        follow.stderr.close()
        self.assertIn("hello-from-cli-rental", followed)
        # --watch: a JSON line at each change of state, the last one ended.
        self.assertEqual(watch.wait(timeout=30), 0)
        states = [json.loads(line)["state"] for line in watch.stdout.read().decode().splitlines()]
        watch.stdout.close()
        watch.stderr.close()
        self.assertEqual((states[0], states[-1]), ("running", "ended"), states)
        self.assertEqual(len(states), len(set(states)), states)
        self.assertIn("tick-2", followed)
        # -o yaml is the same values (read back with a YAML parser), -o json the API's object.
        # (Less the traffic counters, which the relay adds to after the end: each read may
        # see more.)
        as_json = self.cli_json("rentals", "get", rid, key=key)
        self.assertEqual(without_traffic(as_json), without_traffic(get_rental(self.customer, rid)))
        _, as_yaml, _ = self.cli("-o", "yaml", "rentals", "get", rid, key=key)
        self.assertEqual(without_traffic(yaml.safe_load(as_yaml)), without_traffic(as_json))
        _, _, err = self.cli("rentals", "wait", rid, "--for", "running", "--timeout", "5", key=key, rc=1)
        self.assertIn("will not run", err)

        # Money: the CLI's balance and statement are the API's.
        self.assertEqual(self.cli_json("balance", key=key),
                         self.customer.c.get(f"{API}/me/balance").body)
        statement = self.cli_json("statement", "--limit", "0", key=key)
        api = self.customer.c.get(f"{API}/me/statement?limit=500").body["items"]
        self.assertEqual(statement, api)
        self.assertTrue(any(e.get("rental_id") == rid for e in statement), statement)
        _, table, _ = self.cli("balance", key=key)
        self.assertIn("BALANCE_USDC", table)

    def test_f_a_provider_runs_machines_with_the_cli(self):
        key = self.api_key(self.provider, ["read", "write", "provider"])
        mid = SHARED["machine_id"]
        machines = self.cli_json("machines", "list", key=key)
        api = self.provider.c.get(f"{API}/machines").body["items"]
        self.assertEqual([m["id"] for m in machines], [m["id"] for m in api])
        renamed = self.cli_json("machines", "rename", mid, "rack-7", key=key)
        self.assertEqual(renamed["name"], "rack-7")
        self.assertEqual(self.provider.c.get(f"{API}/machines/{mid}").body["name"], "rack-7")

        prices = self.cli_json("prices", "set", f"{L4}=0.4", key=key)
        self.assertEqual(prices["items"][0]["price_micro"], 400_000)
        api_prices = self.provider.c.get(f"{API}/providers/me/prices").body["items"]
        self.assertEqual([(p["gpu_model"], p["price_micro"]) for p in api_prices], [(L4, 400_000)])
        self.cli("prices", "set", f"{L4}=cheap", key=key, rc=2)

        start = (datetime.now(timezone.utc) + timedelta(days=3)).replace(microsecond=0)
        window = self.cli_json("maintenance", "add", mid, "--start", start.isoformat().replace("+00:00", "Z"),
                               "--end", (start + timedelta(hours=2)).isoformat().replace("+00:00", "Z"),
                               "--category", "software", "--reason", "driver update", key=key)
        _, ids, _ = self.cli("-q", "maintenance", "list", mid, key=key)
        self.assertIn(window["id"], ids.split())
        cancelled = self.cli_json("maintenance", "cancel", mid, window["id"], key=key)
        self.assertEqual(cancelled["state"], "cancelled")

        earnings = self.cli_json("earnings", key=key)
        api_earnings = self.provider.c.get(f"{API}/providers/me/earnings").body
        self.assertEqual(earnings["totals"], api_earnings["totals"])
        self.assertEqual(earnings["rows"], api_earnings["rows"])

        settings = self.cli_json("payout-settings", "set", "--schedule", "monthly",
                                 "--threshold", "25", key=key)
        self.assertEqual((settings["schedule"], settings["threshold_micro"]), ("monthly", 25_000_000))
        api_settings = self.provider.c.get(f"{API}/providers/me/payout-settings").body
        self.assertEqual((api_settings["schedule"], api_settings["threshold_micro"]),
                         ("monthly", 25_000_000))
        mine = self.cli_json("offers", "mine", key=key)
        self.assertEqual([o["id"] for o in mine],
                         [o["id"] for o in self.provider.c.get(f"{API}/providers/me/offers").body["items"]])
        # A customer's key is refused the provider's routes: 403, exit 4.
        self.cli("machines", "list", key=self.customer_key(), rc=4)

    def test_g_an_admin_decides_credits_and_checks_the_ledger(self):
        key = self.api_key(self.admin, ["read", "write", "admin"])
        applicant = self.srv.user("Ada Applicant")
        body = enterprise_application(unique_email("ada-contact"), full_name="Ada Applicant")
        body["submit"] = True
        r = applicant.c.post(f"{API}/provider-applications", body)
        self.assertEqual(r.status, 201, r)
        app_id = r.body["id"]
        _, ids, _ = self.cli("-q", "applications", "list", "--status", "submitted", "--limit", "0", key=key)
        self.assertIn(app_id, ids.split())
        args = ["applications", "decide", app_id, "approve", "--tier", r.body["suggested_tier"]]
        decided = self.cli_json(*args, key=key)
        self.assertEqual(decided["status"], "approved")
        self.assertEqual(applicant.c.get(f"{API}/provider-applications/{app_id}").body["status"],
                         "approved")

        before = self.customer.c.get(f"{API}/me/balance").body["balance_micro"]
        credited = self.cli_json("credits", "add", "--email", self.customer.email,
                                 "--amount", "1.5", "--reference", "cli goodwill", key=key)
        self.assertEqual(credited["balance_micro"], before + 1_500_000)
        self.assertEqual(self.customer.c.get(f"{API}/me/balance").body["balance_micro"],
                         before + 1_500_000)
        check = self.cli_json("ledger", "check", key=key)
        self.assertTrue(check["ok"], check)
        self.assertEqual(check["sum_micro"], 0)
        # The customer is no admin: exit 4.
        self.cli("ledger", "check", key=self.customer_key(), rc=4)

    def test_h_completion_scripts_parse(self):
        _, script, _ = self.cli("completion", "bash")
        self.assertIn("port-forward", script)
        self.assertIn("complete -F _gpunex gpunex", script)
        p = subprocess.run(["bash", "-n"], input=script.encode(), capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        # Completing `gpunex rentals ` offers the rentals' verbs.
        probe = script + '\nCOMP_WORDS=(gpunex rentals ""); COMP_CWORD=2; _gpunex; echo "${COMPREPLY[@]}"\n'
        p = subprocess.run(["bash", "-c", probe], capture_output=True)
        words = p.stdout.decode().split()
        for verb in ("create", "list", "logs", "ssh", "exec", "port-forward", "cp", "wait"):
            self.assertIn(verb, words)
        _, zsh, _ = self.cli("completion", "zsh")
        self.assertTrue(zsh.startswith("#compdef gpunex"))


if __name__ == "__main__":
    unittest.main()
