"""End-to-end test harness for gpunexd.

Starts real gpunexd processes (binary from $GPUNEXD) on a throw-away data directory,
talks to them over HTTP with http.client, and collects the emails they send with an
in-process SMTP sink (aiosmtpd). Every answer its Client receives is checked against
docs/openapi.yaml (openapi_check.py). Standard library + Debian's python3-aiosmtpd,
python3-psycopg2, python3-yaml and python3-jsonschema only: run with /usr/bin/python3.

Backends: SQLite always; PostgreSQL when $GPUNEX_TEST_PG_URL names a throw-away server
(scripts/pg-test-server.sh start DIR prints one). Each PostgreSQL test gets a fresh
database that is dropped afterwards; the test's own queries share one connection.

Environment:
  GPUNEXD              path to the gpunexd binary (required; CTest sets it)
  GPUNEX_AGENT         path to the gpunex-agent binary (tests with real agents: RealAgent)
  GPUNEX_SOURCE_DIR    the repository root (for the route table check)
  GPUNEX_TEST_PG_URL   postgresql://postgres@127.0.0.1:PORT/postgres (optional)
  GPUNEX_E2E_KEEP      keep data directories and logs of finished tests (debugging)
  GPUNEX_E2E_WRAPPER   run gpunexd under this command, e.g. "valgrind -q" (debugging)
  GPUNEX_E2E_START_TIMEOUT  seconds to wait for gpunexd to listen (default 20)
  GPUNEX_E2E_NO_OPENAPI  1: do not check answers against docs/openapi.yaml (debugging)
  GPUNEX_E2E_OPENAPI_REPORT  a file to list the answers docs/openapi.yaml does not allow
                       in, instead of failing (debugging: updating the description)
"""

import asyncio
import base64
import copy
import email
import email.policy
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid

import psycopg2
import psycopg2.extensions
from aiosmtpd.controller import Controller

import openapi_check

PUBLIC_URL = "https://gpunex.test"
ADMIN_EMAIL = "admin@gpunex.test"
ADMIN_PASSWORD = "admin-password-123"
PASSWORD = "correct-horse-battery"
# The subject of the email that verifies an address (docs/security.md, "Email").
VERIFY_SUBJECT = "gpunex: confirm your email address"

AGENT_TOKEN_RE = re.compile(r"gpx_a_[A-Za-z0-9_-]{43}")
START_TIMEOUT_S = float(os.environ.get("GPUNEX_E2E_START_TIMEOUT", "20"))
# A command to run gpunexd under, for debugging: GPUNEX_E2E_WRAPPER="valgrind -q".
WRAPPER = shlex.split(os.environ.get("GPUNEX_E2E_WRAPPER", ""))

PG_URL = os.environ.get("GPUNEX_TEST_PG_URL", "").strip()
PG_SKIP_REASON = ("GPUNEX_TEST_PG_URL is not set: start a throw-away server with "
                  "`U=$(scripts/pg-test-server.sh start /tmp/pgx)` and export "
                  "GPUNEX_TEST_PG_URL=$U to run the PostgreSQL variants")


def gpunexd_binary():
    path = os.environ.get("GPUNEXD", "")
    if not path:
        raise unittest.SkipTest("GPUNEXD is not set (the path of the gpunexd binary); "
                                "run through ctest or export GPUNEXD")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"GPUNEXD={path} is not an executable file")
    return path


def source_dir():
    d = os.environ.get("GPUNEX_SOURCE_DIR")
    if d:
        return d
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# The [auth] settings of the test servers: cheap hashing, throttling out of the way.
AUTH_FOR_TESTS = ["argon2_opslimit = 1", "argon2_memlimit_bytes = 8192",
                  "login_max_failures_ip = 100000", "login_max_failures = 1000",
                  "signups_per_address_per_hour = 1000000"]


