// Test harness for the dashboard's browser tests: a real gpunexd on a free loopback port
// with a throw-away SQLite data directory, its first admin, a real gpunex-agent with
// EMULATED GPUs, and Debian's Chromium driven by playwright-core (never a downloaded
// browser). Node's standard library plus playwright-core from web/node_modules.
//
// Environment (CTest sets the first two):
//   GPUNEXD                 the gpunexd binary
//   GPUNEX_AGENT            the gpunex-agent binary
//   GPUNEX_SOURCE_DIR       the repository root (default: two folders up)
//   GPUNEX_CHROMIUM         the browser (default /usr/bin/chromium)
//   GPUNEX_SCREENSHOT_DIR   where screenshots go (default ./screenshots)
//   GPUNEX_BROWSER_KEEP     keep data directories and logs (debugging)
//   GPUNEX_BROWSER_WEB_DIST serve this web/dist instead of the one gpunexd embeds
//                           (working on the dashboard; see Gpunexd.startWebProxy)
//
// Rentals run in a private Docker engine (TestDockerd, as tests/e2e/dockerenv.py starts
// one): it needs root, dockerd, the docker CLI, busybox-static, iproute2 and iptables;
// dockerMissing() names what is not there, for the test to skip with.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const SOURCE_DIR =
  process.env.GPUNEX_SOURCE_DIR || path.resolve(here, "..", "..");
export const SCREENSHOT_DIR = path.resolve(
  process.env.GPUNEX_SCREENSHOT_DIR || "screenshots",
);
export const ADMIN = {
  email: "admin@gpunex.test",
  password: "admin-password-123",
  name: "Rita Reviewer",
};
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };
// The narrowest phone the public pages are made for (an iPhone SE).
export const SMALL_PHONE = { width: 375, height: 667 };

function need(name) {
  const v = process.env[name];
  if (!v)
    throw new Error(
      `${name} is not set (the path of the binary); run through ctest`,
    );
  fs.accessSync(v, fs.constants.X_OK);
  return v;
}

// playwright-core lives in web/node_modules (scripts/build-web.sh installs it).
export function loadPlaywright() {
  const require = createRequire(path.join(SOURCE_DIR, "web", "package.json"));
  try {
    return require("playwright-core");
  } catch (e) {
    throw new Error(
      `playwright-core is not installed in ${SOURCE_DIR}/web: run scripts/build-web.sh (${e.message})`,
    );
  }
}

