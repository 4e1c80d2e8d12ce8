#!/usr/bin/python3
"""Generates the release-0.1 upgrade fixture: a SQLite database written by release 0.1 of
gpunexd and the API answers that release gave for it (see README.md in this folder).

Run by hand, with release 0.1's gpunexd (NOT a build of the current tree):

    cd tests/e2e/upgrade
    GPUNEXD=/path/to/release-0.1/gpunexd /usr/bin/python3 make_fixture.py

It writes, next to this script:

  release-0.1.sql           the database as SQL text (sqlite3's iterdump)
  release-0.1-answers.json  the credentials, the saved broken drafts, and for every request
                            of a fixed list the status and JSON body release 0.1 gave

What it does:

1. starts gpunexd (SQLite, allow_emulated_gpus, benchmarks with a fast tick, an SMTP
   sink) and builds the data set through the public API and fake agents on the agent
   WebSocket (tests/e2e/test_agent_channel.FakeAgent): an admin and users with fixed
   emails and passwords, sessions (one logged out), login failures, API keys (one
   revoked), provider applications in every status (approved community and enterprise,
   rejected, needs_info, submitted, resubmitted, drafts, and the three drafts release 0.1
   stores badly: `{}`, a contact with "email": null, a location with no country), their
   history, notifications (some read), emails (sent while the sink runs, failing after it
   stops), agent tokens (one revoked, one rotated), three machines with EMULATED GPUs
   (l4-24gb, h100-sxm-80gb, a100-sxm-80gb), heartbeats with telemetry, a machine that
   went offline and came back, a disabled GPU, benchmark runs (passed, failed with a
   delisted GPU, error), workloads (exited with an exit code, failed, refused) with logs,
   and a GPU model added by the admin;
2. disconnects the agents, waits until every machine is offline, stops gpunexd (SIGTERM)
   and dumps the database;
3. loads the dump into a fresh data directory, starts release 0.1 on it with the
   configuration test_upgrade.py uses (stored in the answers file) and replays the
   request list, logging in again with the known passwords (or using API keys); this is
   done twice and the two captures are diffed, so that a field that changes between two
   fresh starts shows up (the script fails if one changes that is not in VOLATILE).

Options:
  --capture-only   keep release-0.1.sql, recapture the answers only (same ids)
  --keep           keep the data directories (printed) for inspection
"""

import argparse
import copy
import json
import os
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.dirname(HERE)
sys.path.insert(0, E2E)

import harness  # noqa: E402
from harness import (ADMIN_EMAIL, ADMIN_PASSWORD, AGENT_TOKEN_RE, API, Gpunexd,  # noqa: E402
                     SmtpSink, community_application, enterprise_application, gpu_entry)
from test_agent_channel import H100, L4, FakeAgent, wait_until  # noqa: E402
from upgrade.volatility import is_volatile  # noqa: E402

SQL_PATH = os.path.join(HERE, "release-0.1.sql")
ANSWERS_PATH = os.path.join(HERE, "release-0.1-answers.json")
RELEASE = "0.1"

# --------------------------------------------------------------------------- configuration

# While the data set is built: fast heartbeats and Offline, benchmarks scheduled at once
# (tick_ms), no periodic re-runs during the run (interval_s), machine figures not judged.
GEN_ROOT_TOML = "allow_emulated_gpus = true"
GEN_EXTRA_TOML = """
[fleet]
heartbeat_interval_s = 1
offline_after_s = 3
hello_timeout_s = 3

[benchmarks]
tick_ms = 100
interval_s = 3600
retry_after_s = 3600
sustain_s = 0
storage_file_mb = 8
storage_seconds = 1
network_mb = 4
pings = 3

[benchmarks.thresholds]
download_mbit_s = 0
upload_mbit_s = 0
rtt_p50_ms = 100000
seq_read_mb_s = 0
seq_write_mb_s = 0
rand_read_iops = 0
"""

# When the answers are captured, and in test_upgrade.py: the harness defaults (no SMTP:
# the outbox waits; benchmarks disabled) plus the emulated machines and the fleet timing.
CAPTURE_ROOT_TOML = "allow_emulated_gpus = true"
CAPTURE_EXTRA_TOML = """
[fleet]
heartbeat_interval_s = 1
offline_after_s = 3
hello_timeout_s = 3
"""

