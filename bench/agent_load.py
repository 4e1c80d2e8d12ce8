#!/usr/bin/python3
"""Load driver: how many agent connections with heartbeats one gpunexd holds.

Simulates agents over the real agent protocol (WebSocket, hello with one emulated GPU,
a heartbeat every HEARTBEAT seconds) in one asyncio process, in steps of growing size.
For each step it prints how many agents were welcomed, how long the welcomes took, how
many machines the API shows Online after two heartbeat periods, and gpunexd's resident
memory and CPU use over the step.

    bench/agent_load.py --url http://127.0.0.1:PORT --token gpx_a_... --api-token gpx_s_... \
        --pid PID [--steps 250,500,1000] [--heartbeat 10] [--prices LO:HI] [--hold]

--prices LO:HI gives each simulated machine its own price for its GPU (a machine price
override, PUT /api/v1/machines/{id}/prices with the --api-token session, which must be the
provider's), spread evenly from LO to HI micro-USDC per GPU-hour, after the step's agents
are all welcomed (8 requests at a time, so the hellos do not wait behind them).
--hold keeps the agents connected after the last step (or after the step where some
failed) until the process is stopped (SIGTERM or SIGINT), printing "holding N agents" with
the number still connected.

bench/agent_load.sh starts a throw-away gpunexd and runs this with sensible defaults;
bench/offers_http_bench.sh uses --prices and --hold to keep thousands of offers listed."""
import argparse
import asyncio
import base64
import concurrent.futures
import hashlib
import json
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
        self.welcomed = asyncio.Event()
        self.failed = None
        self.machine_id = None

    async def run(self, host, port):
        try:
            reader, writer = await asyncio.open_connection(host, port)
            key = base64.b64encode(os.urandom(16)).decode()
            writer.write((f"GET /api/v1/agent/connect HTTP/1.1\r\nHost: {host}:{port}\r\n"
                          "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                          f"Authorization: Bearer {self.args.token}\r\n\r\n").encode())
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
            while True:
                op, data = await read_frame(reader)
                if op == 0x9:  # ping → pong
                    writer.write(bytes([0x8A, 0x80 | len(data)]) + b"\0\0\0\0" + data)
                    continue
                if op == 0x8:
                    raise RuntimeError("closed before welcome")
                if op == 0x1:
                    msg = json.loads(data)
                    if msg.get("type") == "welcome":
                        self.machine_id = msg.get("machine_id")
                        break
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
                await writer.drain()
                await self.idle(reader, writer, self.args.heartbeat)
        except Exception as e:  # noqa: BLE001 - a benchmark reports every failure
            self.failed = f"{type(e).__name__}: {e}"
            self.welcomed.set()

    @staticmethod
    async def idle(reader, writer, seconds):
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


def proc_stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return ticks / os.sysconf("SC_CLK_TCK"), rss / 1024


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
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--steps", default="250,500,1000")
    p.add_argument("--heartbeat", type=float, default=10)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--prices", default="", help="LO:HI micro-USDC: a price override per machine")
    p.add_argument("--hold", action="store_true", help="stay connected after the last step")
    args = p.parse_args()
    hostport = args.url.split("://", 1)[1].rstrip("/")
    host, port = hostport.rsplit(":", 1)
    agents, tasks = [], []
    print(f"{'agents':>7} {'welcomed':>9} {'failed':>7} {'welcome s':>10} {'online':>7} "
          f"{'rss MiB':>8} {'cpu %':>6}  (heartbeat every {args.heartbeat:g} s)")
    for target in [int(s) for s in args.steps.split(",")]:
        cpu0, _ = proc_stat(args.pid)
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
        await asyncio.sleep(2 * args.heartbeat)
        cpu1, rss = proc_stat(args.pid)
        failed = sum(1 for a in agents if a.failed)
        online = await asyncio.get_running_loop().run_in_executor(None, online_count, args)
        cpu_pct = 100 * (cpu1 - cpu0) / (time.monotonic() - t0)
        print(f"{target:>7} {target - failed:>9} {failed:>7} {welcome_s:>10.1f} {online:>7} "
              f"{rss:>8.0f} {cpu_pct:>6.1f}", flush=True)
        if failed:
            reasons = sorted({a.failed for a in agents if a.failed})[:3]
            print("first failures:", "; ".join(reasons))
            break
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