export async function launchBrowser() {
  const executablePath = process.env.GPUNEX_CHROMIUM || "/usr/bin/chromium";
  if (!fs.existsSync(executablePath)) {
    throw new Error(
      `no browser at ${executablePath}: install Debian's chromium (scripts/install-deps.sh)`,
    );
  }
  const { chromium } = loadPlaywright();
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-quic",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

// One gpunexd with its own data directory. start() waits until /readyz answers 200.
// opts.rentals: more lines of its [rentals] table; opts.config: more TOML after the
// tables here (e.g. [solana] and [payouts]); opts.env: more environment variables
// (GPUNEX_TEST_CLOCK_FILE).
export class Gpunexd {
  constructor(opts = {}) {
    this.extraEnv = opts.env ?? {};
    this.binary = need("GPUNEXD");
    this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gpunex-browser-"));
    this.dataDir = path.join(this.tmp, "data");
    fs.mkdirSync(this.dataDir);
    this.config = path.join(this.tmp, "gpunexd.toml");
    this.logPath = path.join(this.tmp, "gpunexd.log");
    fs.writeFileSync(
      this.config,
      [
        'listen = "127.0.0.1:0"',
        `data_dir = ${JSON.stringify(this.dataDir)}`,
        "allow_emulated_gpus = true",
        'log_level = "info"',
        "",
        "[auth]",
        // Fast password hashing: the tests log in many times.
        "argon2_opslimit = 1",
        "argon2_memlimit_bytes = 8192",
        "signups_per_address_per_hour = 1000000",
        "",
        // Rentals' HTTP ports: {rental}-{port}.localhost, which the browser sends to
        // loopback (docs/access.md).
        "[access]",
        'listen = "127.0.0.1:0"',
        'domain = "localhost"',
        // The SSH gateway, whose commands the rental page shows.
        'ssh_listen = "127.0.0.1:0"',
        "",
        "[fleet]",
        "heartbeat_interval_s = 1",
        "offline_after_s = 4",
        "",
        // Benchmarks are on (as in production), with small figures so that a run of
        // EMULATED GPUs takes a few seconds; no periodic run during a test.
        "[benchmarks]",
        "tick_ms = 200",
        "interval_s = 86400",
        "sustain_s = 0",
        "storage_file_mb = 8",
        "storage_seconds = 1",
        "network_mb = 4",
        "pings = 3",
        "",
        // The machine's own disk and loopback speed depend on what else CI runs at the
        // time: only the GPU figures decide pass or fail in these tests.
        "[benchmarks.thresholds]",
        "download_mbit_s = 0",
        "upload_mbit_s = 0",
        "rtt_p50_ms = 100000",
        "seq_read_mb_s = 0",
        "seq_write_mb_s = 0",
        "rand_read_iops = 0",
        "",
        // Rentals metered every second (the cost so far moves while a test watches).
        "[rentals]",
        "meter_interval_s = 1",
        "sweep_ms = 200",
        ...(opts.rentals ?? []),
        "",
        ...(opts.config ?? []),
        "",
      ].join("\n"),
    );
    this.proc = null;
    this.port = 0;
  }

  env() {
    // The caller's GPUNEX_* settings must not leak into the server.
    const env = {};
    for (const [k, v] of Object.entries(process.env))
      if (!k.startsWith("GPUNEX_")) env[k] = v;
    env.GPUNEX_ALLOW_EMULATED_GPUS = "true";
    return { ...env, ...this.extraEnv };
  }

  createAdmin(user = ADMIN) {
    const r = spawnSync(
      this.binary,
      [
        "admin",
        "create",
        "--email",
        user.email,
        "--password",
        user.password,
        "--name",
        user.name,
        "--config",
        this.config,
      ],
      { env: this.env(), encoding: "utf8", timeout: 60000 },
    );
    if (r.status !== 0)
      throw new Error(`gpunexd admin create failed (${r.status}): ${r.stderr}`);
  }

  async start(timeoutMs = 30000) {
    const log = fs.openSync(this.logPath, "a");
    this.proc = spawn(this.binary, ["serve", "--config", this.config], {
      env: this.env(),
      cwd: this.tmp,
      stdio: ["ignore", log, "pipe"],
    });
    fs.closeSync(log);
    const deadline = Date.now() + timeoutMs;
    this.port = await new Promise((resolve, reject) => {
      let buf = "";
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `gpunexd did not listen within ${timeoutMs} ms: ${this.logs()}`,
            ),
          ),
        timeoutMs,
      );
      this.proc.stderr.on("data", (chunk) => {
        fs.appendFileSync(this.logPath, chunk);
        buf += chunk.toString("utf8");
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          try {
            const ev = JSON.parse(line);
            if (ev.event === "http.listening" && ev.port) {
              clearTimeout(timer);
              resolve(Number(ev.port));
            }
          } catch {
            // not a JSON log line
          }
        }
      });
      this.proc.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`gpunexd exited with ${code}: ${this.logs()}`));
      });
    });
    for (;;) {
      try {
        const r = await fetch(`${this.serverBase}/readyz`);
        if (r.status === 200) break;
      } catch {
        // not yet
      }
      if (Date.now() > deadline)
        throw new Error(`/readyz did not answer 200: ${this.logs()}`);
      await sleep(50);
    }
    if (process.env.GPUNEX_BROWSER_WEB_DIST && !this.webProxy)
      await this.startWebProxy(process.env.GPUNEX_BROWSER_WEB_DIST);
    return this;
  }

  // Runs SQL on the server's SQLite database (Debian's sqlite3 command), for test setup
  // the API cannot express, such as an application submitted two weeks ago.
  sql(statement) {
    const r = spawnSync(
      "sqlite3",
      [
        "-cmd",
        ".timeout 10000",
        path.join(this.dataDir, "gpunex.db"),
        statement,
      ],
      {
        encoding: "utf8",
        timeout: 30000,
      },
    );
    if (r.status !== 0)
      throw new Error(`sqlite3 failed (${r.status}): ${r.stderr || r.error}`);
    return r.stdout;
  }

  // Opens the link that verifies `email` (the newest one in the outbox, which this
  // harness's gpunexd never sends: no SMTP server), as the address's owner would.
  async confirmEmail(email) {
    const body = this.sql(
      `SELECT body FROM email_outbox WHERE kind = 'email.verify' AND address = '${email.toLowerCase()}' ` +
        "ORDER BY created_at DESC LIMIT 1",
    );
    const found = /\/#\/verify-email\?token=(\S+)/.exec(body);
    if (!found)
      throw new Error(`no verification link for ${email} in the outbox`);
    await this.apiOk("POST", "/auth/verify-email", { token: found[1] });
  }

  get base() {
    return this.webProxy
      ? `http://127.0.0.1:${this.webProxy.address().port}`
      : this.serverBase;
  }

  get serverBase() {
    return `http://127.0.0.1:${this.port}`;
  }

  // For working on the dashboard without rebuilding gpunexd (which embeds web/dist when
  // it is built): with GPUNEX_BROWSER_WEB_DIST=<web/dist>, `base` is a loopback proxy
  // that serves that folder's index.html and assets/ and passes everything else to
  // gpunexd. Tests of gpunexd's own static headers do not hold then.
  async startWebProxy(dist) {
    const types = {
      ".js": "text/javascript",
      ".css": "text/css",
      ".html": "text/html",
      ".svg": "image/svg+xml",
    };
    // The same Content-Security-Policy as gpunexd's own pages.
    const csp = (await fetch(`${this.serverBase}/`)).headers.get(
      "content-security-policy",
    );
    this.webProxy = http.createServer((req, res) => {
      const url = new URL(req.url, "http://x");
      const file =
        url.pathname === "/"
          ? "index.html"
          : url.pathname.startsWith("/assets/")
            ? url.pathname.slice(1)
            : null;
      if (file && fs.existsSync(path.join(dist, file))) {
        res.writeHead(200, {
          "Content-Type":
            types[path.extname(file)] ?? "application/octet-stream",
          "Cache-Control": "no-cache",
          ...(csp ? { "Content-Security-Policy": csp } : {}),
        });
        res.end(fs.readFileSync(path.join(dist, file)));
        return;
      }
      const up = http.request(
        {
          host: "127.0.0.1",
          port: this.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (ur) => {
          res.writeHead(ur.statusCode, ur.headers);
          ur.pipe(res);
        },
      );
      up.on("error", () => res.destroy());
      req.pipe(up);
    });
    await new Promise((r) => this.webProxy.listen(0, "127.0.0.1", r));
  }

  // A REST call as the user whose bearer token is `token` (test setup and checks that
  // need no browser). Returns {status, body}.
  async api(method, path, body, token) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (token) headers.Authorization = `Bearer ${token}`;
    const r = await fetch(`${this.base}/api/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = text;
    }
    return { status: r.status, body: data };
  }

  async apiOk(method, path, body, token) {
    const r = await this.api(method, path, body, token);
    if (r.status < 200 || r.status > 299)
      throw new Error(
        `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`,
      );
    return r.body;
  }

  // A new user, approved as a Community provider by the admin through the API, with a
  // fresh agent token. Returns {email, password, token (the session), agentToken}.
  // opts.region: the data-center region of its application (default none); opts.prices:
  // its hourly prices, {"l4-24gb": 450000} in micro-USDC (without one, its GPUs stay
  // unlisted: "no_price_set").
  async approvedProvider(name, password, opts = {}) {
    const email = uniqueEmail(name.split(" ")[0].toLowerCase());
    await this.apiOk("POST", "/auth/signup", { email, password, name });
    await this.confirmEmail(email);
    const login = await this.apiOk("POST", "/auth/login", { email, password });
    const app = await this.apiOk(
      "POST",
      "/provider-applications",
      {
        submit: true,
        contact: { full_name: name, email, company: "" },
        gpus: [
          {
            model: "l4-24gb",
            model_other: null,
            quantity: 1,
            system_ram_gb: 64,
            upload_gbps: 1,
            download_gbps: 1,
            availability: { kind: "always" },
            location: {
              city: "Milan",
              country: "IT",
              region: opts.region ?? null,
            },
          },
        ],
        infrastructure: {
          ups: true,
          commitment_months: 6,
          maintenance_notes: "",
        },
      },
      login.token,
    );
    const admin = await this.apiOk("POST", "/auth/login", {
      email: ADMIN.email,
      password: ADMIN.password,
    });
    await this.apiOk(
      "POST",
      `/provider-applications/${app.id}/decision`,
      { decision: "approve", tier: "community" },
      admin.token,
    );
    const agentToken = await this.apiOk(
      "POST",
      "/providers/me/agent-tokens",
      { name: "bench rack" },
      login.token,
    );
    if (opts.prices) {
      const items = Object.entries(opts.prices).map(
        ([gpu_model, price_micro]) => ({ gpu_model, price_micro }),
      );
      await this.apiOk("PUT", "/providers/me/prices", { items }, login.token);
    }
    return {
      email,
      password,
      token: login.token,
      agentToken: agentToken.token,
    };
  }

  logs() {
    try {
      return fs.readFileSync(this.logPath, "utf8").slice(-6000);
    } catch {
      return "";
    }
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null) {
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), 15000);
      await once(this.proc, "exit").catch(() => {});
      clearTimeout(timer);
    }
  }

  async cleanup() {
    await this.stop();
    this.webProxy?.close();
    if (!process.env.GPUNEX_BROWSER_KEEP)
      fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

// gpunex-agent with EMULATED GPUs ("l4-24gb:2"), as scripts/demo.sh starts it.
// opts.perf: the benchmark factor of the emulated GPUs (--emulate-perf, default 1.0);
// opts.name: the agent's state directory and log under the server's folder: a new Agent
// with the same name is the same machine, restarted. opts.dockerSocket: the Docker Engine
// the agent runs workloads with (a TestDockerd's socket); without it, none.
export class Agent {
  constructor(server, token, gpus, opts = {}) {
    this.binary = need("GPUNEX_AGENT");
    const name = opts.name ?? "agent";
    this.stateDir = path.join(server.tmp, `${name}-state`);
    this.logPath = path.join(server.tmp, `${name}.log`);
    const env = {};
    for (const [k, v] of Object.entries(process.env))
      if (!k.startsWith("GPUNEX_")) env[k] = v;
    Object.assign(env, {
      GPUNEX_PLATFORM_URL: server.serverBase,
      GPUNEX_TOKEN: token,
      GPUNEX_STATE_DIR: this.stateDir,
      // No Docker Engine unless the test brings one (a TestDockerd).
      GPUNEX_DOCKER_SOCKET:
        opts.dockerSocket ?? path.join(server.tmp, "no-docker.sock"),
    });
    const log = fs.openSync(this.logPath, "a");
    const args = ["run", "--emulate-gpus", gpus];
    if (opts.perf !== undefined) args.push("--emulate-perf", String(opts.perf));
    this.proc = spawn(this.binary, args, {
      env,
      stdio: ["ignore", log, log],
    });
    fs.closeSync(log);
  }

  logs() {
    try {
      return fs.readFileSync(this.logPath, "utf8").slice(-4000);
    } catch {
      return "";
    }
  }

  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), 10000);
      await once(this.proc, "exit").catch(() => {});
      clearTimeout(timer);
    }
  }
}

// The Solana test node (tests/solana/rpc-front.mjs: LiteSVM behind a JSON-RPC server on
// loopback, with test_ control methods; tests/solana/README.md), started with
// tests/solana/setup.sh run first (npm ci when its node_modules is missing or stale).
// start() waits for its ready line; `url` is what gpunexd's [solana] rpc_url points at,
// `mint` its USDC mint. call(method, ...params) is one JSON-RPC call.
export class SolanaFront {
  constructor() {
    this.dir = path.join(SOURCE_DIR, "tests", "solana");
    this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gpunex-solana-"));
    this.logPath = path.join(this.tmp, "rpc-front.log");
    this.proc = null;
    this.url = null;
    this.mint = null;
    this.id = 0;
  }

  async start(timeoutMs = 30000) {
    const setup = await run(path.join(this.dir, "setup.sh"), [], {
      env: process.env,
      timeoutMs: 300000,
    });
    if (setup.status !== 0)
      throw new Error(
        `tests/solana/setup.sh failed (${setup.status}): ${setup.stdout}${setup.stderr}`,
      );
    const log = fs.openSync(this.logPath, "a");
    this.proc = spawn(
      process.execPath,
      [path.join(this.dir, "rpc-front.mjs"), "--port", "0"],
      { cwd: this.dir, stdio: ["ignore", "pipe", log] },
    );
    fs.closeSync(log);
    const ready = await new Promise((resolve, reject) => {
      let buf = "";
      const timer = setTimeout(
        () => reject(new Error(`rpc-front did not start: ${this.logs()}`)),
        timeoutMs,
      );
      this.proc.stdout.on("data", (chunk) => {
        buf += chunk.toString("utf8");
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          try {
            const ev = JSON.parse(line);
            if (ev.port) {
              clearTimeout(timer);
              resolve(ev);
            }
          } catch {
            // not the ready line
          }
        }
      });
      this.proc.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`rpc-front exited with ${code}: ${this.logs()}`));
      });
    });
    this.url = `http://127.0.0.1:${ready.port}`;
    this.mint = ready.mint;
    return this;
  }

  async call(method, ...params) {
    this.id += 1;
    const r = await fetch(this.url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: this.id, method, params }),
    });
    if (r.status !== 200)
      throw new Error(`${method}: HTTP ${r.status} ${await r.text()}`);
    const body = await r.json();
    if (body.error)
      throw new Error(`${method}: ${body.error.code} ${body.error.message}`);
    return body.result;
  }

  // A new wallet holding `usdc` micro-USDC (and 1 SOL): {public_key, secret_key}.
  async fundedWallet(usdc) {
    const w = await this.call("test_newWallet");
    await this.call("test_mintUsdc", w.public_key, usdc);
    return w;
  }

  // Pays a solana: transfer request URL as a wallet does (tests/solana/pay.mjs) from the
  // wallet `payer`; returns the transaction's signature.
  async pay(url, payer) {
    const r = await run(
      process.execPath,
      [
        path.join(this.dir, "pay.mjs"),
        "--rpc",
        this.url,
        "--url",
        url,
        "--payer-secret",
        JSON.stringify(payer.secret_key),
      ],
      { env: process.env, timeoutMs: 60000 },
    );
    if (r.status !== 0)
      throw new Error(`pay.mjs failed: ${r.stdout}${r.stderr}`);
    return JSON.parse(r.stdout.trim().split("\n").pop()).signature;
  }

  logs() {
    try {
      return fs.readFileSync(this.logPath, "utf8").slice(-4000);
    } catch {
      return "";
    }
  }

  async stop() {
    if (
      this.proc &&
      this.proc.exitCode === null &&
      this.proc.signalCode === null
    ) {
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), 10000);
      await once(this.proc, "exit").catch(() => {});
      clearTimeout(timer);
    }
    if (!process.env.GPUNEX_BROWSER_KEEP)
      fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