def wait_until(fn, timeout, what, interval=0.1):
    """Polls fn() until it returns something truthy; returns it."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unique_email(tag="user"):
    return f"{tag}-{uuid.uuid4().hex[:12]}@example.com"


# --------------------------------------------------------------------------- SMTP sink


class SinkMessage:
    """One message accepted by the sink."""

    def __init__(self, envelope):
        self.raw = envelope.original_content or envelope.content
        if isinstance(self.raw, str):
            self.raw = self.raw.encode("utf-8")
        self.mail_from = envelope.mail_from
        self.rcpt_tos = list(envelope.rcpt_tos)
        msg = email.message_from_bytes(self.raw, policy=email.policy.default)
        self.message_id = str(msg["Message-ID"] or "").strip()
        self.to = str(msg["To"] or "")
        self.subject = str(msg["Subject"] or "")
        self.from_ = str(msg["From"] or "")
        self.headers = msg
        try:
            self.body = msg.get_content()
        except (KeyError, LookupError):
            payload = msg.get_payload(decode=True) or b""
            self.body = payload.decode("utf-8", errors="replace")
        self.received_at = time.monotonic()

    @property
    def to_addr(self):
        """The bare address of the To header, lower case."""
        return email.utils.parseaddr(self.to)[1].lower()

    def __repr__(self):
        return f"<mail to={self.to!r} subject={self.subject!r} id={self.message_id}>"


class _SinkHandler:
    def __init__(self, sink):
        self.sink = sink

    async def handle_DATA(self, server, session, envelope):
        self.sink._data_started()
        delay = self.sink.delay_s
        if delay:
            # The reply is held back: a client that dies now never gets its 250, and the
            # message is not accepted (aiosmtpd cancels this coroutine on disconnect).
            await asyncio.sleep(delay)
        self.sink._accept(SinkMessage(envelope))
        return "250 Message accepted for delivery"


class SmtpSink:
    """An SMTP server on 127.0.0.1 that keeps every accepted message.

    `delay_s` (settable at any time) delays the final 250 to DATA, so that a message can
    be in flight when the client dies; such a message is not counted as accepted.
    """

    def __init__(self, delay_s=0.0):
        self.delay_s = delay_s
        self.messages = []
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self.data_started = 0  # DATA commands seen (accepted or not)
        self.port = free_port()
        self.controller = Controller(_SinkHandler(self), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    @property
    def url(self):
        return f"smtp://127.0.0.1:{self.port}"

    def stop(self):
        self.controller.stop()

    def _data_started(self):
        with self._cv:
            self.data_started += 1
            self._cv.notify_all()

    def _accept(self, m):
        with self._cv:
            self.messages.append(m)
            self._cv.notify_all()

    def snapshot(self):
        with self._lock:
            return list(self.messages)

    def wait_for(self, predicate, timeout, what="messages"):
        """Waits until predicate(list of messages) is true; returns the list."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                msgs = list(self.messages)
                if predicate(msgs):
                    return msgs
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"timed out after {timeout}s waiting for {what}; the sink has "
                        f"{len(msgs)}: " + "; ".join(f"{m.to} / {m.subject}" for m in msgs))
                self._cv.wait(min(left, 0.2))

    def wait_data_started(self, count, timeout):
        deadline = time.monotonic() + timeout
        with self._cv:
            while self.data_started < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no SMTP DATA #{count} within {timeout}s")
                self._cv.wait(min(left, 0.2))

    @staticmethod
    def _to(addr, links):
        """Whether a message is to `addr`; with links=False verification links do not count."""
        addr = addr.lower()
        return lambda m: m.to_addr == addr and (links or m.subject != VERIFY_SUBJECT)

    def for_addr(self, addr, links=True):
        to = self._to(addr, links)
        return [m for m in self.snapshot() if to(m)]

    def wait_for_addr(self, addr, count, timeout=15.0, links=True):
        to = self._to(addr, links)
        return [m for m in self.wait_for(
            lambda ms: len([m for m in ms if to(m)]) >= count, timeout,
            what=f"{count} message(s) to {addr.lower()}") if to(m)]


# --------------------------------------------------------------------------- HTTP client


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers  # list of (name, value)
        self.raw = raw
        self.body = None
        if raw:
            try:
                self.body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                self.body = None

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def __repr__(self):
        text = self.raw[:600].decode("utf-8", errors="replace") if self.raw else ""
        return f"<HTTP {self.status} {text}>"


class Client:
    """A tiny JSON client for one gpunexd. A new connection per request keeps it
    thread-safe and independent of keep-alive state. `source`: the local address its
    connections are bound to (another loopback address such as 127.0.0.2 is another
    client address to gpunexd)."""

    def __init__(self, port, token=None, timeout=30.0, source=None):
        self.port = port
        self.token = token
        self.timeout = timeout
        self.source = source

    def with_token(self, token):
        return Client(self.port, token, self.timeout, self.source)

    def request(self, method, path, body=None, *, token=None, raw=None, content_type=None,
                headers=None, query=None):
        """`body` is JSON-encoded (Content-Type application/json unless `content_type`);
        `raw` (bytes/str) is sent as is, with `content_type` if given. `token` overrides
        the client's bearer token; token="" sends none."""
        if query:
            path = path + "?" + urllib.parse.urlencode(query)
        hdrs = {}
        tok = self.token if token is None else token
        if tok:
            hdrs["Authorization"] = f"Bearer {tok}"
        data = None
        if raw is not None:
            # Raw bodies carry exactly the Content-Type given (none when None).
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            if content_type:
                hdrs["Content-Type"] = content_type
        elif body is not None:
            data = json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = content_type or "application/json"
        elif content_type:
            hdrs["Content-Type"] = content_type
        if headers:
            hdrs.update(headers)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout,
                                          source_address=(self.source, 0) if self.source else None)
        try:
            try:
                conn.request(method, path, body=data, headers=hdrs)
            except (BrokenPipeError, ConnectionResetError):
                # The server may answer (413) and close before the whole body is sent;
                # the answer is still readable. A connection reset before it was made (a
                # gpunexd killed with connections in its backlog) has no answer to read.
                if conn.sock is None:
                    raise
            resp = conn.getresponse()
            payload = resp.read()
            answer = Response(resp.status, resp.getheaders(), payload)
        finally:
            conn.close()
        # Every answer must be what docs/openapi.yaml describes (openapi_check.py).
        openapi_check.check_answer(method, path, answer.status, answer.header("Content-Type"),
                                   answer.raw, answer.body)
        return answer

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


