#!/usr/bin/python3
"""Load driver: how many agent connections with heartbeats one gpunexd holds.

Simulates agents over the real agent protocol (WebSocket, hello with one emulated GPU,
a heartbeat every HEARTBEAT seconds) in one asyncio process, in steps of growing size.
For each step it prints how many agents were welcomed, how long the welcomes took, how
many machines the API shows Online after two heartbeat periods, and gpunexd's resident
memory and CPU use over the step.

    bench/agent_load.py --url http://127.0.0.1:PORT --token gpx_a_...[,gpx_a_...] \
        --api-token gpx_s_... --pid PID[,PID...] [--steps 250,500,1000] [--heartbeat 10] \
        [--prices LO:HI] [--hold] [--latency-out FILE [--measure 10]]

--token takes several agent tokens, comma-separated: agent i connects with the (i mod n)-th,
so that a proxy balancing on the Authorization header (deploy/cluster/haproxy.cfg) spreads
the agents over its instances. --pid takes several processes too: their memory and CPU are
added up.

--prices LO:HI gives each simulated machine its own price for its GPU (a machine price
override, PUT /api/v1/machines/{id}/prices with the --api-token session, which must be the
provider's), spread evenly from LO to HI micro-USDC per GPU-hour, after the step's agents
are all welcomed (8 requests at a time, so the hellos do not wait behind them).
--settle S waits S seconds (default two heartbeat periods) after a step's welcomes before
counting the machines Online.
--hello-retries N: an agent refused before its welcome (closed, an error) connects again
1 s later, up to N times, as gpunex-agent does; the step's row counts the retries.
--hold keeps the agents connected after the last step (or after the step where some
failed) until the process is stopped (SIGTERM or SIGINT), printing "holding N agents" with
the number still connected.
--latency-out FILE measures how fast heartbeats are handled: every agent sends a ping
({"type":"ping","id":SEQ}) right after each heartbeat; the platform handles one agent's
messages one at a time, in order, and answers the ping with a pong at once, so the time
from the heartbeat's send to the pong is the heartbeat's handling plus the round trip. The
window starts once the last step is over (its agents all welcomed, --settle later) and
lasts --measure seconds (the driver prints "measuring" as it opens); then the driver waits
up to 5 s more for the pongs of heartbeats sent in it, and writes FILE, one line:
  result agents=N held=H retries=R seconds=S sent=X answered=A unanswered=U sent_per_s=
         handled_per_s= p50_ms= p90_ms= p99_ms= max_ms=
retries: hellos refused and tried again (--hello-retries); sent: heartbeats sent in the
window; handled_per_s: pongs received in the window a second; the percentiles are over the
heartbeats sent in the window, a heartbeat whose pong did not come counting as slower than
any (then p99_ms reads "inf"). It prints the line too.

bench/agent_load.sh starts a throw-away gpunexd and runs this with sensible defaults;
bench/offers_http_bench.sh uses --prices and --hold to keep thousands of offers listed."""
import argparse
import asyncio
import base64
import concurrent.futures
import hashlib
import json
import math
import os
import signal
import struct
import sys
import time
import urllib.request