# Fields whose value is derived from "now" or from the request itself, not from the
# stored data: a comparison of answers must ignore them. Each: a regular expression for
# the request path (with its query), a field path ("." between parts, "*" any one key or
# list index, "**" any number of them), and optionally "when_null": the field is only
# volatile in an object whose sibling field of that name is null.
VOLATILE = [
    # Seen to change between two fresh starts on the same database:
    {"path": r"^/api/v1/me$", "field": "csrf_token",
     "why": "a new session per login: only in answers to session logins"},
    {"path": r"^/api/v1/api-keys$", "field": "items.*.last_used_at",
     "why": "the replay itself uses the API keys it lists"},
    # Derived from the clock (cannot change within one capture, will change by the time
    # a later test runs):
    {"path": r"^/api/v1/provider-applications", "field": "**.age_business_days",
     "when_null": "decided_at",
     "why": "business days from submission until now while undecided (submitted, needs_info)"},
    {"path": r"^/api/v1/provider-applications", "field": "**.overdue",
     "when_null": "decided_at",
     "why": "age_business_days against the target while submitted"},
    # Machines after a restart: what an agent connection does, not what was stored (every
    # machine is Offline in the fixture, but a new release may settle state at start):
    {"path": r"^/api/v1/machines(\?.*)?$", "field": "items.*.status",
     "why": "the connection state now"},
    {"path": r"^/api/v1/machines(\?.*)?$", "field": "items.*.last_seen",
     "why": "the last heartbeat"},
    {"path": r"^/api/v1/machines(\?.*)?$", "field": "items.*.status_since",
     "why": "changes with status"},
    {"path": r"^/api/v1/machines/[^/?]+$", "field": "status", "why": "as above"},
    {"path": r"^/api/v1/machines/[^/?]+$", "field": "last_seen", "why": "as above"},
    {"path": r"^/api/v1/machines/[^/?]+$", "field": "status_since", "why": "as above"},
    {"path": r"^/api/v1/machines/[^/?]+$", "field": "connected_here",
     "why": "whether an agent is connected to this process now"},
]

# --------------------------------------------------------------------------- the people

def _pw(label):
    return f"{label}-fixture-password-01"


# label: (login email, password, name)
USERS = {
    "admin": (ADMIN_EMAIL, ADMIN_PASSWORD, "Rita Reviewer"),
    "pia": ("pia@example.com", _pw("pia"), "Pia Provider"),          # approved, community
    "ada": ("ada@example.com", _pw("ada"), "Ada Lovelace"),          # approved, enterprise
    "rex": ("rex@example.com", _pw("rex"), "Rex Rejected"),          # rejected
    "nina": ("nina@example.com", _pw("nina"), "Nina Needsinfo"),     # needs_info
    "sam": ("sam@example.com", _pw("sam"), "Sam Resubmitter"),       # needs_info → resubmitted
    "tess": ("tess@example.com", _pw("tess"), "Tess Queue"),         # submitted
    "dora": ("dora@example.com", _pw("dora"), "Dora Draft"),         # a well-formed draft
    "eve": ("eve@example.com", _pw("eve"), "Eve Empty"),             # broken draft: {}
    "nell": ("nell@example.com", _pw("nell"), "Nell Null"),          # broken draft: email null
    "milo": ("milo@example.com", _pw("milo"), "Milo Milan"),         # broken draft: no country
    "carl": ("carl@example.com", _pw("carl"), "Carl Customer"),      # customer with API keys
}

A100 = ("a100-sxm-80gb", "NVIDIA A100-SXM4-80GB", 81920)

# Reference figures of data/gpu-reference.csv at release 0.1.
REFS = {
    "l4-24gb": {"fp32": 30.3, "fp16": 30.3, "tensor": 121.0, "tf32": 60.0, "mem": 300.0},
    "h100-sxm-80gb": {"fp32": 66.9, "fp16": 133.8, "tensor": 989.4, "tf32": 494.7, "mem": 3350.0},
    "a100-sxm-80gb": {"fp32": 19.5, "fp16": 78.0, "tensor": 312.0, "tf32": 156.0, "mem": 2039.0},
}

GOOD_NETWORK = {"rtt_p50_ms": 1.0, "rtt_p99_ms": 3.0, "download_mbit_s": 900.0,
                "upload_mbit_s": 800.0}
GOOD_STORAGE = {"seq_read_mb_s": 1500.0, "seq_write_mb_s": 1200.0, "rand_read_iops": 90000.0,
                "rand_read_p50_us": 90.0, "rand_read_p99_us": 400.0, "direct_io": True}


def figures(catalog_id, factor=0.9, mem_factor=None, thermal=0.0):
    ref = REFS[catalog_id]
    mem = ref["mem"] * (factor if mem_factor is None else mem_factor)
    return {"tool": "gpunex-gpubench", "version": "1", "emulated": True,
            "device": {"pcie_gen": 4, "pcie_width": 16},
            "compute": {"fp32_tflops": ref["fp32"] * factor, "fp16_tflops": ref["fp16"] * factor,
                        "fp16_tensor_tflops": ref["tensor"] * factor,
                        "bf16_tensor_tflops": ref["tensor"] * factor,
                        "tf32_tensor_tflops": ref["tf32"] * factor},
            "memory": {"read_gbps": mem, "write_gbps": mem, "copy_gbps": mem, "triad_gbps": mem},
            "sustained": {"seconds": 60, "mean_tflops": 100, "min_over_median": 0.98, "cv": 0.01,
                          "thermal_throttle_fraction": thermal, "power_throttle_fraction": 0.0,
                          "max_temperature_c": 70, "mean_power_w": 70},
            "sanity": {"ok": True, "failures": []}}


# --------------------------------------------------------------------------- helpers


