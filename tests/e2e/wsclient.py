"""A minimal RFC 6455 WebSocket client on the standard library, for the e2e tests.

It speaks just enough of the protocol to play a gpunex agent, and is deliberately able to
break it for hostile tests:

    ws = wsclient.connect(port, "/api/v1/agent/connect",
                          headers={"Authorization": "Bearer gpx_a_..."})
    ws.send_json({"type": "hello", ...})
    msg = ws.recv_json(timeout=5)          # the next text message, parsed
    ws.send_frame(OP_BINARY, b"\\x00")       # anything, masked or not, any opcode
    code, reason, seen = ws.wait_closed(5)  # the peer's close (code None on a bare EOF)

A refused upgrade raises HandshakeRefused with the HTTP status, headers and body (the
server's JSON error, parsed when possible). Pings from the peer are answered with pongs
while receiving; a close frame from the peer is answered with a close frame (as the RFC
asks) and reported. Not thread-safe for receiving; sends are serialised by a lock, so a
heartbeat thread may send while another thread receives.
"""

import base64
import hashlib
import json
import os
import socket
import struct
import threading
import time

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA


class HandshakeRefused(Exception):
    """The server answered the upgrade request with something other than 101."""

    def __init__(self, status, reason, headers, raw):
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value)
        self.raw = raw
        self.body = None
        try:
            self.body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.body = None
        super().__init__(f"WebSocket upgrade refused: HTTP {status} {reason} "
                         f"{raw[:400].decode('utf-8', errors='replace')}")


class ConnectionClosed(Exception):
    """Raised by recv_text/recv_json when the connection closed instead."""

    def __init__(self, code, reason):
        self.code = code
        self.reason = reason
        super().__init__(f"WebSocket closed: code={code} reason={reason!r}")


class Timeout(Exception):
    pass


class Message:
    """One received message: kind "text", "binary" or "close" (data = (code, reason);
    code None when the socket ended without a close frame)."""

    def __init__(self, kind, data):
        self.kind = kind
        self.data = data

    def __repr__(self):
        d = self.data
        if isinstance(d, (bytes, str)) and len(d) > 300:
            d = d[:300]
        return f"<ws {self.kind} {d!r}>"


def _read_http_head(sock, buf, deadline):
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("no HTTP answer to the upgrade request")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed during the handshake: {bytes(buf)!r}")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("iso-8859-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else ""
    headers = []
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers.append((k.strip(), v.strip()))
    return status, reason, headers, bytearray(rest)