API = "/api/v1"


# --------------------------------------------------------------------------- backends


class _PgConnection:
    """One connection to a PostgreSQL database, kept for the test's queries (a psql process
    per query cost about 0.1 s of CPU each, most of a PostgreSQL test's own time). Values
    come back as the server's text, as psql printed them: the tests compare those."""

    def __init__(self, url):
        self.url = url
        self.conn = None
        self.lock = threading.Lock()

    def run(self, sql):
        """The rows of `sql` as tuples of text (None for NULL); [] for a statement that
        returns none. Each statement commits on its own (autocommit)."""
        with self.lock:
            if self.conn is None or self.conn.closed:
                self.conn = psycopg2.connect(self.url)
                self.conn.autocommit = True
                _as_text(self.conn)
            try:
                with self.conn.cursor() as cur:
                    cur.execute(sql)
                    return cur.fetchall() if cur.description is not None else []
            except psycopg2.OperationalError:
                # The connection went (a dropped database, a restarted server): the next
                # query opens another.
                self.conn.close()
                raise
            except psycopg2.Error as e:
                raise RuntimeError(f"PostgreSQL: {str(e).strip()}\nSQL: {sql}") from e

    def close(self):
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None


def _as_text(conn):
    """Every type of `conn`'s results as the server's text (psql's output), not Python's
    conversions (Decimal, datetime, bool)."""
    with conn.cursor() as cur:
        cur.execute("SELECT oid FROM pg_type")
        oids = tuple(r[0] for r in cur.fetchall())
    text = psycopg2.extensions.new_type(oids, "GPUNEX_TEXT", lambda value, _cur: value)
    psycopg2.extensions.register_type(text, conn)


def _with_dbname(url, dbname):
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query,
                                    parts.fragment))


class SqliteBackend:
    name = "sqlite"

    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.database_url = ""

    @property
    def db_path(self):
        return os.path.join(self.data_dir, "gpunex.db")

    def query(self, sql, params=()):
        """Rows as tuples of Python values (ints stay ints)."""
        conn = sqlite3.connect(self.db_path, timeout=30)
        try:
            rows = [tuple(r) for r in conn.execute(sql, params).fetchall()]
            conn.commit()  # a test that changes a row means it
            return rows
        finally:
            conn.close()

    def tables(self):
        return sorted(r[0] for r in self.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))

    def drop(self):
        pass