const BUSYBOX = "/bin/busybox";

function dockerdScript() {
  return path.join(
    SOURCE_DIR,
    "src",
    "agent",
    "runtime",
    "testdata",
    "dockerd.sh",
  );
}

function onPath(name) {
  return (process.env.PATH ?? "")
    .split(":")
    .filter(Boolean)
    .some((dir) => {
      try {
        fs.accessSync(path.join(dir, name), fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}

function executable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// Why a private dockerd cannot run here (the reason to skip with), or null when it can:
// the same checks as tests/e2e/dockerenv.py's require_docker().
export function dockerMissing() {
  if (process.getuid?.() !== 0)
    return "the rentals test starts its own dockerd: run as root";
  if (!onPath("dockerd") && !executable("/usr/sbin/dockerd"))
    return "dockerd is not installed (Debian: docker.io)";
  if (!onPath("docker"))
    return "the docker CLI is not installed (Debian: docker.io)";
  if (!executable(BUSYBOX))
    return `${BUSYBOX} is missing (Debian: busybox-static)`;
  // Each private dockerd has a network namespace of its own, with its own rules.
  for (const [tool, pkg] of [
    ["ip", "iproute2"],
    ["nsenter", "util-linux"],
    ["iptables", "iptables"],
  ])
    if (
      !onPath(tool) &&
      !["/usr/sbin", "/sbin", "/usr/bin"].some((d) =>
        executable(`${d}/${tool}`),
      )
    )
      return `${tool} is not installed (Debian: ${pkg})`;
  if (!fs.existsSync(dockerdScript())) return `${dockerdScript()} is missing`;
  return null;
}

// Runs `file args` without blocking the event loop; {status, stdout, stderr}.
function run(file, args, { env, timeoutMs }) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status: status ?? signal, stdout, stderr });
    });
  });
}

