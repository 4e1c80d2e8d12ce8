"""A Solana JSON-RPC node for end-to-end tests: tests/solana/rpc-front.mjs, driven from Python.

The front runs LiteSVM (the real SPL Token, Associated Token Account and Memo programs,
signature and blockhash checks on) behind a loopback JSON-RPC server that answers like a
Solana node, plus test_ control methods (tests/solana/README.md). One SolanaFront is one
chain: start() launches it on a free port, `.url` is what gpunexd's RPC client is pointed
at, `.mint` the 6-decimal USDC mint it created. Standard library only.

    front = SolanaFront().start()
    payer = front.new_wallet()                      # 1 SOL
    front.mint_usdc(payer["public_key"], 5_000_000)  # 5 USDC
    sig = front.pay("solana:<recipient>?amount=2&spl-token=<mint>&reference=<key>",
                    payer["secret_key"])
    front.stop()

Environment:
  GPUNEX_NODE              the node binary (default: node on PATH; 20 or newer)
  GPUNEX_SOURCE_DIR        the repository root (default: two folders up from this file)
  GPUNEX_E2E_SOLANA_VERBOSE  log every call of the front in its log file (front.log_path)
"""

import atexit
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

START_TIMEOUT_S = 30
CALL_TIMEOUT_S = 30
NODE = os.environ.get("GPUNEX_NODE", "node")


def _source_dir():
    d = os.environ.get("GPUNEX_SOURCE_DIR")
    if d:
        return d
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


SOLANA_DIR = os.path.join(_source_dir(), "tests", "solana")

_setup_lock = threading.Lock()
_setup_done = False


def ensure_installed():
    """Runs tests/solana/setup.sh (npm ci when node_modules is missing or stale) once per
    process; raises RuntimeError with npm's output when it fails."""
    global _setup_done
    with _setup_lock:
        if _setup_done:
            return
        r = subprocess.run([os.path.join(SOLANA_DIR, "setup.sh")], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"tests/solana/setup.sh failed ({r.returncode}):\n"
                               f"{r.stdout}{r.stderr}")
        _setup_done = True


class SolanaRpcError(Exception):
    """A JSON-RPC error answer: .code, .message, .data (e.g. {err, logs} of a failed
    preflight, code -32002)."""

    def __init__(self, method, code, message, data=None):
        super().__init__(f"{method}: {code} {message}")
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class SolanaHttpError(Exception):
    """A non-200 HTTP answer (test_failSends makes sendTransaction answer 503)."""

    def __init__(self, method, status, body):
        super().__init__(f"{method}: HTTP {status} {body[:200]!r}")
        self.method = method
        self.status = status
        self.body = body


class PayError(Exception):
    """pay.mjs refused or failed: .kind is the JavaScript error class (CreateTransferError:
    @solana/pay refused, e.g. "insufficient funds"; TokenAccountNotFoundError; or
    SendTransactionError: the node refused), .error its message, .logs the program logs."""

    def __init__(self, kind, error, logs=None):
        super().__init__(f"{kind}: {error}")
        self.kind = kind
        self.error = error
        self.logs = logs


def _secret_json(secret):
    """A secret key as pay.mjs takes it: a JSON array of 64 numbers."""
    if isinstance(secret, str):
        return secret
    return json.dumps(list(secret))


