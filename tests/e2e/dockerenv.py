"""A private Docker engine, a private registry and the gpunex-agent image, for the e2e
tests that run the real agent (test_agent_docker.py).

- TestDockerd: a dockerd of its own (own unix socket, --data-root / --exec-root / --pidfile
  in a temp folder, no docker0 bridge) in a network namespace of its own, started and
  stopped with src/agent/runtime/testdata/dockerd.sh, which also removes what the engine
  leaves behind (containers, networks, the engine's containerd and shims, mounts under the
  folder, the namespace). `network` says how it isolates workloads: "isolated" (the
  default: as docs/trust.md asks of providers, so the agent's network isolation check
  passes and its machine is listed), "docker" (Docker's iptables rules only) or "open"
  (--iptables=false: the check fails). Talks to the engine with the docker CLI
  (DOCKER_HOST) and, for inspect / list / events, straight to the Engine API over the
  socket. forward(port) makes 127.0.0.1:port of this machine reachable in the engine's
  namespace (its pulls, its containers with NetworkMode host).
- LocalRegistry: Debian's docker-registry on 127.0.0.1:<free port>, storage in a temp
  folder (dockerd trusts registries on 127.0.0.0/8 without TLS).
- build_agent_image(): deploy/agent/build-image.sh (docker import: no base image pulled).

Needs root, dockerd, the docker CLI and a static busybox (busybox-static); each missing
piece makes the tests skip with the reason. Standard library only (/usr/bin/python3).

Environment:
  GPUNEX_AGENT          the gpunex-agent binary (CTest sets it)
  GPUNEX_E2E_KEEP       keep the engine's folder (logs) of a failed run
"""

import ctypes
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import warnings

from harness import free_port, source_dir

BUSYBOX = "/bin/busybox"
REGISTRY = "/usr/bin/docker-registry"


def dockerd_script():
    return os.path.join(source_dir(), "src", "agent", "runtime", "testdata", "dockerd.sh")


def agent_binary():
    path = os.environ.get("GPUNEX_AGENT", "")
    if not path:
        raise unittest.SkipTest("GPUNEX_AGENT is not set (the path of the gpunex-agent "
                                "binary); run through ctest or export GPUNEX_AGENT")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"GPUNEX_AGENT={path} is not an executable file")
    return path


def require_docker():
    """Raises SkipTest naming what is missing to run a private dockerd."""
    if os.geteuid() != 0:
        raise unittest.SkipTest("the Docker e2e tests start their own dockerd: run as root")
    if not (shutil.which("dockerd") or os.access("/usr/sbin/dockerd", os.X_OK)):
        raise unittest.SkipTest("dockerd is not installed (Debian: docker.io)")
    if not shutil.which("docker"):
        raise unittest.SkipTest("the docker CLI is not installed (Debian: docker.io)")
    if not os.access(BUSYBOX, os.X_OK):
        raise unittest.SkipTest(f"{BUSYBOX} is missing (Debian: busybox-static)")
    # Each private dockerd has a network namespace of its own, with its own rules.
    for tool, package in (("ip", "iproute2"), ("nsenter", "util-linux"), ("iptables", "iptables")):
        if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin"):
            raise unittest.SkipTest(f"{tool} is not installed (Debian: {package})")
    if not os.path.exists(dockerd_script()):
        raise unittest.SkipTest(f"{dockerd_script()} is missing")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd):
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