def check(resp, status, what):
    if resp.status != status:
        raise AssertionError(f"{what}: expected HTTP {status}, got {resp!r}")
    return resp.body


class Person:
    def __init__(self, srv, label):
        self.srv = srv
        self.label = label
        self.email, self.password, self.name = USERS[label]
        self.id = None
        self.token = None

    @property
    def c(self):
        return self.srv.client(self.token)

    def login(self):
        r = self.srv.client().post(f"{API}/auth/login",
                                   {"email": self.email, "password": self.password},
                                   headers={"User-Agent": f"fixture/{self.label}"})
        body = check(r, 200, f"login {self.label}")
        self.id = body["user"]["id"]
        self.token = body["token"]
        return body["token"]


def make_agent(srv, token, letter, models):
    """A FakeAgent with a fixed machine key, hostname and GPU UUIDs."""
    a = FakeAgent(srv, token, models=models, machine_key=f"mk-fixture-machine-{letter}-" + "0" * 40)
    a.hostname = f"fixture-rig-{letter}"
    for i, g in enumerate(a.gpus):
        g["uuid"] = f"GPU-emu-fixture-{letter}{letter}{letter}{letter}-0000-0000-{i:012x}"
    return a


def answer_benchmark(agent, cmd, figures_by_uuid, ok=True, error="docker engine unreachable"):
    agent.send({"type": "ack", "command_id": cmd["command_id"]})
    gpus = []
    for g in cmd["payload"]["gpus"]:
        f = figures_by_uuid.get(g["uuid"])
        gpus.append({"uuid": g["uuid"], "ok": True, "result": f} if isinstance(f, dict)
                    else {"uuid": g["uuid"], "ok": False, "error": f or "no GPU"})
    data = {"benchmark_id": cmd["payload"]["benchmark_id"], "emulated": True, "gpus": gpus}
    if cmd["payload"]["machine_phases"]:
        data["network"] = GOOD_NETWORK
        data["storage"] = GOOD_STORAGE
    msg = {"type": "result", "command_id": cmd["command_id"], "ok": ok, "data": data}
    if not ok:
        msg["error"] = error
    agent.send(msg)


def runs(user, mid):
    return check(user.c.get(f"{API}/machines/{mid}/benchmarks"), 200, "benchmarks")["items"]


def wait_run(user, mid, run_id, states, timeout=10):
    return wait_until(lambda: next((r for r in runs(user, mid)
                                    if r["id"] == run_id and r["state"] in states), None),
                      timeout, f"run {run_id} in {states}")


def workload(user, wid):
    return check(user.c.get(f"{API}/workloads/{wid}"), 200, "workload")


def wait_workload(user, wid, state, timeout=10):
    return wait_until(lambda: (lambda w: w if w["state"] == state else None)(workload(user, wid)),
                      timeout, f"workload {wid} {state}")


def machine(user, mid):
    return check(user.c.get(f"{API}/machines/{mid}"), 200, "machine")


# --------------------------------------------------------------------------- generation


def generate(keep=False):
    """Builds the data set with release 0.1; returns (sql text, meta)."""
    sink = SmtpSink()
    srv = Gpunexd("sqlite", sink.url, extra_toml=GEN_EXTRA_TOML, root_toml=GEN_ROOT_TOML)
    agents = []
    meta = {"broken_drafts": []}
    try:
        srv.start()
        return _build(srv, sink, agents, meta)
    except BaseException:
        print(f"--- gpunexd logs (data in {srv.tmp}) ---\n" + srv.logs()[-8000:], file=sys.stderr)
        keep = True
        raise
    finally:
        for a in agents:
            try:
                a.cleanup()
            except Exception:  # best effort
                pass
        if sink.controller._thread is not None:
            sink.stop()
        srv.cleanup(keep=keep)
        if keep:
            print(f"generation data kept in {srv.tmp}")