class SolanaFront:
    """One front process (one chain). Not thread-safe; one test drives it."""

    def __init__(self, mint=None, verbose=None):
        self.mint_arg = mint
        self.verbose = (bool(os.environ.get("GPUNEX_E2E_SOLANA_VERBOSE"))
                        if verbose is None else verbose)
        self.proc = None
        self.port = None
        self.url = None
        self.mint = None
        self.mint_authority = None
        self.tmp = tempfile.mkdtemp(prefix="gpunex-solana-")
        self.log_path = os.path.join(self.tmp, "rpc-front.log")
        self._log = None
        self._pump = None
        self._id = 0

    # -- process control

    def start(self, timeout=START_TIMEOUT_S):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        ensure_installed()
        args = [NODE, os.path.join(SOLANA_DIR, "rpc-front.mjs"), "--port", "0"]
        if self.mint_arg:
            args += ["--mint", self.mint_arg]
        if self.verbose:
            args.append("--verbose")
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._log, cwd=SOLANA_DIR)
        lines = queue.Queue()

        def pump(stream):
            # Hands stdout lines to the waiter; keeps draining so the front never blocks.
            for line in iter(stream.readline, b""):
                lines.put(line)
            lines.put(None)

        self._pump = threading.Thread(target=pump, args=(self.proc.stdout,), daemon=True)
        self._pump.start()
        deadline = time.monotonic() + timeout
        ready = None
        while ready is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail_start(f"no ready line within {timeout}s")
            try:
                line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait(timeout=5)
                self._fail_start(f"rpc-front exited with status {self.proc.returncode}")
            try:
                ev = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(ev, dict) and ev.get("port"):
                ready = ev
        self.port = int(ready["port"])
        self.url = f"http://127.0.0.1:{self.port}"
        self.mint = ready["mint"]
        self.mint_authority = ready["mint_authority"]
        atexit.register(self.stop)
        return self

    def _fail_start(self, why):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()
        raise RuntimeError(f"rpc-front did not start: {why}\n--- log ---\n{self.log_text()[-8000:]}")

    def stop(self, timeout=10):
        """SIGTERM and wait (SIGKILL past `timeout`). Idempotent."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close()

    def _close(self):
        if self._pump:
            self._pump.join(timeout=5)
            self._pump = None
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._log:
            self._log.close()
            self._log = None

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- JSON-RPC

    def call(self, method, *params):
        """Calls `method` with positional `params`; returns the result. Raises
        SolanaRpcError on a JSON-RPC error, SolanaHttpError on a non-200 answer."""
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method,
                           "params": list(params)}).encode()
        req = urllib.request.Request(self.url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=CALL_TIMEOUT_S) as res:
                answer = json.loads(res.read())
        except urllib.error.HTTPError as e:
            raise SolanaHttpError(method, e.code, e.read().decode("utf-8", errors="replace")) from None
        if "error" in answer:
            err = answer["error"]
            raise SolanaRpcError(method, err.get("code"), err.get("message"), err.get("data"))
        return answer["result"]

    # -- the chain, as tests see it

    def new_wallet(self):
        """A fresh keypair holding 1 SOL: {"public_key": base58, "secret_key": [64 ints]}."""
        return self.call("test_newWallet")

    def airdrop(self, pubkey, lamports):
        """Adds lamports (outside any transaction); returns the new balance."""
        return self.call("test_airdrop", pubkey, int(lamports))["lamports"]

    def lamports(self, pubkey):
        return self.call("test_lamports", pubkey)

    def mint_usdc(self, owner, amount):
        """Mints `amount` USDC base units (micro-USDC) to `owner`'s associated token account,
        creating it when missing (also with amount 0); returns the token account."""
        return self.call("test_mintUsdc", owner, str(int(amount)))["token_account"]

    def create_mint(self, decimals=6):
        """Another mint (for wrong-mint tests), with the front's mint authority."""
        return self.call("test_createMint", decimals)["mint"]

    def mint_to(self, mint, owner, amount):
        return self.call("test_mintTo", mint, owner, str(int(amount)))["token_account"]

    def token_balance(self, owner_or_token_account, mint=None):
        """Base units as int: of a token account, or summed over the token accounts of an
        owner for `mint` (USDC by default); 0 when there is none."""
        params = [owner_or_token_account] + ([mint] if mint else [])
        return int(self.call("test_tokenBalance", *params))

    def drop_next_sends(self, n):
        """The next n sendTransaction calls answer the signature but nothing lands."""
        return self.call("test_dropNextSends", n)

    def fail_sends(self, n):
        """The next n sendTransaction calls are answered HTTP 503."""
        return self.call("test_failSends", n)

    def expire_blockhash(self):
        """Every blockhash issued so far is past its lastValidBlockHeight; returns
        {blockhash, lastValidBlockHeight, blockHeight, slot} of the new one."""
        return self.call("test_expireBlockhash")

    def advance_blocks(self, n):
        return self.call("test_advanceBlocks", n)

    def hold_confirmations(self, hold=True):
        """While held, landed transactions stay "processed"; releasing finalizes them."""
        return self.call("test_holdConfirmations", bool(hold))

    def sends(self):
        """{"count", "signatures", "sends": [{"signature", "outcome"}]} of every
        sendTransaction received, dropped, refused and failed ones included."""
        return self.call("test_sends")

    def transactions(self):
        """The landed transactions, oldest first: [{signature, slot, blockTime, err, memo,
        confirmationStatus}]."""
        return self.call("test_transactions")

    def transaction(self, signature, commitment="confirmed"):
        """getTransaction (json encoding, v0 allowed), or None."""
        return self.call("getTransaction", signature, {
            "encoding": "json", "commitment": commitment, "maxSupportedTransactionVersion": 0})

    def signature_status(self, signature):
        return self.call("getSignatureStatuses", [signature],
                         {"searchTransactionHistory": True})["value"][0]

    # -- the reference clients

    def pay(self, url, payer_secret, mint=None, amount=None, recipient=None,
            skip_preflight=False):
        """Pays a solana: transfer request URL as a wallet would (tests/solana/pay.mjs:
        @solana/pay's createTransfer); mint/amount/recipient tamper with the parsed request
        first (amount is a decimal in token units, e.g. "1.5"). Returns the signature;
        raises PayError when @solana/pay or the node refuses."""
        args = [NODE, os.path.join(SOLANA_DIR, "pay.mjs"), "--rpc", self.url, "--url", url,
                "--payer-secret", _secret_json(payer_secret)]
        if mint is not None:
            args += ["--mint-override", mint]
        if amount is not None:
            args += ["--amount-override", str(amount)]
        if recipient is not None:
            args += ["--recipient-override", recipient]
        if skip_preflight:
            args.append("--skip-preflight")
        r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=60)
        try:
            out = json.loads(r.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            raise RuntimeError(f"pay.mjs answered no JSON (status {r.returncode}):\n"
                               f"{r.stdout}{r.stderr}") from None
        if r.returncode != 0:
            raise PayError(out.get("kind"), out.get("error"), out.get("logs"))
        return out["signature"]

    @staticmethod
    def decode_tx(b64):
        """The decoded transaction (tests/solana/decode-tx.mjs): feePayer, recentBlockhash,
        signatures [{pubkey, signature, valid}], signaturesValid, instructions [{programId,
        program, keys, data (hex), decoded}]."""
        ensure_installed()
        r = subprocess.run([NODE, os.path.join(SOLANA_DIR, "decode-tx.mjs")], input=b64,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise ValueError(r.stderr.strip())
        return json.loads(r.stdout)


# One front for all the tests of a module: `from solana_front import MODULE_FRONT as FRONT,
# start_module_front as setUpModule, stop_module_front as tearDownModule`.
MODULE_FRONT = {"front": None}


def start_module_front():
    import shutil
    import unittest
    if not shutil.which(NODE):
        raise unittest.SkipTest("node is not installed (the Solana test chain needs it)")
    if MODULE_FRONT["front"] is None:
        MODULE_FRONT["front"] = SolanaFront().start()


def stop_module_front():
    if MODULE_FRONT["front"]:
        MODULE_FRONT["front"].stop()
        MODULE_FRONT["front"] = None