class PortForward:
    """127.0.0.1:`port` in the network namespace `netns` (a /run/netns path), relayed to
    127.0.0.1:`port` of this machine, one connection for each, until close(). The listening
    socket is made in the namespace (this thread enters it for that, and comes back); the
    relays' connections are made here."""

    def __init__(self, netns, port):
        self.port = port
        self._closed = threading.Event()
        self._conns = []
        self._lock = threading.Lock()
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        there = os.open(netns, os.O_RDONLY)
        try:
            _setns(there)
            try:
                self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self._sock.bind(("127.0.0.1", port))
                self._sock.listen(64)
            finally:
                _setns(home)
        finally:
            os.close(home)
            os.close(there)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._closed.is_set():
            try:
                inner, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(inner,), daemon=True).start()

    def _relay(self, inner):
        try:
            outer = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            inner.close()
            return
        outer.settimeout(None)
        with self._lock:
            self._conns += [inner, outer]
        back = threading.Thread(target=self._pipe, args=(outer, inner), daemon=True)
        back.start()
        self._pipe(inner, outer)
        back.join()
        inner.close()
        outer.close()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self):
        self._closed.set()
        self._sock.close()
        with self._lock:
            for c in self._conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class TestDockerd:
    """One private dockerd. start() / stop(); cli(); api(); inspect(); containers();
    forward()."""

    def __init__(self, network="isolated"):
        # Short: the socket path must fit in sun_path (108 bytes).
        self.dir = tempfile.mkdtemp(prefix="gpx-dock-", dir="/tmp")
        self.socket = os.path.join(self.dir, "docker.sock")
        self.network = network
        self.netns = None  # /run/netns/<name> once started
        self.forwards = []
        self.started = False

    @property
    def host(self):
        return "unix://" + self.socket

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DOCKER_", "GPUNEX_"))}
        env["DOCKER_HOST"] = self.host
        env.update(extra)
        return env

    def start(self):
        env = dict(os.environ, GPUNEX_TEST_DOCKERD_NETWORK=self.network)
        out = subprocess.run([dockerd_script(), "start", self.dir], capture_output=True,
                             text=True, timeout=90, env=env)
        if out.returncode != 0:
            self.stop()
            raise RuntimeError(f"cannot start a private dockerd ({out.returncode}):\n"
                               f"{out.stdout}\n{out.stderr}")
        self.started = True
        sock = out.stdout.strip().splitlines()[-1]
        assert sock == self.socket, (sock, self.socket)
        with open(os.path.join(self.dir, "netns"), encoding="utf-8") as f:
            self.netns = "/run/netns/" + f.read().strip()
        return self

    def forward(self, port):
        """127.0.0.1:`port` in the engine's namespace reaches 127.0.0.1:`port` here (a
        gpunexd for an agent container with NetworkMode host, a registry for pulls).
        Returns the PortForward; stop() closes it."""
        fwd = PortForward(self.netns, port)
        self.forwards.append(fwd)
        return fwd

    def stop(self, keep_log=False):
        if keep_log or os.environ.get("GPUNEX_E2E_KEEP"):
            try:
                keep = tempfile.mkdtemp(prefix="gpx-dock-log-")
                shutil.copy(os.path.join(self.dir, "dockerd.log"), keep)
                print(f"\n(dockerd log kept in {keep})")
            except OSError:
                pass
        for fwd in self.forwards:
            fwd.close()
        self.forwards = []
        out = subprocess.run([dockerd_script(), "stop", self.dir], capture_output=True,
                             text=True, timeout=120)
        if out.returncode != 0:
            print(f"dockerd.sh stop {self.dir} failed: {out.stdout}{out.stderr}")
        self.started = False
        return self.leftovers()

    def leftovers(self):
        """What the engine left behind: mounts under its folder, the folder itself, its
        processes."""
        found = []
        with open("/proc/mounts", encoding="utf-8") as f:
            for line in f:
                mnt = line.split()[1]
                if mnt == self.dir or mnt.startswith(self.dir + "/"):
                    found.append(f"mount {mnt}")
        if os.path.exists(self.dir):
            found.append(f"folder {self.dir}")
        if self.netns and os.path.exists(self.netns):
            found.append(f"network namespace {self.netns}")
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", errors="replace")
            except OSError:
                continue
            if self.dir + "/" in cmd:
                found.append(f"process {pid}: {cmd[:200]}")
        return found

    def log_tail(self, n=4000):
        try:
            with open(os.path.join(self.dir, "dockerd.log"), "rb") as f:
                return f.read()[-n:].decode("utf-8", errors="replace")
        except OSError:
            return ""

    # -- the docker CLI

    def cli(self, *args, check=True, input=None, timeout=120):
        out = subprocess.run(["docker", *args], capture_output=True, text=True, input=input,
                             env=self.env(), timeout=timeout)
        if check and out.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} failed ({out.returncode}):\n"
                                 f"{out.stdout}\n{out.stderr}")
        return out

    def import_busybox(self, ref, *files, tree=None, changes=()):
        """An image `ref` of the host's static busybox and the host's programs `files` (at
        their paths, with the libraries they load); then the folder `tree` copied over it
        (owners and modes kept; its etc/passwd and etc/group replace the root-only ones),
        and `changes`, Dockerfile instructions for the image's config ("USER 1000")."""
        opts = ["--tree", tree] if tree else []
        for change in changes:
            opts += ["--change", change]
        out = subprocess.run([dockerd_script(), "import-busybox", self.dir, ref, *opts,
                              *files],
                             capture_output=True, text=True, timeout=120,
                             env=self.env(BUSYBOX=BUSYBOX))
        if out.returncode != 0:
            raise RuntimeError(f"cannot import busybox as {ref}: {out.stdout}{out.stderr}")

    # -- the Engine API

    def api(self, method, path, body=None, query=None, timeout=30):
        """(status, parsed JSON or raw bytes)."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
        conn = _UnixConnection(self.socket, timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            hdrs = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=hdrs)
            r = conn.getresponse()
            raw = r.read()
        finally:
            conn.close()
        try:
            return r.status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return r.status, raw

    def inspect(self, ref):
        st, body = self.api("GET", f"/containers/{urllib.parse.quote(ref)}/json")
        if st == 404:
            return None
        assert st == 200, (st, body)
        return body

    def containers(self, *labels, all=True, name=None):
        """Containers (the list API's objects) with every label "k=v" or "k" given."""
        filters = {}
        if labels:
            filters["label"] = list(labels)
        if name:
            filters["name"] = [name]
        st, body = self.api("GET", "/containers/json",
                            query={"all": "1" if all else "0", "filters": json.dumps(filters)})
        assert st == 200, (st, body)
        return body

    def volumes(self, *labels):
        st, body = self.api("GET", "/volumes",
                            query={"filters": json.dumps({"label": list(labels)})})
        assert st == 200, (st, body)
        return [v["Name"] for v in body.get("Volumes") or []]

    def networks(self, *labels):
        st, body = self.api("GET", "/networks",
                            query={"filters": json.dumps({"label": list(labels)})})
        assert st == 200, (st, body)
        return body

    def events(self, since, until, **filters):
        """The engine's events between two unix times (float), filtered like the API."""
        st, raw = self.api("GET", "/events", query={
            "since": f"{since:.6f}", "until": f"{until:.6f}",
            "filters": json.dumps({k: list(v) for k, v in filters.items()})})
        assert st == 200, (st, raw)
        if isinstance(raw, (dict, list)):
            return [raw] if isinstance(raw, dict) else raw
        out = []
        dec = json.JSONDecoder()
        text = (raw or b"").decode("utf-8")
        i = 0
        while i < len(text):
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                break
            obj, i = dec.raw_decode(text, i)
            out.append(obj)
        return out

    def remove_all(self):
        """Every container, volume and user network: a clean engine for the next test."""
        for c in self.containers():
            self.api("DELETE", f"/containers/{c['Id']}", query={"force": "1", "v": "1"})
        st, body = self.api("GET", "/volumes")
        for v in (body or {}).get("Volumes") or []:
            self.api("DELETE", f"/volumes/{v['Name']}", query={"force": "1"})
        st, body = self.api("GET", "/networks")
        for n in body or []:
            if n["Name"] not in ("bridge", "host", "none"):
                self.api("DELETE", f"/networks/{n['Id']}")

    def wait_running(self, name, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            c = self.inspect(name)
            if c and c["State"]["Running"]:
                return c
            if time.monotonic() > deadline:
                raise AssertionError(f"container {name} not running after {timeout}s: "
                                     f"{c and c['State']}")
            time.sleep(0.1)


class LocalRegistry:
    """Debian's docker-registry (distribution 2.x) on 127.0.0.1:<free port>. With
    `credentials` ((username, password)) it wants them (htpasswd, bcrypt) for every pull
    and push; login(dock) lets a private engine's CLI push there."""

    def __init__(self, credentials=None):
        if not os.access(REGISTRY, os.X_OK):
            raise unittest.SkipTest(f"{REGISTRY} is missing (Debian: docker-registry)")
        self.dir = tempfile.mkdtemp(prefix="gpx-registry-")
        self.port = free_port()
        self.proc = None
        self.credentials = credentials
        self.config = os.path.join(self.dir, "config.yml")
        auth = ""
        if credentials:
            with warnings.catch_warnings():  # deprecated, and still the standard library's
                warnings.simplefilter("ignore", DeprecationWarning)
                import crypt  # bcrypt through libcrypt: the registry takes no other hash
            user, password = credentials
            with open(os.path.join(self.dir, "htpasswd"), "w", encoding="utf-8") as f:
                f.write(f"{user}:{crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))}\n")
            auth = ("auth:\n  htpasswd:\n    realm: gpunex-test\n"
                    f"    path: {self.dir}/htpasswd\n")
        with open(self.config, "w", encoding="utf-8") as f:
            f.write("version: 0.1\n"
                    "log:\n  level: warn\n"
                    "storage:\n  filesystem:\n"
                    f"    rootdirectory: {self.dir}/storage\n"
                    "  delete:\n    enabled: true\n"
                    + auth +
                    "http:\n"
                    f"  addr: 127.0.0.1:{self.port}\n")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self, timeout=20):
        self._log = open(os.path.join(self.dir, "registry.log"), "wb")
        self.proc = subprocess.Popen([REGISTRY, "serve", self.config], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"docker-registry exited ({self.proc.returncode}): "
                                   f"{self.log()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/v2/")
                if conn.getresponse().status == (401 if self.credentials else 200):
                    conn.close()
                    return self
                conn.close()
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"docker-registry did not answer within {timeout}s")
            time.sleep(0.1)

    def push(self, dock, local_ref, name):
        """Pushes the engine's `local_ref` here as `name` (logged in with the credentials
        in a CLI config of its own), then removes both tags from the engine, so that a
        workload of that image must pull it. The reference pushed."""
        ref = f"{self.address}/{name}"
        dock.cli("tag", local_ref, ref)
        cfg = os.path.join(self.dir, "cli")
        os.makedirs(cfg, exist_ok=True)
        if self.credentials:
            user, password = self.credentials
            dock.cli("--config", cfg, "login", "-u", user, "--password-stdin", self.address,
                     input=password)
        dock.cli("--config", cfg, "push", ref)
        dock.cli("rmi", ref)
        return ref

    def log(self):
        try:
            with open(os.path.join(self.dir, "registry.log"), "rb") as f:
                return f.read()[-3000:].decode("utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def build_agent_image(dockerd, binary, tag, tar=None):
    """deploy/agent/build-image.sh BINARY TAG [TAR] against `dockerd`."""
    script = os.path.join(source_dir(), "deploy", "agent", "build-image.sh")
    args = [script, binary, tag] + ([tar] if tar else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, env=dockerd.env())
    if out.returncode != 0:
        raise RuntimeError(f"build-image.sh failed ({out.returncode}):\n{out.stdout}\n"
                           f"{out.stderr}")
    return out.stdout