def _build(srv, sink, agents, meta):
    srv.create_admin(ADMIN_EMAIL, ADMIN_PASSWORD, USERS["admin"][2])
    people = {k: Person(srv, k) for k in USERS}
    for label, p in people.items():
        if label != "admin":
            r = srv.client().post(f"{API}/auth/signup",
                                  {"email": p.email, "password": p.password, "name": p.name})
            check(r, 201, f"signup {label}")
        p.login()
    admin, pia, ada, carl = people["admin"], people["pia"], people["ada"], people["carl"]

    # --- sessions: Carl logs in on a second device and logs that one out
    second = Person(srv, "carl")
    second.login()
    check(second.c.post(f"{API}/auth/logout"), 204, "logout")
    # --- login failures
    for email, pw in (("carl@example.com", "wrong-password-1"), ("carl@example.com", "wrong-password-2"),
                      ("mallory@example.com", "guessing-123456"), (ADMIN_EMAIL, "not-the-admin-pw")):
        r = srv.client().post(f"{API}/auth/login", {"email": email, "password": pw})
        check(r, 401, f"bad login {email}")

    # --- API keys (one revoked)
    keys = {}
    for owner, name in ((carl, "ci pipeline"), (carl, "old laptop"), (admin, "admin cli"),
                        (pia, "pia automation")):
        body = check(owner.c.post(f"{API}/api-keys", {"name": name}), 201, "api key")
        keys[(owner.label, name)] = body
    check(carl.c.delete(f"{API}/api-keys/{keys[('carl', 'old laptop')]['id']}"), 204, "revoke key")
    meta["api_keys"] = {"carl": keys[("carl", "ci pipeline")]["key"],
                        "admin": keys[("admin", "admin cli")]["key"]}

    apps = {}

    # --- approved, community: Pia
    body = community_application("pia.ops@example.net", full_name="Pia Provider")
    body["gpus"].append(gpu_entry("l4-24gb", 2, 128, 1, 1, city="Turin", country="IT",
                                  region="eu-south"))
    body["submit"] = True
    apps["pia"] = check(pia.c.post(f"{API}/provider-applications", body), 201, "pia app")["id"]
    check(admin.c.post(f"{API}/provider-applications/{apps['pia']}/decision",
                       {"decision": "approve", "tier": "community"}), 200, "approve pia")

    # --- approved, enterprise: Ada (created as a draft, edited, submitted)
    body = enterprise_application("ada.ops@example.net", full_name="Ada Lovelace")
    draft = {"contact": body["contact"], "gpus": body["gpus"][:1]}
    apps["ada"] = check(ada.c.post(f"{API}/provider-applications", draft), 201, "ada draft")["id"]
    check(ada.c.put(f"{API}/provider-applications/{apps['ada']}", body), 200, "ada edit")
    check(ada.c.post(f"{API}/provider-applications/{apps['ada']}/submit"), 200, "ada submit")
    check(admin.c.post(f"{API}/provider-applications/{apps['ada']}/decision",
                       {"decision": "approve", "tier": "enterprise",
                        "message": "Welcome aboard: listed as Enterprise."}), 200, "approve ada")

    # --- rejected: Rex
    body = community_application("rex.ops@example.net", full_name="Rex Rejected")
    body["submit"] = True
    apps["rex"] = check(people["rex"].c.post(f"{API}/provider-applications", body), 201, "rex")["id"]
    check(admin.c.post(f"{API}/provider-applications/{apps['rex']}/decision",
                       {"decision": "reject",
                        "message": "Residential connection below 1 Gbps: not suitable at this time."}),
          200, "reject rex")

    # --- needs_info then resubmitted (back in the queue): Sam
    body = enterprise_application("sam.ops@example.net", full_name="Sam Resubmitter",
                                  company="Sam's Racks")
    body["submit"] = True
    apps["sam"] = check(people["sam"].c.post(f"{API}/provider-applications", body), 201, "sam")["id"]
    check(admin.c.post(f"{API}/provider-applications/{apps['sam']}/decision",
                       {"decision": "request_info",
                        "message": "Which UPS model, and how long does it hold the rack?"}),
          200, "request info sam")
    body = copy.deepcopy(body)
    del body["submit"]
    body["infrastructure"]["maintenance_notes"] = "APC Smart-UPS SRT 10kVA, 25 minutes at full load"
    check(people["sam"].c.put(f"{API}/provider-applications/{apps['sam']}", body), 200, "sam edit")
    check(people["sam"].c.post(f"{API}/provider-applications/{apps['sam']}/submit"), 200, "sam resubmit")

    # --- submitted: Tess
    body = community_application("tess.ops@example.net", full_name="Tess Queue")
    body["submit"] = True
    apps["tess"] = check(people["tess"].c.post(f"{API}/provider-applications", body), 201, "tess")["id"]

    # --- a well-formed draft: Dora (edited once)
    body = {"contact": {"full_name": "Dora Draft", "email": "dora.ops@example.net",
                        "company": "Draft Compute"},
            "gpus": [gpu_entry("l40s-48gb", 4, 256, 2, 2, city="Lyon", country="FR",
                               region="eu-west")]}
    apps["dora"] = check(people["dora"].c.post(f"{API}/provider-applications", body), 201, "dora")["id"]
    body["infrastructure"] = {"ups": True}
    check(people["dora"].c.put(f"{API}/provider-applications/{apps['dora']}", body), 200, "dora edit")

    # --- Nina's submission (the needs_info comes later, once the sink is down)
    body = community_application("nina.ops@example.net", full_name="Nina Needsinfo")
    body["submit"] = True
    apps["nina"] = check(people["nina"].c.post(f"{API}/provider-applications", body), 201, "nina")["id"]

    # --- the approval emails carry the first agent tokens
    def first_token(addr):
        for m in sink.wait_for_addr(addr, 2, timeout=20):
            found = AGENT_TOKEN_RE.search(m.body)
            if found:
                return found.group(0)
        raise AssertionError(f"no agent token in the mail to {addr}")

    pia_token = first_token("pia.ops@example.net")
    ada_token = first_token("ada.ops@example.net")

    # --- more agent tokens: Pia's "rack 2" (rotated later), Ada's "spare" (revoked)
    rack2 = check(pia.c.post(f"{API}/providers/me/agent-tokens", {"name": "rack 2"}), 201, "rack 2")
    spare = check(ada.c.post(f"{API}/providers/me/agent-tokens", {"name": "spare"}), 201, "spare")
    check(ada.c.delete(f"{API}/providers/me/agent-tokens/{spare['id']}"), 204, "revoke spare")

    # --- a GPU model added by the admin
    check(admin.c.post(f"{API}/gpu-models", {
        "id": "rtx5090-32gb", "name": "NVIDIA GeForce RTX 5090", "vram_gb": 32,
        "fp32_tflops": 104.8, "fp16_tflops": 104.8, "fp16_tensor_tflops": 419.0,
        "tf32_tensor_tflops": 104.8, "mem_bw_gbps": 1792, "default_price_micro": 700000}),
        201, "gpu model")

    # --- machines: A (Pia, 2x L4), B (Ada, 2x H100), C (Pia's rack 2, 1x A100)
    a = make_agent(srv, pia_token, "a", (L4, L4))
    b = make_agent(srv, ada_token, "b", (H100, H100))
    c = make_agent(srv, rack2["token"], "c", (A100,))
    agents += [a, b, c]
    for ag in (a, b, c):
        ag.join()
    ma, mb, mc = a.machine_id, b.machine_id, c.machine_id

    # first_connect benchmarks: A and B pass, C's fails to run (error)
    cmd = a.expect_command("run_benchmark", timeout=10)
    answer_benchmark(a, cmd, {g["uuid"]: figures("l4-24gb", 0.9) for g in a.gpus})
    cmd = b.expect_command("run_benchmark", timeout=10)
    answer_benchmark(b, cmd, {g["uuid"]: figures("h100-sxm-80gb", 0.92) for g in b.gpus})
    cmd = c.expect_command("run_benchmark", timeout=10)
    answer_benchmark(c, cmd, {}, ok=False, error="docker engine unreachable: /var/run/docker.sock")
    wait_run(pia, ma, runs(pia, ma)[0]["id"], ("passed",))
    wait_run(ada, mb, runs(ada, mb)[0]["id"], ("passed",))
    wait_run(pia, mc, runs(pia, mc)[0]["id"], ("error",))

    ga = [g["id"] for g in machine(pia, ma)["gpus"]]
    gb = [g["id"] for g in machine(ada, mb)["gpus"]]

    # --- workloads on A: one exits with an exit code, one fails while running; on B one
    # is refused by the agent
    w1 = check(pia.c.post(f"{API}/workloads", {
        "machine_id": ma, "gpu_ids": [ga[0]], "image": "gpunex-test/busybox:1",
        "command": ["sh", "-c", "echo hello from the fixture; echo careful >&2; exit 3"],
        "env": {"FIXTURE": "release-0.1"}, "memory_mb": 2048}), 201, "workload 1")["id"]
    start = a.expect_command("start_workload")
    a.send({"type": "ack", "command_id": start["command_id"]})
    a.send({"type": "result", "command_id": start["command_id"], "ok": True, "data": {"workload_id": w1}})
    a.send({"type": "workload_event", "workload_id": w1, "state": "running",
            "container_id": "fixture-container-1", "reason": "", "exit_code": None})
    wait_workload(pia, w1, "running")
    a.send({"type": "logs", "workload_id": w1, "stream": "stdout", "seq": 0,
            "data": "hello from the fixture\n"})
    a.send({"type": "logs", "workload_id": w1, "stream": "stderr", "seq": 0, "data": "careful\n"})
    a.send({"type": "logs", "workload_id": w1, "stream": "stdout", "seq": 1, "data": "done: ünïcödé ✓\n"})
    a.send({"type": "workload_event", "workload_id": w1, "state": "exited", "exit_code": 3,
            "container_id": "fixture-container-1", "reason": ""})
    wait_workload(pia, w1, "exited")
    wait_until(lambda: len(check(pia.c.get(f"{API}/workloads/{w1}/logs"), 200, "logs")["items"]) == 3,
               5, "workload 1 logs")

    w2 = check(admin.c.post(f"{API}/workloads", {
        "machine_id": ma, "gpu_ids": [ga[1]], "image": "gpunex-test/cuda:12",
        "command": ["python3", "train.py", "--epochs", "3"]}), 201, "workload 2")["id"]
    start = a.expect_command("start_workload")
    a.send({"type": "ack", "command_id": start["command_id"]})
    a.send({"type": "result", "command_id": start["command_id"], "ok": True, "data": {"workload_id": w2}})
    a.send({"type": "workload_event", "workload_id": w2, "state": "running",
            "container_id": "fixture-container-2", "reason": "", "exit_code": None})
    wait_workload(admin, w2, "running")
    a.send({"type": "logs", "workload_id": w2, "stream": "stdout", "seq": 0, "data": "epoch 1/3\n"})
    a.send({"type": "logs", "workload_id": w2, "stream": "stderr", "seq": 0,
            "data": "RuntimeError: CUDA error: out of memory\n"})
    a.send({"type": "workload_event", "workload_id": w2, "state": "failed", "exit_code": 1,
            "container_id": "fixture-container-2", "reason": "CUDA error: out of memory"})
    wait_workload(admin, w2, "failed")
    wait_until(lambda: len(check(admin.c.get(f"{API}/workloads/{w2}/logs"), 200, "logs")["items"]) == 2,
               5, "workload 2 logs")

    w3 = check(ada.c.post(f"{API}/workloads", {
        "machine_id": mb, "gpu_ids": [gb[0], gb[1]], "image": "gpunex-test/missing:0",
        "command": ["true"]}), 201, "workload 3")["id"]
    start = b.expect_command("start_workload")
    b.send({"type": "ack", "command_id": start["command_id"]})
    b.send({"type": "result", "command_id": start["command_id"], "ok": False,
            "error": "image pull failed: gpunex-test/missing:0 not found"})
    wait_workload(ada, w3, "failed")

    # --- a re-run on A that Pia asks for: GPU 1 comes back slow → failed, delisted
    req = check(pia.c.post(f"{API}/machines/{ma}/benchmarks", {}), 202, "re-run")
    cmd = a.expect_command("run_benchmark")
    answer_benchmark(a, cmd, {a.gpus[0]["uuid"]: figures("l4-24gb", 0.95),
                              a.gpus[1]["uuid"]: figures("l4-24gb", 0.9, mem_factor=0.5, thermal=0.6)})
    wait_run(pia, ma, req["id"], ("failed",))

    # --- Ada disables GPU 1 of B
    check(ada.c.request("PATCH", f"{API}/machines/{mb}/gpus/{gb[1]}", {"enabled": False}), 200, "disable")

    # --- B goes offline and comes back (same machine key)
    b.disconnect()
    wait_until(lambda: machine(ada, mb)["status"] == "offline", 10, "B offline")
    b.join()
    wait_until(lambda: machine(ada, mb)["status"] == "online", 5, "B online again")

    # --- Pia rotates "rack 2": C's connection is closed; C comes back with the new token
    rotated = check(pia.c.post(f"{API}/providers/me/agent-tokens/{rack2['id']}/rotate"), 201, "rotate")
    c.stop_heartbeats()
    c.ws.wait_closed(5)
    c.token = rotated["token"]
    c.join()

    # --- telemetry for a while, changing
    for util in (12, 64, 97):
        for ag in (a, b, c):
            ag.utilization = util
        time.sleep(1.5)

    # --- notifications: Pia reads one, Ada reads all
    items = check(pia.c.get(f"{API}/notifications"), 200, "notifications")["items"]
    check(pia.c.post(f"{API}/notifications/{items[-1]['id']}/read"), 204, "read one")
    check(ada.c.post(f"{API}/notifications/read-all"), 200, "read all")

    # --- the mail server goes away: later emails stay in the outbox, failing
    wait_until(lambda: all(row[6] == "sent" for row in srv.outbox()), 20, "every email so far sent")
    sink.stop()
    check(admin.c.post(f"{API}/provider-applications/{apps['nina']}/decision",
                       {"decision": "request_info",
                        "message": "Please send a photo of the rack and the ISP contract."}),
          200, "request info nina")

    # --- the drafts release 0.1 stores badly (after them, admin lists answer 500)
    broken = [
        ("eve", "empty_body", {}),
        ("nell", "null_email", {"contact": {"full_name": "Nell Null", "email": None,
                                            "company": "Null & Void Ltd"},
                                "gpus": [gpu_entry("rtx4090-24gb", 2, 64, 1, 1, city="Vienna",
                                                   country="AT", region="eu-central")]}),
        ("milo", "no_country", {"contact": {"full_name": "Milo Milan", "email": "milo.ops@example.net",
                                            "company": "Navigli GPU"},
                                "gpus": [{"model": "a100-pcie-80gb", "quantity": 4, "system_ram_gb": 512,
                                          "upload_gbps": 2, "download_gbps": 2,
                                          "availability": {"kind": "always"},
                                          "location": {"city": "Milan"}}],
                                "infrastructure": {"ups": True, "commitment_months": 6}}),
    ]
    for label, kind, saved in broken:
        r = people[label].c.post(f"{API}/provider-applications", saved)
        created = check(r, 201, f"broken draft {kind}")
        apps[label] = created["id"]
        got = people[label].c.get(f"{API}/provider-applications/{created['id']}")
        meta["broken_drafts"].append({
            "id": created["id"], "owner": label, "kind": kind, "saved": saved,
            "created_answer": {"status": r.status, "body": created},
            "read_back_status_at_creation": got.status})
    check(admin.c.get(f"{API}/provider-applications"), 500, "the admin list, broken")

    # --- the end: agents leave, every machine goes offline, gpunexd stops
    for ag in (a, b, c):
        ag.disconnect()
    wait_until(lambda: all(m["status"] == "offline" for m in
                           check(admin.c.get(f"{API}/machines"), 200, "machines")["items"]),
               15, "all machines offline")
    time.sleep(0.5)
    srv.stop()
    if srv.proc.returncode not in (0, None):
        raise AssertionError(f"gpunexd exited with {srv.proc.returncode}")

    meta.update({
        "applications": apps,
        "machines": {"a": {"id": ma, "owner": "pia", "gpus": ga}, "b": {"id": mb, "owner": "ada", "gpus": gb},
                     "c": {"id": mc, "owner": "pia"}},
        "workloads": {"w1": {"id": w1, "provider": "pia"}, "w2": {"id": w2, "provider": "pia"},
                      "w3": {"id": w3, "provider": "ada"}},
    })
    return dump(srv.backend.db_path), meta


