#!/usr/bin/python3
"""A real SMTP server for gpunex's notify tests, built on aiosmtpd.

Usage: smtp_sink.py --out FILE [--port N] [--tls-cert PEM --tls-key PEM]
                    [--exit-on-stdin-eof] [--verbose]

Listens on 127.0.0.1 (port N, or a free one), prints the port on a line of its own
once it accepts connections, and appends every accepted message to FILE as one JSON
line: {"mail_from", "rcpt_tos", "raw" (the message as received, CRLF line ends),
"subject" and "body" (decoded by Python's email package), "message_id"}.

Recipients steer the reply, so tests can provoke failures:
  reject...@  -> 550 at RCPT (permanent)
  tempfail...@ -> 451 at RCPT (transient)
With --tls-cert/--tls-key the server offers STARTTLS and requires it before MAIL.
Runs until SIGTERM or SIGINT, or, with --exit-on-stdin-eof, until its standard input
closes (so it cannot outlive a test process that crashed).
"""

import argparse
import email
import email.policy
import json
import logging
import os
import signal
import socket
import ssl
import sys
import threading

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, out_path):
        self.out_path = out_path
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = address.split("@", 1)[0].lower()
        if local.startswith("reject"):
            return "550 5.1.1 mailbox unavailable"
        if local.startswith("tempfail"):
            return "451 4.3.0 try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "raw": raw.decode("utf-8", errors="replace"),
            "subject": str(msg["subject"]),
            "message_id": str(msg["message-id"]),
            "body": msg.get_content(),
        }
        with self.lock, open(self.out_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
        return "250 Message accepted for delivery"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    # aiosmtpd logs a traceback for every failed TLS handshake, which some tests cause
    # on purpose.
    logging.getLogger("mail.log").setLevel(logging.DEBUG if args.verbose else logging.CRITICAL)

    port = args.port or free_port()
    kwargs = {}
    if args.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        kwargs = {"tls_context": context, "require_starttls": True}
    controller = Controller(Sink(args.out), hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    print(port, flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    if args.exit_on_stdin_eof:
        def watch_stdin():
            while sys.stdin.buffer.read(4096):
                pass
            done.set()
        threading.Thread(target=watch_stdin, daemon=True).start()
    done.wait()
    controller.stop()
    return 0


if __name__ == "__main__":
    # os._exit: the stdin watcher may still be blocked in a read, which a normal
    # interpreter shutdown reports as a fatal error.
    os._exit(main())