// A Docker engine of the test's own, started and stopped with
// src/agent/runtime/testdata/dockerd.sh (as tests/e2e/dockerenv.py's TestDockerd): its
// own unix socket, data and exec roots in a folder under /tmp, no docker0 bridge, a
// network namespace of its own where workloads are isolated as docs/trust.md asks (so the
// agent's network isolation check passes and its machine is listed); stop() removes its
// containers and networks, its containerd and shims, the mounts under the folder, the
// folder and the namespace. Images are imported, never pulled (importBusybox: the host's
// static busybox). Calls the Engine API over the socket.
//
// network: how the engine isolates workloads (dockerd.sh's GPUNEX_TEST_DOCKERD_NETWORK):
// "isolated" (the default), "docker" (Docker's own rules only) or "open" (none, what an
// outside probe found on a provider's host; the agent's check then keeps it unlisted).
export class TestDockerd {
  constructor({ network = "isolated" } = {}) {
    // Short: the socket path must fit in sun_path (108 bytes).
    this.dir = fs.mkdtempSync("/tmp/gpx-dock-");
    this.socket = path.join(this.dir, "docker.sock");
    this.network = network;
    this.started = false;
  }

  env(extra = {}) {
    const env = {};
    for (const [k, v] of Object.entries(process.env))
      if (!k.startsWith("DOCKER_") && !k.startsWith("GPUNEX_")) env[k] = v;
    return { ...env, DOCKER_HOST: `unix://${this.socket}`, ...extra };
  }