def _header(headers, name):
    name = name.lower()
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def connect(port, path, headers=None, host="127.0.0.1", timeout=10.0, host_header=None):
    """Opens a WebSocket. Raises HandshakeRefused when the server does not upgrade.
    `host_header`: the Host header's value, when not host:port (a name that resolves
    to `host`)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        lines = [f"GET {path} HTTP/1.1", f"Host: {host_header or f'{host}:{port}'}",
                 "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Key: {key}",
                 "Sec-WebSocket-Version: 13"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))
        deadline = time.monotonic() + timeout
        status, reason, hdrs, rest = _read_http_head(sock, bytearray(), deadline)
        if status != 101:
            length = int(_header(hdrs, "Content-Length") or 0)
            while len(rest) < length and time.monotonic() < deadline:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
            raise HandshakeRefused(status, reason, hdrs, bytes(rest[:length] if length else rest))
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode("ascii")).digest()).decode()
        if _header(hdrs, "Sec-WebSocket-Accept") != accept:
            raise ConnectionError(f"bad Sec-WebSocket-Accept in {hdrs}")
        if (_header(hdrs, "Upgrade") or "").lower() != "websocket":
            raise ConnectionError(f"bad Upgrade header in {hdrs}")
        return WebSocket(sock, rest, hdrs)
    except BaseException:
        sock.close()
        raise


class WebSocket:
    def __init__(self, sock, buffered=b"", headers=()):
        self.sock = sock
        self.headers = list(headers)
        self._buf = bytearray(buffered)
        self._send_lock = threading.Lock()
        self.closed = False          # the connection is over (close frame or EOF seen)
        self.close_code = None       # the peer's close code (None: no close frame)
        self.close_reason = None
        self._close_sent = False
        self.pings = 0               # pings answered
        self.pongs = []              # payloads of the pongs received

    # ------------------------------------------------------------------ sending

    @staticmethod
    def encode_frame(opcode, payload, *, fin=True, mask=True, rsv=0, length=None):
        """One frame as bytes. `length` overrides the announced payload length (for
        malformed frames); `mask` False sends an unmasked client frame (a protocol error)."""
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        n = len(payload) if length is None else length
        b0 = (0x80 if fin else 0) | ((rsv & 0x7) << 4) | (opcode & 0xF)
        mbit = 0x80 if mask else 0
        if n < 126:
            head = struct.pack("!BB", b0, mbit | n)
        elif n < (1 << 16):
            head = struct.pack("!BBH", b0, mbit | 126, n)
        else:
            head = struct.pack("!BBQ", b0, mbit | 127, n)
        if not mask:
            return head + payload
        key = os.urandom(4)
        return head + key + _xor(payload, key)

    def send_raw(self, data):
        """Writes bytes as they are. Returns False when the peer has already gone."""
        with self._send_lock:
            try:
                self.sock.sendall(data)
                return True
            except OSError:
                return False

    def send_frame(self, opcode, payload=b"", **kw):
        return self.send_raw(self.encode_frame(opcode, payload, **kw))

    def send_text(self, text):
        return self.send_frame(OP_TEXT, text)

    def send_json(self, obj):
        return self.send_text(json.dumps(obj))

    def send_binary(self, data):
        return self.send_frame(OP_BINARY, data)

    def ping(self, data=b"p"):
        return self.send_frame(OP_PING, data)

    def close(self, code=1000, reason="", timeout=2.0):
        """Starts (or answers) the closing handshake, waits briefly for the peer's close
        frame, and closes the socket."""
        if not self._close_sent and not self.closed:
            self._send_close(code, reason)
        if not self.closed:
            try:
                self.wait_closed(timeout)
            except (Timeout, OSError):
                pass
        self.abort()

    def abort(self):
        """Drops the TCP connection with no closing handshake (an agent that dies)."""
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def _send_close(self, code, reason=""):
        self._close_sent = True
        payload = b"" if code is None else struct.pack("!H", code) + reason.encode("utf-8")
        self.send_frame(OP_CLOSE, payload)

    # ------------------------------------------------------------------ receiving

    def _fill(self, n, deadline):
        while len(self._buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout(f"no complete frame within the time limit ({len(self._buf)} bytes)")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(max(65536, n - len(self._buf)))
            except socket.timeout:
                raise Timeout("no complete frame within the time limit") from None
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise EOFError("the peer closed the TCP connection")
            self._buf += chunk

    def _take(self, n, deadline):
        self._fill(n, deadline)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def recv_frame(self, timeout=5.0):
        """(fin, opcode, payload) of the next frame. Raises Timeout or EOFError."""
        deadline = time.monotonic() + timeout
        self._fill(2, deadline)
        b0, b1 = self._buf[0], self._buf[1]
        n = b1 & 0x7F
        hlen = 2 + (2 if n == 126 else 8 if n == 127 else 0) + (4 if b1 & 0x80 else 0)
        self._fill(hlen, deadline)
        head = bytes(self._buf[:hlen])
        if n == 126:
            n = struct.unpack("!H", head[2:4])[0]
        elif n == 127:
            n = struct.unpack("!Q", head[2:10])[0]
        # Nothing is consumed until the whole frame is here, so a Timeout loses nothing.
        self._fill(hlen + n, deadline)
        payload = self._take(hlen + n, deadline)[hlen:]
        if b1 & 0x80:
            payload = _xor(payload, head[-4:])
        return bool(b0 & 0x80), b0 & 0x0F, payload

    def recv(self, timeout=5.0):
        """The next message (Message), answering pings on the way. After the connection
        has closed, returns the close Message again. Raises Timeout."""
        if self.closed:
            return Message("close", (self.close_code, self.close_reason))
        deadline = time.monotonic() + timeout
        parts, kind = [], None
        while True:
            left = deadline - time.monotonic()
            try:
                fin, op, payload = self.recv_frame(max(left, 0.0))
            except EOFError:
                self.closed = True
                try:
                    self.sock.close()
                except OSError:
                    pass
                return Message("close", (self.close_code, self.close_reason))
            if op == OP_PING:
                self.pings += 1
                self.send_frame(OP_PONG, payload)
                continue
            if op == OP_PONG:
                self.pongs.append(payload)
                continue
            if op == OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                reason = payload[2:].decode("utf-8", errors="replace")
                self.close_code, self.close_reason = code, reason
                if not self._close_sent:
                    self._send_close(code if code not in (None, 1005, 1006, 1015) else 1000)
                self.closed = True
                try:
                    self.sock.close()
                except OSError:
                    pass
                return Message("close", (code, reason))
            if op in (OP_TEXT, OP_BINARY):
                kind = "text" if op == OP_TEXT else "binary"
                parts = [payload]
            elif op == OP_CONT:
                parts.append(payload)
            else:
                raise ConnectionError(f"unexpected opcode {op:#x} from the server")
            if fin:
                data = b"".join(parts)
                return Message(kind, data.decode("utf-8") if kind == "text" else data)

    def recv_text(self, timeout=5.0):
        m = self.recv(timeout)
        if m.kind == "close":
            raise ConnectionClosed(*m.data)
        if m.kind != "text":
            raise AssertionError(f"expected a text message, got {m!r}")
        return m.data

    def recv_json(self, timeout=5.0):
        return json.loads(self.recv_text(timeout))

    def wait_closed(self, timeout=5.0):
        """Reads until the peer closes; returns (code, reason, [text messages seen])."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            m = self.recv(max(deadline - time.monotonic(), 0.0))
            if m.kind == "close":
                return m.data[0], m.data[1], seen
            if m.kind == "text":
                seen.append(m.data)


def _xor(data, key):
    if not data:
        return b""
    n = len(data)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")