class PostgresBackend:
    name = "postgresql"

    def __init__(self, server_url):
        self.server_url = server_url
        self.dbname = "gpunex_e2e_" + uuid.uuid4().hex[:16]
        _PgConnection(server_url).run(f'CREATE DATABASE "{self.dbname}"')
        self.database_url = _with_dbname(server_url, self.dbname)
        self.conn = _PgConnection(self.database_url)

    def query(self, sql, params=()):
        """Rows as tuples of strings (None for NULL is not distinguished: '' ).

        `params` are substituted client-side as quoted literals (test data only)."""
        if params:
            parts = sql.split("?")
            assert len(parts) == len(params) + 1, "placeholder count"
            out = parts[0]
            for p, rest in zip(params, parts[1:]):
                if isinstance(p, (int, float)):
                    lit = str(p)
                else:
                    lit = "'" + str(p).replace("'", "''") + "'"
                out += lit + rest
            sql = out
        return [tuple(_pg_value("" if v is None else v) for v in row)
                for row in self.conn.run(sql)]

    def tables(self):
        return sorted(r[0] for r in self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "AND table_type = 'BASE TABLE'"))

    def drop(self):
        self.conn.close()
        try:
            server = _PgConnection(self.server_url)
            server.run(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')
            server.close()
        except Exception:  # best effort: the server is throw-away
            pass


def _pg_value(v):
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    return v


# --------------------------------------------------------------------------- gpunexd


class Gpunexd:
    """One gpunexd on its own data dir (and database). start() / kill() / restart() keep
    the data; stop() ends it gracefully."""

    def __init__(self, backend_name="sqlite", smtp_url=None, extra_toml="", root_toml="",
                 share_database_of=None):
        """`share_database_of`: another Gpunexd on PostgreSQL whose database this one uses
        too (two instances of one platform); the other one drops it."""
        self.binary = gpunexd_binary()
        self.tmp = tempfile.mkdtemp(prefix="gpunex-e2e-")
        self.data_dir = os.path.join(self.tmp, "data")
        os.makedirs(self.data_dir)
        self.config_path = os.path.join(self.tmp, "gpunexd.toml")
        self.owns_database = share_database_of is None
        if share_database_of is not None:
            assert share_database_of.backend.name == "postgresql", "instances share PostgreSQL"
            self.backend = share_database_of.backend
        elif backend_name == "postgresql":
            if not PG_URL:
                raise unittest.SkipTest(PG_SKIP_REASON)
            self.backend = PostgresBackend(PG_URL)
        else:
            self.backend = SqliteBackend(self.data_dir)
        self.smtp_url = smtp_url
        self._write_config(extra_toml, root_toml)
        self.proc = None
        self.port = None
        self.starts = 0
        self.log_paths = []

    # -- configuration

    def _write_config(self, extra_toml, root_toml=""):
        """`root_toml`: lines for the root table (before any [table]); `extra_toml`: lines
        appended at the end (whole tables)."""

        def q(s):
            return json.dumps(s)  # a TOML basic string is JSON-compatible for our values

        lines = [
            'listen = "127.0.0.1:0"',
            f"data_dir = {q(self.data_dir)}",
            f"public_url = {q(PUBLIC_URL)}",
            'log_level = "info"',
        ]
        if root_toml:
            lines += root_toml.strip("\n").split("\n")
        if "[auth]" not in extra_toml:
            # Cheap hashing, and no throttling in the way of tests about other things;
            # throttling tests configure [auth] themselves.
            lines += ["", "[auth]"] + AUTH_FOR_TESTS
        if self.smtp_url:
            lines += [
                "",
                "[smtp]",
                f"url = {q(self.smtp_url)}",
                'from = "gpunex <no-reply@gpunex.test>"',
                "poll_ms = 100",
                "backoff_base_seconds = 1",
                # After a SIGKILL on PostgreSQL an email in flight is re-sent once its
                # claim lapses; keep that short so crash tests see it promptly.
                "lease_seconds = 3",
            ]
        if "[benchmarks]" not in extra_toml:
            # Tests about other things do not want run_benchmark commands in their agents'
            # streams; benchmark tests configure [benchmarks] themselves.
            lines += ["", "[benchmarks]", "enabled = false"]
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n" + extra_toml)

    def env(self):
        # The caller's GPUNEX_* overrides must not leak in; the database URL is passed the
        # documented way, as GPUNEX_DATABASE_URL (for serve and admin create alike).
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNEX_")}
        if self.backend.database_url:
            env["GPUNEX_DATABASE_URL"] = self.backend.database_url
        return env

    # -- process control

    def start(self, timeout=START_TIMEOUT_S):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        log_path = os.path.join(self.tmp, f"gpunexd.{self.starts}.log")
        self.log_paths.append(log_path)
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(WRAPPER + [self.binary, "serve", "--config", self.config_path],
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.PIPE, env=self.env(), cwd=self.tmp)
        lines = queue.Queue()

        def pump(stream, sink):
            # Copies stderr to the log file; hands lines to the waiter until the port is
            # known, then keeps draining so that gpunexd never blocks on a full pipe.
            for line in iter(stream.readline, b""):
                sink.write(line)
                sink.flush()
                lines.put(line)
            lines.put(None)

        self._pump = threading.Thread(target=pump, args=(self.proc.stderr, self._log),
                                      daemon=True)
        self._pump.start()
        deadline = time.monotonic() + timeout
        port = None
        while port is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail_start(f"no http.listening log line within {timeout}s")
            try:
                line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait(timeout=5)
                self._fail_start(f"gpunexd exited with status {self.proc.returncode}")
            try:
                ev = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(ev, dict) and ev.get("event") == "http.listening" and ev.get("port"):
                port = int(ev["port"])
        self.port = port
        # The first http.listening line comes from the HTTP server itself; wait until the
        # process says it is ready.
        c = self.client()
        while True:
            try:
                if c.get("/readyz").status == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                self._fail_start(f"gpunexd exited with status {self.proc.returncode}")
            if time.monotonic() > deadline:
                self._fail_start("/readyz did not answer 200")
            time.sleep(0.05)
        return self

    def _fail_start(self, why):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        time.sleep(0.1)
        with open(self.log_paths[-1], "rb") as f:
            stderr = f.read().decode("utf-8", errors="replace")
        raise RuntimeError(f"gpunexd did not start: {why}\n--- stderr ---\n{stderr[-8000:]}")

    def kill(self):
        """SIGKILL: no shutdown, no flush."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._close_log()

    def stop(self, timeout=15):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close_log()

    def _close_log(self):
        if getattr(self, "_pump", None):
            self._pump.join(timeout=5)
            self._pump = None
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None

    def restart(self):
        self.stop()
        return self.start()

    def cleanup(self, keep=False):
        self.stop()
        if self.owns_database:
            self.backend.drop()
        if not keep and not os.environ.get("GPUNEX_E2E_KEEP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def logs(self):
        out = []
        for p in self.log_paths:
            try:
                with open(p, "rb") as f:
                    out.append(f.read().decode("utf-8", errors="replace"))
            except OSError:
                pass
        return "\n".join(out)

    # -- helpers

    def client(self, token=None, source=None):
        return Client(self.port, token, source=source)

    def create_admin(self, email=ADMIN_EMAIL, password=ADMIN_PASSWORD, name="Rita Reviewer"):
        out = subprocess.run([self.binary, "admin", "create", "--email", email, "--password",
                              password, "--name", name, "--config", self.config_path],
                             capture_output=True, text=True, timeout=60, env=self.env())
        if out.returncode != 0:
            raise RuntimeError(f"gpunexd admin create failed ({out.returncode}):\n"
                               f"{out.stdout}\n{out.stderr}")
        return out.stdout

    def signup(self, email=None, password=PASSWORD, name="Test User", verify=True):
        """Signs up; with `verify` the address is then verified, as its owner opening the
        link would (verify_address)."""
        email = email or unique_email()
        r = self.client().post(f"{API}/auth/signup",
                               {"email": email, "password": password, "name": name})
        if r.status != 201:
            raise AssertionError(f"signup {email}: {r}")
        user = r.body["user"]
        if verify:
            self.verify_address(user["id"], email)
        return user

    def verification_token(self, user_id, address, expires=None):
        """The token of a verification link for (user_id, address), signed with the key in
        the server's database: the format docs/security.md gives (base64url of
        "<user id>\\n<address>\\n<expiry, Unix seconds>", ".", base64url of its HMAC-SHA-256)."""
        rows = self.backend.query(
            "SELECT secret FROM signing_keys WHERE name = 'email_verification'")
        if not rows:
            raise AssertionError("no email verification key in the database")
        if expires is None:
            expires = int(time.time()) + 10 * 365 * 86400  # past any test clock
        payload = f"{user_id}\n{address.lower()}\n{expires}".encode()
        mac = hmac.new(rows[0][0].encode(), payload, hashlib.sha256).digest()

        def b64(b):
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
        return b64(payload) + "." + b64(mac)

    def verify_address(self, user_id, address):
        """Verifies `address` for the account (a sign-up's, or one an email waits on) through
        POST /auth/verify-email, as opening the emailed link does."""
        r = self.client().post(f"{API}/auth/verify-email",
                               {"token": self.verification_token(user_id, address)})
        if r.status != 200:
            raise AssertionError(f"verify {address}: {r}")
        return r.body

    def login(self, email, password=PASSWORD):
        r = self.client().post(f"{API}/auth/login", {"email": email, "password": password})
        if r.status != 200:
            raise AssertionError(f"login {email}: {r}")
        return r

    def user(self, name="Test User", email=None):
        """Signs up and logs in a new user; returns a User."""
        email = email or unique_email(name.split()[0].lower())
        u = self.signup(email, name=name)
        r = self.login(email)
        return User(self, email, u["id"], r.body["token"], r.body)

    def admin(self):
        self.create_admin()
        r = self.login(ADMIN_EMAIL, ADMIN_PASSWORD)
        return User(self, ADMIN_EMAIL, r.body["user"]["id"], r.body["token"], r.body,
                    ADMIN_PASSWORD)

    def outbox(self):
        return self.backend.query(
            "SELECT id, to_addr, subject, body, message_id, kind, status, attempts, "
            "lease_until, last_error FROM email_outbox ORDER BY id")


class User:
    def __init__(self, server, email, user_id, token, login_body=None, password=PASSWORD):
        self.server = server
        self.email = email
        self.password = password
        self.id = user_id
        self.token = token
        self.login_body = login_body or {}

    @property
    def c(self):
        return self.server.client(self.token)


def fill_placeholders(value, ctx):
    """`value` (called with ctx first when it is a function) with every "{key}" in its
    strings, at any depth, replaced by ctx[key] (string values of ctx only)."""
    if callable(value):
        value = value(ctx)
    if isinstance(value, str):
        for k, v in ctx.items():
            if isinstance(v, str):
                value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [fill_placeholders(v, ctx) for v in value]
    if isinstance(value, dict):
        return {k: fill_placeholders(v, ctx) for k, v in value.items()}
    return value


class ApiAssertions:
    """Assertions on gpunexd's answers, for unittest.TestCase subclasses (ServerTestCase,
    and test classes that share one gpunexd across their tests)."""

    def _outcome_failed(self):
        """Whether this test has failed (or erred) so far. The first time it finds a
        failure it prints the failure's last lines: the cleanups that dump logs ask this
        first, so the reason comes before the logs (a shortened CI log keeps the start
        and the end of the output, and long dumps pushed the traceback out of it)."""
        outcome = getattr(self, "_outcome", None)
        result = getattr(outcome, "result", None)
        failed = [text for test, text in list(getattr(result, "failures", []))
                  + list(getattr(result, "errors", [])) if test is self]
        if failed and not getattr(self, "_failure_printed", False):
            self._failure_printed = True
            print(f"\n--- {self.id()} failed ---\n" + failed[-1][-2500:])
        return bool(failed)

    def assertStatus(self, resp, status, msg=""):
        self.assertEqual(resp.status, status, f"{msg} {resp!r}")

    def assertError(self, resp, status, fields=(), code=None, msg=""):
        """The error shape {"error": {"code", "message", "fields"?}} with the named fields."""
        self.assertEqual(resp.status, status, f"{msg} {resp!r}")
        self.assertIsInstance(resp.body, dict, f"{msg} body is not a JSON object: {resp!r}")
        self.assertIn("error", resp.body, msg)
        err = resp.body["error"]
        self.assertIsInstance(err.get("code"), str, f"{msg} error.code {resp!r}")
        self.assertTrue(err["code"], msg)
        self.assertIsInstance(err.get("message"), str, f"{msg} error.message {resp!r}")
        self.assertTrue(err["message"], msg)
        if code:
            self.assertEqual(err["code"], code, f"{msg} {resp!r}")
        if fields:
            self.assertIsInstance(err.get("fields"), dict, f"{msg} error.fields {resp!r}")
            for f in fields:
                self.assertIn(f, err["fields"], f"{msg} field {f!r} not named: {resp!r}")
                self.assertIsInstance(err["fields"][f], str)
                self.assertTrue(err["fields"][f])
        return err

    def assertRefusedRows(self, rows, clients, ctx, state, check=None):
        """A table of bad requests, each refused and changing nothing.

        rows: (name, method, path, who, body, status, fields, code): `who` keys `clients`
        (who -> Client); `path` and `body` may hold {placeholders} filled from `ctx`
        (fill_placeholders); `body` is a JSON-able value, a function ctx -> value, or
        ("raw", text, content type); `fields` the exact error.fields keys ([] for none
        checked); `code` the error code or None. `state()` returns what no refused request
        may change; it is compared before and after each row. `check(name, resp, err)`
        (optional) checks more of a row's answer. Every row runs (as a subTest) before the
        failures, if any, are reported together."""
        names = [r[0] for r in rows]
        self.assertEqual(len(names), len(set(names)), "row names must be unique")
        failures = []
        after = None  # the state after the last row, when that row changed nothing
        for name, method, path, who, body, status, fields, code in rows:
            # Each row against the state just before it: one wrong acceptance fails its
            # own row, not every later one. The state after a row that changed nothing is
            # the state before the next one (read once, not twice).
            row_before = after if after is not None else state()
            after = None
            path = fill_placeholders(path, ctx)
            client = clients[who]
            if isinstance(body, tuple) and body[0] == "raw":
                resp = client.request(method, path, raw=body[1], content_type=body[2])
            else:
                resp = client.request(method, path, fill_placeholders(body, ctx))
            with self.subTest(row=name):
                try:
                    err = self.assertError(resp, status, fields=fields, code=code,
                                           msg=f"[{name}]")
                    if fields:
                        self.assertEqual(sorted(err["fields"]), sorted(fields),
                                         f"[{name}] exactly these fields: {resp!r}")
                    if check:
                        check(name, resp, err)
                    now = state()
                    self.assertEqual(now, row_before, f"[{name}] changed something")
                    after = now
                except AssertionError as e:
                    failures.append(f"{name}: {e}")
                    raise
        self.assertFalse(failures, "\n".join(failures))


class ServerTestCase(ApiAssertions, unittest.TestCase):
    """Gives each test its own gpunexd (`self.srv`) and SMTP sink (`self.sink`).
    Subclasses set BACKEND ("sqlite" or "postgresql")."""

    BACKEND = "sqlite"
    SMTP = True
    SINK_DELAY_S = 0.0
    ROOT_TOML = ""   # extra root-table lines of the gpunexd config
    EXTRA_TOML = ""  # extra tables appended to the gpunexd config
    SERVER = None    # a subclass of Gpunexd to start instead of it

    def setUp(self):
        if self.BACKEND == "postgresql" and not PG_URL:
            self.skipTest(PG_SKIP_REASON)
        self.sink = SmtpSink(self.SINK_DELAY_S) if self.SMTP else None
        self.addCleanup(self._stop_sink)
        self.srv = (self.SERVER or Gpunexd)(self.BACKEND, self.sink.url if self.sink else None,
                                            extra_toml=self.EXTRA_TOML,
                                            root_toml=self.ROOT_TOML)
        self.addCleanup(self._cleanup_server)
        self.srv.start()

    def _stop_sink(self):
        if self.sink:
            self.sink.stop()

    def _cleanup_server(self):
        failed = self._outcome_failed()
        if failed:
            print(f"\n--- gpunexd logs (data kept in {self.srv.tmp}) ---\n"
                  + self.srv.logs()[-6000:])
        self.srv.cleanup(keep=failed)


# --------------------------------------------------------------------------- the agent


def terminate(proc, timeout=10):
    """SIGTERM to `proc` (a subprocess.Popen, or None) if it runs, SIGKILL after `timeout`
    seconds; returns once it has exited."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def agent_binary():
    """$GPUNEX_AGENT (the gpunex-agent binary) or "" when it is not set."""
    return os.environ.get("GPUNEX_AGENT", "")