  // Starts the engine and waits until its socket answers /_ping. Throws with the
  // script's output (and stops what it started) when the engine does not come up.
  async start() {
    const r = await run(dockerdScript(), ["start", this.dir], {
      env: this.env({ GPUNEX_TEST_DOCKERD_NETWORK: this.network }),
      timeoutMs: 90000,
    });
    if (r.status !== 0) {
      await this.stop();
      throw new Error(
        `cannot start a private dockerd (${r.status}):\n${r.stdout}\n${r.stderr}`,
      );
    }
    this.started = true;
    const sock = r.stdout.trim().split("\n").pop();
    if (sock !== this.socket)
      throw new Error(`dockerd.sh printed ${sock}, not ${this.socket}`);
    await until(
      async () => (await this.api("GET", "/_ping")).status === 200,
      30000,
      `the private dockerd on ${this.socket}`,
    );
    return this;
  }

  // Imports an image named `ref` made of the host's static busybox (no registry).
  async importBusybox(ref) {
    const r = await run(dockerdScript(), ["import-busybox", this.dir, ref], {
      env: this.env({ BUSYBOX }),
      timeoutMs: 120000,
    });
    if (r.status !== 0)
      throw new Error(
        `cannot import busybox as ${ref}: ${r.stdout}${r.stderr}`,
      );
  }

