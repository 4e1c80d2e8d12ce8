#!/usr/bin/python3
"""Seeds a demo gpunexd through its public API: a provider account whose application is
approved by the demo admin, with an hourly price for its GPU model (so the demo agent's
GPUs are offered on the marketplace once benchmarked), a demo customer account with a balance of 25 USDC (an operator credit, made
once), and an agent token for the demo agent (printed on stdout).

    scripts/demo_seed.py BASE_URL ADMIN_EMAIL ADMIN_PASSWORD
    scripts/demo_seed.py BASE_URL ADMIN_EMAIL ADMIN_PASSWORD rent
    scripts/demo_seed.py SOLANA_RPC_URL - - chain KEY_FILE

The second form waits for the demo agent's offer (its first benchmark must pass) and rents
one of its GPUs as the demo customer, running a small container that prints a line every
few seconds, unless the customer has an active rental already.

The third form prepares the local Solana test chain of the demo (tests/solana, LiteSVM):
the platform's key file (made once, mode 0600) funded with test SOL and test USDC, so that
gpunexd pays USDC there and takes top-ups. With GPUNEX_SOLANA_RPC_URL set, the first form
also gives the demo provider a wallet on that chain as its payout method.

Idempotent: an existing demo provider is reused and only a new agent token is made."""
import json
import os
import re
import sqlite3
import sys
import time
import urllib.error
import urllib.request

base, admin_email, admin_password = sys.argv[1].rstrip("/") + "/api/v1", sys.argv[2], sys.argv[3]
PROVIDER = {"email": "provider@gpunex.local", "password": "eight-l4s-in-milan", "name": "Demo Provider"}
CUSTOMER = {"email": "customer@gpunex.local", "password": "render-farm-at-night", "name": "Demo Customer"}
DEMO_PRICES = [{"gpu_model": "l4-24gb", "price_micro": 450_000}]  # 0.45 USDC per GPU-hour