def frame(text):
    payload = text.encode()
    mask = os.urandom(4)
    head = bytes([0x81])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def read_frame(reader):
    b1, b2 = await reader.readexactly(2)
    n = b2 & 0x7F
    if n == 126:
        n = struct.unpack("!H", await reader.readexactly(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", await reader.readexactly(8))[0]
    data = await reader.readexactly(n)
    return b1 & 0x0F, data


class Agent:
    def __init__(self, i, args):
        self.i, self.args = i, args
        self.key = base64.urlsafe_b64encode(hashlib.sha256(f"bench-{args.seed}-{i}".encode()).digest()).decode()
        self.uuid = "GPU-emu-%08x-0000-0000-0000-%012x" % (args.seed & 0xFFFFFFFF, i)
        self.token = args.tokens[i % len(args.tokens)]
        self.welcomed = asyncio.Event()
        self.failed = None
        self.machine_id = None
        self.retries = 0   # connections refused before the welcome, then tried again
        self.sent_at = {}  # heartbeat seq → when it was sent (monotonic), until its pong

    async def connect(self, host, port):
        """Opens the agent's WebSocket and says hello: (reader, writer) once welcomed."""
        reader, writer = await asyncio.open_connection(host, port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write((f"GET /api/v1/agent/connect HTTP/1.1\r\nHost: {host}:{port}\r\n"
                      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                      f"Authorization: Bearer {self.token}\r\n\r\n").encode())
        status = await reader.readuntil(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise RuntimeError(status.split(b"\r\n")[0].decode())
        hello = {"type": "hello", "protocol": 1, "agent_version": "bench", "machine_id": "",
                 "machine_key": self.key, "emulated": True,
                 "host": {"hostname": f"bench-{self.i}", "cpu_model": "bench", "os": "bench",
                          "kernel": "", "docker_version": "", "cpu_cores": 8, "ram_mb": 65536,
                          "disk_total_mb": 1000000, "disk_free_mb": 500000,
                          "network_isolation": {"state": "isolated", "reached": [],
                                                "detail": "bench"}},
                 "gpus": [{"index": 0, "uuid": self.uuid, "name": "NVIDIA L4 (emulated)",
                           "catalog_id": "l4-24gb", "vram_mb": 24576, "driver_version": "emulated",
                           "cuda_driver_version": "emulated", "pcie_gen_max": 4, "pcie_gen_current": 4,
                           "pcie_width_max": 16, "pcie_width_current": 16, "power_limit_w": 72,
                           "emulated": True}],
                 "containers": []}
        writer.write(frame(json.dumps(hello)))
        await writer.drain()
        refusal = ""  # the platform's error message before it closes, if any
        while True:
            op, data = await read_frame(reader)
            if op == 0x9:  # ping → pong
                writer.write(bytes([0x8A, 0x80 | len(data)]) + b"\0\0\0\0" + data)
                continue
            if op == 0x8:
                writer.close()
                raise RuntimeError("closed before welcome" + refusal)
            if op == 0x1:
                msg = json.loads(data)
                if msg.get("type") == "welcome":
                    self.machine_id = msg.get("machine_id")
                    return reader, writer
                if msg.get("type") == "error":
                    refusal = f" ({msg.get('code')}: {msg.get('message')})"

    async def run(self, host, port):
        try:
            for attempt in range(self.args.hello_retries + 1):
                try:
                    reader, writer = await self.connect(host, port)
                    break
                except Exception:  # noqa: BLE001 - retried as an agent would, then reported
                    if attempt == self.args.hello_retries:
                        raise
                    self.retries += 1
                    await asyncio.sleep(1)
            self.welcomed.set()
            seq = 0
            # Spread the first heartbeats out, answering the platform's pings meanwhile (it
            # closes a connection that sends nothing for three ping intervals, 60 s).
            await self.idle(reader, writer, self.args.heartbeat * (self.i % 100) / 100)
            while True:
                seq += 1
                hb = {"type": "heartbeat", "seq": seq,
                      "gpus": [{"uuid": self.uuid, "utilization_pct": 0, "memory_used_mb": 0,
                                "temperature_c": 35, "power_w": 16.0, "sm_clock_mhz": 210,
                                "throttle_reasons": []}]}
                writer.write(frame(json.dumps(hb)))
                if self.args.latency_out:
                    self.sent_at[seq] = WINDOW.sent(time.monotonic())
                    writer.write(frame(json.dumps({"type": "ping", "id": seq})))
                await writer.drain()
                await self.idle(reader, writer, self.args.heartbeat)
        except Exception as e:  # noqa: BLE001 - a benchmark reports every failure
            self.failed = f"{type(e).__name__}: {e}"
            self.welcomed.set()

    async def idle(self, reader, writer, seconds):
        """Reads frames for `seconds`, answering pings. A deadline, not a timeout per frame:
        that would never expire while the platform's pings (every 20 s) come more often."""
        due = time.monotonic() + seconds
        try:
            while True:
                left = due - time.monotonic()
                if left <= 0:
                    return
                op, data = await asyncio.wait_for(read_frame(reader), left)
                if op == 0x9:
                    writer.write(bytes([0x8A, 0x80 | len(data)]) + b"\0\0\0\0" + data)
                elif op == 0x8:
                    raise RuntimeError("closed by the platform")
                elif op == 0x1 and b'"pong"' in data:
                    sent = self.sent_at.pop(json.loads(data).get("id"), None)
                    if sent is not None:
                        WINDOW.answered(sent, time.monotonic())
        except asyncio.TimeoutError:
            pass

    def set_price(self):
        lo, hi = (int(x) for x in self.args.prices.split(":"))
        # Spread over [lo, hi] by a fixed permutation of the index, so neighbours differ.
        price = lo + (self.i * 7919) % (hi - lo + 1) if hi > lo else lo
        body = json.dumps({"items": [{"gpu_model": "l4-24gb", "price_micro": price}]}).encode()
        req = urllib.request.Request(f"{self.args.url}/api/v1/machines/{self.machine_id}/prices",
                                     data=body, method="PUT",
                                     headers={"Authorization": "Bearer " + self.args.api_token,
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()


class Window:
    """The heartbeats sent and answered in the measurement window (--latency-out)."""

    def __init__(self):
        self.start = self.end = float("inf")
        self.sent_in = 0        # heartbeats sent in the window
        self.answered_in = 0    # pongs received in the window (of any heartbeat)
        self.samples = []       # seconds from send to pong, of heartbeats sent in the window

    def open(self, seconds):
        self.start = time.monotonic()
        self.end = self.start + seconds

    def sent(self, t):
        if self.start <= t < self.end:
            self.sent_in += 1
        return t

    def answered(self, sent, t):
        if self.start <= t < self.end:
            self.answered_in += 1
        if self.start <= sent < self.end:
            self.samples.append(t - sent)

    def result(self, agents, held, retries):
        seconds = self.end - self.start
        samples = sorted(self.samples)
        unanswered = self.sent_in - len(samples)

        def pct(p):  # nearest rank; an unanswered heartbeat is slower than every sample
            if not self.sent_in:
                return "-"
            k = max(0, math.ceil(p / 100 * self.sent_in) - 1)
            return f"{samples[k] * 1000:.2f}" if k < len(samples) else "inf"

        return (f"result agents={agents} held={held} retries={retries} seconds={seconds:.3f} sent={self.sent_in} "
                f"answered={len(samples)} unanswered={unanswered} "
                f"sent_per_s={self.sent_in / seconds:.1f} "
                f"handled_per_s={self.answered_in / seconds:.1f} p50_ms={pct(50)} "
                f"p90_ms={pct(90)} p99_ms={pct(99)} "
                f"max_ms={f'{samples[-1] * 1000:.2f}' if samples and not unanswered else 'inf'}")


WINDOW = Window()


def proc_stat(pids):
    """CPU seconds and resident MiB of the processes `pids`, added up."""
    cpu = rss = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{pid}/status") as f:
            rss += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    return cpu, rss


def online_count(args):
    n, cursor = 0, ""
    while True:
        url = args.url + "/api/v1/machines?limit=500" + (f"&cursor={cursor}" if cursor else "")
        req = urllib.request.Request(url, headers={"Authorization": "Bearer " + args.api_token})
        with urllib.request.urlopen(req, timeout=30) as r:
            page = json.loads(r.read())
        n += sum(1 for m in page["items"] if m["status"] == "online")
        cursor = page.get("next_cursor")
        if not cursor:
            return n


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--api-token", required=True)
    p.add_argument("--pid", required=True, help="gpunexd's process id; several comma-separated")
    p.add_argument("--steps", default="250,500,1000")
    p.add_argument("--heartbeat", type=float, default=10)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--prices", default="", help="LO:HI micro-USDC: a price override per machine")
    p.add_argument("--settle", type=float, default=None,
                   help="seconds from a step's welcomes to counting Online (2 heartbeats)")
    p.add_argument("--hold", action="store_true", help="stay connected after the last step")
    p.add_argument("--hello-retries", type=int, default=0,
                   help="connect again, 1 s later, when refused before the welcome")
    p.add_argument("--latency-out", default="", help="FILE: heartbeat handling, measured")
    p.add_argument("--measure", type=float, default=10, help="seconds of the --latency-out window")
    args = p.parse_args()
    args.tokens = args.token.split(",")
    args.pids = [int(x) for x in args.pid.split(",")]
    hostport = args.url.split("://", 1)[1].rstrip("/")
    host, port = hostport.rsplit(":", 1)
    agents, tasks = [], []
    print(f"{'agents':>7} {'welcomed':>9} {'failed':>7} {'welcome s':>10} {'online':>7} "
          f"{'rss MiB':>8} {'cpu %':>6}" + (f" {'retried':>8}" if args.hello_retries else "") +
          f"  (heartbeat every {args.heartbeat:g} s)")
    for target in [int(s) for s in args.steps.split(",")]:
        cpu0, _ = proc_stat(args.pids)
        t0 = time.monotonic()
        new = [Agent(i, args) for i in range(len(agents), target)]
        agents += new
        for a in new:
            tasks.append(asyncio.create_task(a.run(host, port)))
            await asyncio.sleep(0.002)  # a steady ramp, not one burst
        await asyncio.gather(*(a.welcomed.wait() for a in new))
        welcome_s = time.monotonic() - t0
        if args.prices:
            priced = [a for a in new if not a.failed]
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                await asyncio.get_running_loop().run_in_executor(
                    None, lambda: list(pool.map(Agent.set_price, priced)))
        await asyncio.sleep(2 * args.heartbeat if args.settle is None else args.settle)
        cpu1, rss = proc_stat(args.pids)
        failed = sum(1 for a in agents if a.failed)
        online = await asyncio.get_running_loop().run_in_executor(None, online_count, args)
        cpu_pct = 100 * (cpu1 - cpu0) / (time.monotonic() - t0)
        print(f"{target:>7} {target - failed:>9} {failed:>7} {welcome_s:>10.1f} {online:>7} "
              f"{rss:>8.0f} {cpu_pct:>6.1f}" +
              (f" {sum(a.retries for a in new):>8}" if args.hello_retries else ""), flush=True)
        if failed:
            reasons = sorted({a.failed for a in agents if a.failed})[:3]
            print("first failures:", "; ".join(reasons))
            break
    if args.latency_out:
        WINDOW.open(args.measure)
        print("measuring", flush=True)
        await asyncio.sleep(args.measure)
        # The pongs of the window's last heartbeats, for up to 5 s.
        for _ in range(50):
            if len(WINDOW.samples) >= WINDOW.sent_in:
                break
            await asyncio.sleep(0.1)
        line = WINDOW.result(len(agents), sum(1 for a in agents if not a.failed),
                             sum(a.retries for a in agents))
        with open(args.latency_out, "w") as f:
            f.write(line + "\n")
        print(line, flush=True)
    if args.hold:
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        held = sum(1 for a in agents if not a.failed)
        print(f"holding {held} agents", flush=True)
        await stop.wait()
    for t in tasks:
        t.cancel()


if __name__ == "__main__":
    asyncio.run(main())