  // An Engine API call over the socket: {status, body (parsed JSON, or the text)}.
  api(method, apiPath) {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { socketPath: this.socket, method, path: apiPath, timeout: 30000 },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let body = text;
            try {
              body = text ? JSON.parse(text) : null;
            } catch {
              // not JSON (/_ping answers "OK")
            }
            resolve({ status: res.statusCode, body });
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error("timed out")));
      req.on("error", reject);
      req.end();
    });
  }

  // The containers (the list API's objects), stopped ones too, with every label given
  // ("key=value" or "key").
  async containers(...labels) {
    const filters = encodeURIComponent(JSON.stringify({ label: labels }));
    const r = await this.api(
      "GET",
      `/containers/json?all=1&filters=${filters}`,
    );
    if (r.status !== 200)
      throw new Error(`list containers: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  // The inspect object of the container `name` (or id), or null when there is none.
  async inspect(name) {
    const r = await this.api(
      "GET",
      `/containers/${encodeURIComponent(name)}/json`,
    );
    if (r.status === 404) return null;
    if (r.status !== 200)
      throw new Error(`inspect ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  logTail(n = 4000) {
    try {
      return fs
        .readFileSync(path.join(this.dir, "dockerd.log"), "utf8")
        .slice(-n);
    } catch {
      return "";
    }
  }

  // Stops the engine and removes everything it left (dockerd.sh stop). With
  // GPUNEX_BROWSER_KEEP, its log is copied to a folder of its own first.
  async stop() {
    if (process.env.GPUNEX_BROWSER_KEEP) {
      try {
        const keep = fs.mkdtempSync(path.join(os.tmpdir(), "gpx-dock-log-"));
        fs.copyFileSync(
          path.join(this.dir, "dockerd.log"),
          path.join(keep, "dockerd.log"),
        );
        console.log(`(dockerd log kept in ${keep})`);
      } catch {
        // no log to keep
      }
    }
    const r = await run(dockerdScript(), ["stop", this.dir], {
      env: this.env(),
      timeoutMs: 120000,
    });
    this.started = false;
    if (r.status !== 0)
      throw new Error(
        `dockerd.sh stop ${this.dir} failed (${r.status}): ${r.stdout}${r.stderr}`,
      );
  }
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// Calls `fn` until it returns something truthy (returned), or throws after `timeoutMs`.
export async function until(fn, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`,
      );
    await sleep(200);
  }
}

let emailCounter = 0;
export function uniqueEmail(tag) {
  emailCounter += 1;
  return `${tag}-${process.pid}-${emailCounter}-${Date.now().toString(36)}@example.com`;
}

// Watches a page for what must never happen: script errors, Content-Security-Policy
// violations, console errors other than the expected failed requests.
export function watch(page) {
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const text = m.text();
    // A failed request the test provoked (422 on a bad field, 401 before log-in) is
    // logged by Chromium as "Failed to load resource"; the UI shows those itself.
    if (
      /Failed to load resource: the server responded with a status of (4\d\d)/.test(
        text,
      )
    )
      return;
    problems.push(`console error: ${text}`);
  });
  page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  return problems;
}

// Saves a screenshot of `page` at desktop width and at phone width (`phone`, default
// PHONE; the page is resized and then put back). At phone width the page must not scroll
// sideways.
export async function shoot(page, name, phone = PHONE) {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const size = page.viewportSize() ?? DESKTOP;
  await page.screenshot({
    path: path.join(SCREENSHOT_DIR, `${name}-desktop.png`),
    fullPage: true,
  });
  await page.setViewportSize(phone);
  await sleep(100);
  await page.screenshot({
    path: path.join(SCREENSHOT_DIR, `${name}-phone.png`),
    fullPage: true,
  });
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - window.innerWidth,
  );
  await page.setViewportSize(size);
  if (overflow > 1)
    throw new Error(
      `${name}: the page is ${overflow}px wider than a ${phone.width}px phone screen`,
    );
}

// Every visible form control has a label (a <label for>, a wrapping label, or aria-label).
export async function unlabelled(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea")]
      .filter((el) => el.type !== "hidden" && el.offsetParent !== null)
      .filter(
        (el) =>
          !(el.labels && el.labels.length) &&
          !el.getAttribute("aria-label") &&
          !el.getAttribute("aria-labelledby"),
      )
      .map((el) => el.outerHTML.slice(0, 120)),
  );
}

// The colour-contrast violations (WCAG 2 AA) that axe-core (web/node_modules/axe-core)
// finds in the page as shown now: [] when there are none, else one line per element,
// "selector: fg on bg = ratio (needs n)". axe runs in the page through the DevTools
// protocol, which the Content-Security-Policy does not govern.
let axeSource = null;
export async function contrastViolations(page) {
  if (!axeSource) {
    const file = createRequire(
      path.join(SOURCE_DIR, "web", "package.json"),
    ).resolve("axe-core/axe.min.js");
    axeSource = fs.readFileSync(file, "utf8");
  }
  if (!(await page.evaluate(() => typeof window.axe === "object")))
    await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, {
      runOnly: { type: "rule", values: ["color-contrast"] },
      resultTypes: ["violations"],
    });
    return r.violations.flatMap((v) =>
      v.nodes.map((n) => {
        const d = n.any[0]?.data ?? {};
        return `${n.target.join(" ")}: ${d.fgColor} on ${d.bgColor} = ${d.contrastRatio} (needs ${d.expectedContrastRatio})`;
      }),
    );
  });
  return result;
}

// The amounts on `page` (span.amount) that are not shown the one way: two decimals (or
// "<0.01") worked out from the exact amount in the title ("0.123456 USDC", "+0.50 USDC",
// "0.45 USDC/h"), the unit after them or not. `count`: how many there are in all.
export async function badAmounts(page) {
  const shown = await page
    .locator("span.amount")
    .evaluateAll((els) => els.map((e) => [e.textContent, e.title]));
  const bad = [];
  for (const [text, title] of shown) {
    const t = title.match(/^([+−]?)(\d+)\.(\d{2,6}) (USDC|USDC\/h)$/);
    if (!t) {
      bad.push(`${text} (title ${JSON.stringify(title)})`);
      continue;
    }
    const abs = BigInt(t[2]) * 1000000n + BigInt(t[3].padEnd(6, "0"));
    const micro = t[1] === "−" ? -abs : abs;
    const value = usdcShown(Number(micro), t[1] === "+");
    if (text !== value && text !== `${value} ${t[4]}`)
      bad.push(`${text} (title ${title})`);
  }
  return { count: shown.length, bad };
}

// web/src/money.ts itself, to call in node: TypeScript (web/node_modules) strips its
// types; it imports nothing.
export async function loadMoney() {
  const require = createRequire(path.join(SOURCE_DIR, "web", "package.json"));
  const ts = require("typescript");
  const source = fs.readFileSync(
    path.join(SOURCE_DIR, "web", "src", "money.ts"),
    "utf8",
  );
  const js = ts.transpileModule(source, {
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2020,
    },
  }).outputText;
  return import(
    `data:text/javascript;base64,${Buffer.from(js).toString("base64")}`
  );
}

// An amount as the dashboard shows it, from the exact one: money.ts's own centsText
// (123456 → "0.12"; "+" before a positive one when `signed`). The ux suite pins what it
// gives, case by case.
const money = await loadMoney();
export function usdcShown(micro, signed = false) {
  return money.centsText(micro, signed);
}