class RealAgent:
    """The real gpunex-agent (`run`) for one machine of `srv` with EMULATED GPUs
    (`gpus`: "l4-24gb:2,h100-sxm-80gb:1"; `perf`: --emulate-perf). Its state directory
    (and so its machine key) is its own and kept across start() / kill(), so a restart is
    the same machine. No Docker (the socket does not exist) unless `docker_socket` names an
    engine's socket (dockerenv.TestDockerd.socket), which then runs its workloads.
    REQUIRES: $GPUNEX_AGENT."""

    def __init__(self, srv, token, gpus, perf=None, name="agent", docker_socket=None):
        self.srv = srv
        self.token = token
        self.docker_socket = docker_socket
        self.args = ["run", "--emulate-gpus", gpus]
        if perf is not None:
            self.args += ["--emulate-perf", str(perf)]
        self.state_dir = tempfile.mkdtemp(prefix=f"gpunex-{name}-")
        self.proc = None
        self.starts = 0
        self._log = None

    def start(self):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        self._log = open(os.path.join(self.state_dir, f"agent-{self.starts}.log"), "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNEX_")}
        env.update({"GPUNEX_PLATFORM_URL": f"http://127.0.0.1:{self.srv.port}",
                    "GPUNEX_TOKEN": self.token, "GPUNEX_STATE_DIR": self.state_dir,
                    "GPUNEX_DOCKER_SOCKET": self.docker_socket or os.path.join(
                        self.state_dir, "no-docker.sock")})
        self.proc = subprocess.Popen([agent_binary()] + self.args, env=env,
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        return self

    def kill(self):
        """SIGKILL: no goodbye; the platform notices the missed heartbeats."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self._close_log()

    def stop(self):
        terminate(self.proc)
        self._close_log()

    def _close_log(self):
        if self._log:
            self._log.close()
            self._log = None

    def logs(self):
        out = []
        for i in range(1, self.starts + 1):
            try:
                with open(os.path.join(self.state_dir, f"agent-{i}.log"), "rb") as f:
                    out.append(f.read().decode("utf-8", errors="replace"))
            except OSError:
                pass
        return "\n".join(out)

    def cleanup(self, keep=False):
        self.stop()
        if not keep and not os.environ.get("GPUNEX_E2E_KEEP"):
            shutil.rmtree(self.state_dir, ignore_errors=True)


# --------------------------------------------------------------------------- data


def gpu_entry(model="h100-sxm-80gb", quantity=8, ram=1024, up=10, down=10, availability=None,
              city="Milan", country="IT", region="eu-south", model_other=None):
    return {
        "model": model,
        "model_other": model_other,
        "quantity": quantity,
        "system_ram_gb": ram,
        "upload_gbps": up,
        "download_gbps": down,
        "availability": availability or {"kind": "always"},
        "location": {"city": city, "country": country, "region": region},
    }


def enterprise_application(email, full_name="Ada Lovelace", company="Analytical Engines DC"):
    """Complete and Enterprise-worthy: UPS, 24/7, 12 months, >= 1 Gbps everywhere."""
    return {
        "contact": {"full_name": full_name, "email": email, "company": company},
        "gpus": [
            gpu_entry("h100-sxm-80gb", 8, 1024, 10, 10),
            gpu_entry("a100-sxm-80gb", 4, 512, 2.5, 5, city="Frankfurt", country="DE",
                      region="eu-central"),
            gpu_entry("other", 2, 256, 1, 1, model_other="NVIDIA B200 192GB", city="Paris",
                      country="FR", region="eu-west"),
        ],
        "infrastructure": {"ups": True, "commitment_months": 12,
                           "maintenance_notes": "2-hour window on the first Sunday of each month"},
    }


def community_application(email, full_name="Bob Builder"):
    return {
        "contact": {"full_name": full_name, "email": email, "company": ""},
        "gpus": [gpu_entry("rtx4090-24gb", 2, 64, 0.5, 0.9, availability={
            "kind": "schedule", "timezone": "Europe/Rome",
            "windows": [{"days": ["mon", "tue", "wed"], "start": "08:00", "end": "20:00"},
                        {"days": ["sat"], "start": "00:00", "end": "24:00"}]})],
        "infrastructure": {"ups": False, "commitment_months": 0, "maintenance_notes": ""},
    }


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def catalog_models(srv):
    """The GPU models of the catalog (GET /api/v1/gpu-models: items with id,
    default_price_micro, ...)."""
    r = srv.client().get(f"{API}/gpu-models")
    assert r.status == 200, r
    return r.body["items"]


def set_prices(user, prices):
    """Replaces the provider's prices (PUT /api/v1/providers/me/prices) with `prices`, a
    {gpu_model: price_micro} dict (a model left out has no price afterwards). Returns the
    answer's items."""
    items = [{"gpu_model": m, "price_micro": p} for m, p in prices.items()]
    r = user.c.put(f"{API}/providers/me/prices", {"items": items})
    assert r.status == 200, r
    return r.body["items"]


def price_every_model(srv, user):
    """Prices every catalog model at its catalog default for the provider: a GPU whose model
    has no price is not listed ("no_price_set"). Returns {gpu_model: price_micro}."""
    prices = {m["id"]: m["default_price_micro"] for m in catalog_models(srv)}
    set_prices(user, prices)
    return prices


def approved_provider(srv, admin, name="Prov", tier="community", sink=None, priced=True,
                      application=None):
    """A new user whose application is approved; returns (User, application id, token
    from the approval email or None when no sink).

    `priced`: the provider prices every catalog model at its default (price_every_model),
    so that its GPUs can be listed; False leaves it without prices. `application`: the
    application body (default: enterprise_application with the contact's email), or a
    function contact email -> body."""
    u = srv.user(f"{name} Person")
    contact = unique_email(name.lower() + "-contact")
    if application is None:
        body = enterprise_application(contact, full_name=f"{name} Person")
    elif callable(application):
        body = application(contact)
    else:
        body = copy.deepcopy(application)
    body["submit"] = True
    r = u.c.post(f"{API}/provider-applications", body)
    assert r.status == 201, r
    app_id = r.body["id"]
    decision = {"decision": "approve", "tier": tier}
    if tier != r.body.get("suggested_tier", tier):
        decision["override_suggestion"] = True  # the reviewer confirms deciding against it
    r = admin.c.post(f"{API}/provider-applications/{app_id}/decision", decision)
    assert r.status == 200, r
    token = None
    # The contact address gets the emails once verified (the submission's is held until then).
    srv.verify_address(u.id, contact)
    if sink is not None:
        # The approval, with the token (after the receipt, and a link if one went out first).
        addr = contact.lower()
        msgs = [m for m in sink.wait_for(
            lambda ms: any(m.to_addr == addr and AGENT_TOKEN_RE.search(m.body) for m in ms),
            15.0, what=f"the approval email to {addr}") if m.to_addr == addr]
        for m in msgs:
            found = AGENT_TOKEN_RE.search(m.body)
            if found:
                token = found.group(0)
    u.contact_email = contact
    if priced:
        price_every_model(srv, u)
    return u, app_id, token


def provider_with_agent_token(srv, admin, name="Prov", tier="community", token_name="rack 1",
                              priced=True, application=None):
    """An approved provider (approved_provider: `priced`, `application`) and a fresh agent
    token made through the API (no SMTP sink needed). Returns (User, token, token id)."""
    u, _, _ = approved_provider(srv, admin, name=name, tier=tier, priced=priced,
                                application=application)
    r = u.c.post(f"{API}/providers/me/agent-tokens", {"name": token_name})
    assert r.status == 201, r
    assert AGENT_TOKEN_RE.fullmatch(r.body["token"]), r.body
    return u, r.body["token"], r.body["id"]