def call(method, path, body=None, token=None, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    if token:
        headers["Authorization"] = "Bearer " + token
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def login(email, password):
    status, body = call("POST", "/auth/login", {"email": email, "password": password})
    if status != 200:
        sys.exit(f"demo: cannot log in as {email}: {body}")
    return body["token"]


# A small web server on its declared port 8080 (docs/access.md), and a line every 5 s.
DEMO_RENTAL = {"gpus": 1, "image": "docker.io/library/busybox:1.36",
               "command": ["sh", "-c", "mkdir -p /tmp/www && "
                           "echo 'hello from a gpunex rental' > /tmp/www/index.html && "
                           "httpd -p 8080 -h /tmp/www && "
                           "while true; do echo demo rental at work; sleep 5; done"],
               "ports": [{"port": 8080, "protocol": "http"}],
               "max_duration_s": 4 * 3600}


def rent():
    customer = login(CUSTOMER["email"], CUSTOMER["password"])
    _, active = call("GET", "/rentals?state=active", token=customer)
    if active and active["items"]:
        return
    for _ in range(600):  # the first benchmark of the emulated GPUs takes a few minutes
        _, offers = call("GET", "/offers?gpu_model=l4-24gb")
        if offers and offers["items"]:
            body = dict(DEMO_RENTAL, offer_id=offers["items"][0]["id"])
            status, rental = call("POST", "/rentals", body, customer, key="demo-rental-ports")
            if status == 201:
                print(f"demo: rental {rental['id']} started on the demo agent", file=sys.stderr)
                return
            print(f"demo: cannot rent: {rental}", file=sys.stderr)
            return
        time.sleep(2)
    print("demo: no offer appeared; is the demo agent running?", file=sys.stderr)


def chain_call(url, method, *params):
    req = urllib.request.Request(url, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                                       "params": list(params)}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        answer = json.loads(resp.read())
    if "error" in answer:
        sys.exit(f"demo: test chain {method}: {answer['error']}")
    return answer["result"]


B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def base58(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def prepare_chain(url, key_file):
    """The platform's key (kept across demo runs) funded on the fresh test chain."""
    import os
    if not os.path.exists(key_file):
        wallet = chain_call(url, "test_newWallet")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(wallet["secret_key"], f)
    with open(key_file) as f:
        public_key = base58(bytes(json.load(f)[32:]))
    chain_call(url, "test_airdrop", public_key, 100_000_000_000)  # 100 test SOL
    chain_call(url, "test_mintUsdc", public_key, 100_000_000_000)  # 100,000 test USDC


if sys.argv[4:5] == ["chain"]:
    prepare_chain(sys.argv[1], sys.argv[5])
    sys.exit(0)

if sys.argv[4:] == ["rent"]:
    rent()
    sys.exit(0)

def confirm_email(address):
    """Opens the verification link of `address` as its owner would. Without an SMTP server
    the demo's emails wait in the outbox of its SQLite database, which stands in for the
    mailbox here; nothing happens when there is no such link (verified already)."""
    db = os.path.join(os.environ.get("GPUNEX_DATA_DIR", ".demo/data"), "gpunex.db")
    if not os.path.exists(db):
        return
    with sqlite3.connect(db, timeout=10) as conn:
        row = conn.execute("SELECT body FROM email_outbox WHERE kind = 'email.verify' AND "
                           "address = ? AND body IS NOT NULL ORDER BY created_at DESC LIMIT 1",
                           (address,)).fetchone()
    found = re.search(r"/#/verify-email\?token=(\S+)", row[0]) if row else None
    if found:
        call("POST", "/auth/verify-email", {"token": found.group(1)})


# Sign-up answers 201 also when the account exists (it does not say which addresses have one).
call("POST", "/auth/signup", PROVIDER)
confirm_email(PROVIDER["email"])
provider = login(PROVIDER["email"], PROVIDER["password"])
admin = login(admin_email, admin_password)
status, _ = call("GET", "/providers/me", token=provider)
if status != 200:
    application = {
        "contact": {"full_name": "Demo Provider", "email": PROVIDER["email"], "company": "Demo DC"},
        "gpus": [{"model": "l4-24gb", "quantity": 2, "system_ram_gb": 128, "upload_gbps": 1,
                  "download_gbps": 1, "availability": {"kind": "always"},
                  "location": {"city": "Milan", "country": "IT", "region": "eu-south"}}],
        "infrastructure": {"ups": True, "commitment_months": 6, "maintenance_notes": ""},
        "submit": True,
    }
    status, app = call("POST", "/provider-applications", application, provider)
    if status == 409:  # an application exists: find it and submit it if needed
        _, page = call("GET", "/provider-applications", token=provider)
        app = page["items"][0]
        if app["status"] in ("draft", "needs_info"):
            call("POST", f"/provider-applications/{app['id']}/submit", token=provider)
    elif status != 201:
        sys.exit(f"demo: application refused: {app}")
    status, body = call("POST", f"/provider-applications/{app['id']}/decision",
                        {"decision": "approve", "tier": "community", "message": "Demo approval"}, admin)
    if status != 200:
        sys.exit(f"demo: approval failed: {body}")
status, body = call("PUT", "/providers/me/prices", {"items": DEMO_PRICES}, provider)
if status != 200:
    sys.exit(f"demo: cannot set the demo prices: {body}")
chain_url = os.environ.get("GPUNEX_SOLANA_RPC_URL")
if chain_url:
    status, settings = call("GET", "/providers/me/payout-settings", token=provider)
    if status == 200 and not settings["method"]:
        wallet = chain_call(chain_url, "test_newWallet")["public_key"]
        status, body = call("PUT", "/providers/me/payout-settings",
                            {"schedule": "weekly", "threshold_micro": 10_000_000,
                             "method": {"kind": "solana", "wallet": wallet},
                             "password": PROVIDER["password"]}, provider)
        if status != 200:
            sys.exit(f"demo: cannot set the provider's payout method: {body}")
call("POST", "/auth/signup", CUSTOMER)
confirm_email(CUSTOMER["email"])
customer_id = call("GET", "/me", token=login(CUSTOMER["email"], CUSTOMER["password"]))[1]["id"]
status, body = call("POST", "/admin/credits", {"user_id": customer_id, "amount_micro": 25_000_000,
                                               "reference": "demo credit"}, admin, key="demo-credit")
if status != 201:
    sys.exit(f"demo: cannot credit the demo customer: {body}")
status, token = call("POST", "/providers/me/agent-tokens", {"name": "demo agent"}, provider)
if status != 201:
    sys.exit(f"demo: cannot create an agent token: {token}")
print(token["token"])