def dump(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return "\n".join(conn.iterdump()) + "\n"
    finally:
        conn.close()


def load(sql_text, db_path):
    """The fixture's SQL into a new SQLite file (what test_upgrade.py does)."""
    conn = sqlite3.connect(db_path)
    try:
        conn.executescript(sql_text)
        conn.commit()
    finally:
        conn.close()


# --------------------------------------------------------------------------- the requests


def expected_application_ids(db_path, owner_id=None, status=None):
    """The ids a list of applications holds, in its order (created_at, id; submitted_at
    for status=submitted, the review queue)."""
    key = "submitted_at" if status == "submitted" else "created_at"
    sql = "SELECT id FROM provider_applications WHERE 1 = 1"
    params = []
    if owner_id:
        sql += " AND user_id = ?"
        params.append(owner_id)
    if status:
        sql += " AND status = ?"
        params.append(status)
    conn = sqlite3.connect(db_path)
    try:
        return [r[0] for r in conn.execute(sql + f" ORDER BY {key}, id", params)]
    finally:
        conn.close()


def user_ids(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return {r[1]: r[0] for r in conn.execute("SELECT id, email FROM users")}
    finally:
        conn.close()


def request_list(meta):
    """[(method, path, credential label or None)] in a fixed order."""
    reqs = []
    add = lambda path, who: reqs.append(("GET", API + path, who))  # noqa: E731
    for label in USERS:
        add("/me", label)
    add("/me", "carl-key")
    add("/me", "admin-key")
    for q in ("", "?status=draft", "?status=submitted", "?status=needs_info", "?status=approved",
              "?status=rejected", "?limit=200"):
        add("/provider-applications" + q, "admin")
    add("/provider-applications?status=submitted", "admin-key")
    for label in USERS:
        if label != "admin":
            add("/provider-applications", label)
    for owner, app_id in meta["applications"].items():
        add(f"/provider-applications/{app_id}", owner)
        add(f"/provider-applications/{app_id}", "admin")
    for label in ("pia", "ada", "carl"):
        add("/providers/me", label)
        add("/providers/me/agent-tokens", label)
    for label in ("admin", "pia", "ada", "carl"):
        add("/machines", label)
    for m in meta["machines"].values():
        for who in (m["owner"], "admin"):
            add(f"/machines/{m['id']}", who)
            add(f"/machines/{m['id']}/benchmarks", who)
    add(f"/machines/{meta['machines']['a']['id']}", "ada")  # another provider's: 404
    for label in ("admin", "pia", "ada", "carl"):
        add("/workloads", label)
    add(f"/workloads?machine_id={meta['machines']['a']['id']}", "pia")
    for w in meta["workloads"].values():
        for who in (w["provider"], "admin"):
            add(f"/workloads/{w['id']}", who)
            add(f"/workloads/{w['id']}/logs", who)
    for label in USERS:
        add("/notifications", label)
    add("/notifications?unread=true", "pia")
    add("/gpu-models", None)
    for label in ("admin", "pia", "carl"):
        add("/api-keys", label)
    add("/api-keys", "carl-key")
    return reqs


def credentials(meta):
    creds = {label: {"email": e, "password": pw} for label, (e, pw, _) in USERS.items()}
    creds["carl-key"] = {"api_key": meta["api_keys"]["carl"]}
    creds["admin-key"] = {"api_key": meta["api_keys"]["admin"]}
    return creds


class Replayer:
    """Logs in once per credential label (fresh sessions) and sends requests."""

    def __init__(self, srv, creds):
        self.srv = srv
        self.creds = creds
        self.tokens = {}

    def token(self, who):
        if who is None:
            return ""
        if who not in self.tokens:
            cred = self.creds[who]
            if "api_key" in cred:
                self.tokens[who] = cred["api_key"]
            else:
                r = self.srv.client().post(f"{API}/auth/login",
                                           {"email": cred["email"], "password": cred["password"]})
                self.tokens[who] = check(r, 200, f"login {who}")["token"]
        return self.tokens[who]

    def send(self, method, path, who):
        return self.srv.client().request(method, path, token=self.token(who))


def capture(sql_text, meta, keep=False):
    srv = Gpunexd("sqlite", None, extra_toml=CAPTURE_EXTRA_TOML, root_toml=CAPTURE_ROOT_TOML)
    try:
        load(sql_text, srv.backend.db_path)
        srv.start()
        rep = Replayer(srv, credentials(meta))
        out = []
        for method, path, who in request_list(meta):
            r = rep.send(method, path, who)
            out.append({"method": method, "path": path, "as": who, "status": r.status, "body": r.body})
        return out, srv.backend.db_path
    finally:
        srv.stop()
        if keep:
            print(f"capture data kept in {srv.tmp}")
        srv.cleanup(keep=keep)


# --------------------------------------------------------------------------- volatility


def diff(a, b, path=()):
    """Paths (tuples) where two JSON values differ, with the parent object."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append((path + (k,), a))
            elif isinstance(a[k], (dict, list)):
                out += diff(a[k], b[k], path + (k,))
            elif a[k] != b[k]:
                out.append((path + (k,), a))
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((path, None))
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, path + (str(i),))
    elif a != b:
        out.append((path, None))
    return out


def compare_captures(first, second):
    """Prints every difference; returns the ones not covered by VOLATILE."""
    unexplained = []
    for x, y in zip(first, second):
        where = f"{x['method']} {x['path']} as {x['as']}"
        if x["status"] != y["status"]:
            unexplained.append(f"{where}: status {x['status']} vs {y['status']}")
            continue
        for p, parent in diff(x["body"], y["body"]):
            vol = is_volatile(VOLATILE, x["path"], p, parent)
            line = f"{where}: {'.'.join(p)}"
            print(("  volatile  " if vol else "  CHANGED   ") + line)
            if not vol:
                unexplained.append(line)
    return unexplained


# --------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--capture-only", action="store_true")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    binary = harness.gpunexd_binary()
    commit_file = os.path.join(os.path.dirname(os.path.abspath(binary)), "COMMIT")
    commit = open(commit_file).read().strip() if os.path.exists(commit_file) else "unknown"

    if args.capture_only:
        with open(SQL_PATH, encoding="utf-8") as f:
            sql_text = f.read()
        with open(ANSWERS_PATH, encoding="utf-8") as f:
            old = json.load(f)
        meta = dict(old["meta"], broken_drafts=old["broken_drafts"])
    else:
        t0 = time.monotonic()
        sql_text, meta = generate(keep=args.keep)
        print(f"generated in {time.monotonic() - t0:.1f}s: {len(sql_text)} bytes of SQL")

    first, db1 = capture(sql_text, meta, keep=args.keep)
    time.sleep(2.0)  # so that anything derived from the clock can differ
    second, _ = capture(sql_text, meta, keep=args.keep)
    print("differences between two captures:")
    unexplained = compare_captures(first, second)

    # Facts about the data set for the test: the schema version, and the ids each list of
    # applications must hold where release 0.1 answered 500.
    scratch = os.path.join(HERE, ".scratch.db")
    if os.path.exists(scratch):
        os.remove(scratch)
    load(sql_text, scratch)
    try:
        conn = sqlite3.connect(scratch)
        schema_version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
        counts = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for (t,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")}
        conn.close()
        ids = user_ids(scratch)
        creds = credentials(meta)
        for a in first:
            if a["status"] != 500 or not a["path"].startswith(f"{API}/provider-applications"):
                continue
            path, _, query = a["path"].partition("?")
            if path != f"{API}/provider-applications":
                a["expect"] = {"application": path.rsplit("/", 1)[1]}
                continue
            q = dict(p.split("=", 1) for p in query.split("&") if p)
            who = a["as"]
            owner = None if who.startswith("admin") else ids[creds[who]["email"]]
            a["expect"] = {"application_ids": expected_application_ids(scratch, owner, q.get("status"))}
    finally:
        os.remove(scratch)

    answers = {
        "release": RELEASE,
        "commit": commit,
        "schema_version": schema_version,
        "row_counts": counts,
        "server_config": {"root_toml": CAPTURE_ROOT_TOML, "extra_toml": CAPTURE_EXTRA_TOML},
        "volatile": VOLATILE,
        "credentials": creds,
        "broken_drafts": meta["broken_drafts"],
        "meta": {k: v for k, v in meta.items() if k != "broken_drafts"},
        "requests": first,
    }
    if not args.capture_only:
        with open(SQL_PATH, "w", encoding="utf-8") as f:
            f.write(sql_text)
    with open(ANSWERS_PATH, "w", encoding="utf-8") as f:
        json.dump(answers, f, indent=1, ensure_ascii=False)
        f.write("\n")
    statuses = {}
    for a in first:
        statuses[a["status"]] = statuses.get(a["status"], 0) + 1
    print(f"wrote {SQL_PATH} ({os.path.getsize(SQL_PATH)} bytes) and {ANSWERS_PATH}: "
          f"{len(first)} requests, statuses {dict(sorted(statuses.items()))}; schema version "
          f"{schema_version}; rows {counts}")
    if unexplained:
        print("fields that changed between captures and are not in VOLATILE:\n  "
              + "\n  ".join(unexplained), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
