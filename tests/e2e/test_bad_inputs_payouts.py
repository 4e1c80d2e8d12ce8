"""Bad requests to the payouts, earnings and top-ups routes (issue 15): a table of
malformed, mistyped, out-of-range, forbidden and otherwise invalid requests, each answered
with the error shape naming exactly the bad field(s), and each followed by a read-back
showing that nothing changed: both providers' GET /providers/me/payout-settings, the rows of
the payout settings, runs, payouts, attempts, skips and bank files, the ledger's transfers,
the outbox and the notifications (a method change sends one of each), and the top-ups.
After the table the rows' valid neighbours are accepted (so that each refusal is about the
one thing its row breaks), by a third provider whose settings the table never reads.

The fixture (one gpunexd per class, on the LiteSVM test chain of tests/solana): provider
Anna pays out to a Solana wallet, provider Bert by SEPA; both earned a little from a rental
on a fake agent (test_agent_channel.FakeAgent; nothing runs), released by moving gpunexd's
test clock past the earnings hold; a monthly run planned Anna's payout (waiting for the
platform wallet's funds, which it never gets here) and wrote Bert's line in a pain.001 file
that the admin marked sent (the payout is submitted, waiting for the bank's answer).

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import datetime as dt
import json
import os
import re
import shutil
import tempfile
import threading
import time
import unittest

import payouts_fixture as pf
from harness import (API, PASSWORD, PG_SKIP_REASON, PG_URL, ApiAssertions,
                     provider_with_agent_token, source_dir)
from test_agent_channel import L4 as L4_GPU
from test_agent_channel import FakeAgent

V = "validation_failed"
SETTINGS = f"{API}/providers/me/payout-settings"
RUNS = f"{API}/admin/payout-runs"
EARNINGS = f"{API}/providers/me/earnings"
STATEMENTS = f"{API}/providers/me/statements"
PAYOUTS = f"{API}/providers/me/payouts"
TOPUPS = f"{API}/topups"
UNKNOWN_PAYOUT = "po_00000000000000000000000000"
DROP = object()

# --------------------------------------------------------------------------- base58, IBANs

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58encode(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def b58decode(s):
    n = 0
    for ch in s:
        n = n * 58 + B58.index(ch)
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\0" * (len(s) - len(s.lstrip("1"))) + body


def iban(country, bban):
    """An IBAN with correct ISO 7064 MOD 97-10 check digits for any BBAN (also one of the
    wrong form for its country: only the check digits are computed)."""
    digits = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


GOOD_IBAN = "DE89370400440532013000"
assert iban("DE", "370400440532013000") == GOOD_IBAN
GB_IBAN = "GB29NWBK60161331926819"
CH_IBAN = "CH9300762011623852957"
assert iban("GB", "NWBK60161331926819") == GB_IBAN and iban("CH", "00762011623852957") == CH_IBAN
# 33 bytes in 44 characters (the length of a 32-byte address) and 31 bytes.
ADDR_33_BYTES = b58encode(b"\0" + bytes([7] * 32))
ADDR_31_BYTES = b58encode(bytes([200] * 31))
assert len(ADDR_33_BYTES) <= 44 and len(b58decode(ADDR_33_BYTES)) == 33, ADDR_33_BYTES
assert len(b58decode(ADDR_31_BYTES)) == 31
SYSTEM_PROGRAM = "1" * 32  # 32 zero bytes: a point of small order
# Program ids: addresses nobody holds a key for (refused whether on the curve or not).
PROGRAM_IDS = {
    "the Token program": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
    "the Token-2022 program": "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
    "the Associated Token Account program": "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",
    "the Memo program": "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
    "the Memo program (v1)": "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
    "the Compute Budget program": "ComputeBudget111111111111111111111111111111",
}


# --------------------------------------------------------------------------- bodies


def settings(meth=None, /, **changes):
    """A PUT body: the method `meth` (a dict, a function ctx -> dict, or None for none) with
    the password, changed by `changes` (DROP removes a key)."""
    def body(ctx):
        b = {"schedule": "monthly"}
        if meth is not None:
            b["method"] = meth(ctx) if callable(meth) else meth
            b["password"] = PASSWORD
        for k, v in changes.items():
            if v is DROP:
                b.pop(k, None)
            else:
                b[k] = v(ctx) if callable(v) else v
        return b
    return body


def _with(base, changes):
    out = dict(base)
    for k, v in changes.items():
        if v is DROP:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def wallet(value):
    """A Solana method with the wallet `value` (a string, or a function ctx -> value)."""
    return lambda ctx: {"kind": "solana", "wallet": value(ctx) if callable(value) else value}


def sepa(**changes):
    return _with({"kind": "sepa", "holder": "Anna Person", "iban": GOOD_IBAN}, changes)


def ach(**changes):
    return _with({"kind": "ach", "holder": "Anna Person", "routing_number": "021000021",
                  "account_number": "123456789", "account_type": "checking"}, changes)


def run_body(**changes):
    def body(ctx):
        return _with({"as_of": ctx["monthly"], "schedule": "monthly"},
                     {k: (v(ctx) if callable(v) else v) for k, v in changes.items()})
    return body


def s(name, body, fields, who="provider", status=422, code=V):
    return (f"settings: {name}", "PUT", SETTINGS, who, body, status, fields, code)


def w(name, value):
    return s(f"wallet {name}", settings(wallet(value)), ["method.wallet"])


def run(name, body, fields, who="admin", status=422, code=V):
    return (f"run: {name}", "POST", RUNS, who, body, status, fields, code)


def bank(name, body, fields, payout="{po_sepa}", who="admin", status=422, code=V):
    return (f"bank result: {name}", "POST", f"{API}/admin/payouts/{payout}/bank-result", who,
            body, status, fields, code)


def get(name, path, fields, who="provider", status=422, code=V):
    return (name, "GET", path, who, None, status, fields, code)


def topup(name, body, fields, who="customer", status=422, code=V):
    return (f"top-up: {name}", "POST", TOPUPS, who, body, status, fields, code)


# --------------------------------------------------------------------------- the table

SETTINGS_ROWS = [
    # --- Solana wallets
    w("an associated token account (off the curve)", lambda c: c["ata"]),
    w("the platform's token account (off the curve)", lambda c: c["platform_ata"]),
    w("the system program (small order)", SYSTEM_PROGRAM),
    # (issue 24) Addresses that parse but pay nobody: the platform's own wallet, the mint.
    w("the platform's own wallet", lambda c: c["platform_wallet"]),
    w("the USDC mint", lambda c: c["mint"]),
    *[w(name, pid) for name, pid in PROGRAM_IDS.items()],
    w("of 31 bytes", ADDR_31_BYTES),
    w("of 33 bytes in 44 characters", ADDR_33_BYTES),
    w("of its first 20 characters", lambda c: c["wallet"][:20]),
    # (A wallet is 43 or 44 characters: pad to 45, never to a 44 that may be a real key.)
    w("of 45 characters", lambda c: c["wallet"] + "2" * (45 - len(c["wallet"]))),
    w("of 65 characters", lambda c: (c["wallet"] * 2)[:65]),
    w("with a 0", lambda c: c["wallet"][:5] + "0" + c["wallet"][6:]),
    w("with an O", lambda c: c["wallet"][:5] + "O" + c["wallet"][6:]),
    w("with an I", lambda c: c["wallet"][:5] + "I" + c["wallet"][6:]),
    w("with an l", lambda c: c["wallet"][:5] + "l" + c["wallet"][6:]),
    w("with a space", lambda c: c["wallet"][:5] + " " + c["wallet"][6:]),
    w("empty", ""),
    w("a number", 12345),
    s("wallet missing", settings({"kind": "solana"}), ["method.wallet"]),
    s("solana with an iban", settings(lambda c: {"kind": "solana", "wallet": c["wallet"],
                                                 "iban": GOOD_IBAN}), ["method.iban"]),
    # --- IBANs
    s("iban with wrong check digits", settings(sepa(iban="DE88370400440532013000")),
      ["method.iban"]),
    s("iban with a typo (check digits fail)", settings(sepa(iban="DE89370400440532013001")),
      ["method.iban"]),
    s("iban one character short", settings(sepa(iban=iban("DE", "37040044053201300"))),
      ["method.iban"]),
    s("iban one character long", settings(sepa(iban=iban("DE", "3704004405320130000"))),
      ["method.iban"]),
    s("iban of the US", settings(sepa(iban=iban("US", "021000021123456789"))), ["method.iban"]),
    s("iban of Brazil", settings(sepa(iban="BR1800360305000010009795493C1")), ["method.iban"]),
    s("iban with a letter in a German BBAN", settings(sepa(iban=iban("DE", "37040044053201300A"))),
      ["method.iban"]),
    s("iban with digits where the UK bank code has letters",
      settings(sepa(iban=iban("GB", "1234601613319268"), bic="NWBKGB2L")), ["method.iban"]),
    s("iban with a dash", settings(sepa(iban="DE89-3704-0044-0532-0130-00")), ["method.iban"]),
    s("iban without check digits", settings(sepa(iban="DE")), ["method.iban"]),
    s("iban empty", settings(sepa(iban="")), ["method.iban"]),
    s("iban missing", settings(sepa(iban=DROP)), ["method.iban"]),
    s("iban a number", settings(sepa(iban=370400440532013000)), ["method.iban"]),
    # --- BICs
    s("bic of 9 characters", settings(sepa(bic="COBADEFFX")), ["method.bic"]),
    s("bic with a digit in the bank code", settings(sepa(bic="COB1DEFF")), ["method.bic"]),
    s("bic with an unknown country", settings(sepa(bic="COBAZZFF")), ["method.bic"]),
    s("bic with a dot", settings(sepa(bic="COBA.DEFF")), ["method.bic"]),
    s("bic missing for a UK IBAN", settings(sepa(iban=GB_IBAN)), ["method.bic"]),
    s("bic missing for a Swiss IBAN", settings(sepa(iban=CH_IBAN)), ["method.bic"]),
    s("bic empty for a Swiss IBAN", settings(sepa(iban=CH_IBAN, bic="")), ["method.bic"]),
    # --- account holders
    s("holder empty", settings(sepa(holder="")), ["method.holder"]),
    s("holder spaces only", settings(sepa(holder="   ")), ["method.holder"]),
    s("holder of 71 characters", settings(sepa(holder="A" * 71)), ["method.holder"]),
    s("holder of 141 bytes", settings(sepa(holder="é" * 70 + "x")), ["method.holder"]),
    s("holder with a line break", settings(sepa(holder="Anna\nPerson")), ["method.holder"]),
    s("holder with a tab", settings(ach(holder="Anna\tPerson")), ["method.holder"]),
    s("holder with a bell", settings(sepa(holder="Anna\x07Person")), ["method.holder"]),
    s("holder with a right-to-left override", settings(sepa(holder="Anna \u202ePerson")),
      ["method.holder"]),
    s("holder missing", settings(ach(holder=DROP)), ["method.holder"]),
    # --- ACH
    s("routing number with a wrong check digit", settings(ach(routing_number="021000022")),
      ["method.routing_number"]),
    s("routing number of 8 digits", settings(ach(routing_number="02100002")),
      ["method.routing_number"]),
    s("routing number of 10 digits", settings(ach(routing_number="0210000210")),
      ["method.routing_number"]),
    s("routing number with a letter", settings(ach(routing_number="02100002A")),
      ["method.routing_number"]),
    s("routing number all zeros", settings(ach(routing_number="000000000")),
      ["method.routing_number"]),
    s("routing number outside the Federal Reserve's ranges",
      settings(ach(routing_number="991000025")), ["method.routing_number"]),
    s("routing number a number", settings(ach(routing_number=21000021)),
      ["method.routing_number"]),
    s("account number of 3 digits", settings(ach(account_number="123")),
      ["method.account_number"]),
    s("account number of 18 digits", settings(ach(account_number="1" * 18)),
      ["method.account_number"]),
    s("account number with letters", settings(ach(account_number="1234ABCD")),
      ["method.account_number"]),
    s("account number with a dash", settings(ach(account_number="1234-5678")),
      ["method.account_number"]),
    s("account number missing", settings(ach(account_number=DROP)), ["method.account_number"]),
    s("account type money-market", settings(ach(account_type="money-market")),
      ["method.account_type"]),
    s("account type Checking", settings(ach(account_type="Checking")), ["method.account_type"]),
    s("account type missing", settings(ach(account_type=DROP)), ["method.account_type"]),
    s("ach with an iban", settings(ach(iban=GOOD_IBAN)), ["method.iban"]),
    s("several ACH fields at once",
      settings(ach(routing_number="123", account_number="x", account_type="loan")),
      ["method.routing_number", "method.account_number", "method.account_type"]),
    # --- the method itself
    s("method kind paypal", settings({"kind": "paypal", "email": "a@example.com"}),
      ["method.kind"]),
    s("method kind SOLANA", settings(lambda c: {"kind": "SOLANA", "wallet": c["other_wallet"]}),
      ["method.kind"]),
    s("method kind missing", settings(lambda c: {"wallet": c["other_wallet"]}), ["method.kind"]),
    s("method kind a number", settings({"kind": 1}), ["method.kind"]),
    s("method a string", settings(None, method="solana"), ["method"]),
    s("method an array", settings(None, method=[{"kind": "solana"}]), ["method"]),
    s("method with an unknown field",
      settings(lambda c: {"kind": "solana", "wallet": c["other_wallet"], "memo": "x"}),
      ["method.memo"]),
    # --- the password
    s("new wallet without the password",
      settings(wallet(lambda c: c["other_wallet"]), password=DROP), ["password"]),
    s("new wallet with an empty password",
      settings(wallet(lambda c: c["other_wallet"]), password=""), ["password"]),
    s("new wallet with a wrong password",
      settings(wallet(lambda c: c["other_wallet"]), password="not-the-password-1"),
      ["password"]),
    s("new method (SEPA) without the password", settings(sepa(), password=DROP), ["password"]),
    s("password a number", settings(wallet(lambda c: c["other_wallet"]), password=123456),
      ["password"]),
    s("new wallet with an API key and the password", settings(wallet(lambda c: c["other_wallet"])),
      [], who="provider_key", status=403, code="permission_denied"),
    # --- schedule and threshold
    s("schedule daily", settings(None, schedule="daily"), ["schedule"]),
    s("schedule Weekly", settings(None, schedule="Weekly"), ["schedule"]),
    s("schedule empty", settings(None, schedule=""), ["schedule"]),
    s("schedule a number", settings(None, schedule=7), ["schedule"]),
    s("threshold 9.999999 USDC", settings(None, threshold_micro=9_999_999), ["threshold_micro"]),
    s("threshold 0", settings(None, threshold_micro=0), ["threshold_micro"]),
    s("threshold -50 USDC", settings(None, threshold_micro=-50_000_000), ["threshold_micro"]),
    s("threshold 100,000 USDC and a micro", settings(None, threshold_micro=100_000_000_001),
      ["threshold_micro"]),
    s("threshold 2^63", settings(None, threshold_micro=2 ** 63), ["threshold_micro"]),
    # (issue 24) Numbers beyond the 64-bit range, however written: too large, never read as
    # another number (2^63 as a double was read as -2^63).
    s("threshold 9.223372036854775807e18",
      ("raw", '{"threshold_micro": 9.223372036854775807e18}', "application/json"),
      ["threshold_micro"]),
    s("threshold 1e19", ("raw", '{"threshold_micro": 1e19}', "application/json"),
      ["threshold_micro"]),
    s("threshold -1e19", ("raw", '{"threshold_micro": -1e19}', "application/json"),
      ["threshold_micro"]),
    s("threshold 2^64", ("raw", '{"threshold_micro": 18446744073709551616}', "application/json"),
      ["threshold_micro"]),
    s("threshold a string", settings(None, threshold_micro="50000000"), ["threshold_micro"]),
    s("threshold a float", settings(None, threshold_micro=50_000_000.5), ["threshold_micro"]),
    s("schedule and threshold both mistyped", settings(None, schedule=7, threshold_micro="x"),
      ["schedule", "threshold_micro"]),
    s("schedule and threshold both out of range",
      settings(None, schedule="yearly", threshold_micro=1), ["schedule", "threshold_micro"]),
    s("several at once with a valid new wallet",
      settings(wallet(lambda c: c["other_wallet"]), schedule="daily", threshold_micro=1),
      ["schedule", "threshold_micro"]),
    # --- the body, who
    s("unknown field", settings(None, colour="blue"), ["colour"]),
    s("a provider_id of someone else", settings(None, provider_id="usr_x"), ["provider_id"]),
    s("body an array", lambda ctx: [settings(None)(ctx)], ["body"]),
    s("body not JSON", ("raw", '{"schedule": ', "application/json"), ["body"], status=400,
      code=None),
    s("body empty", ("raw", "", "application/json"), [], status=400, code=None),
    s("by a customer", settings(None), [], who="customer", status=403, code="permission_denied"),
    s("by an admin", settings(None), [], who="admin", status=403, code="permission_denied"),
    s("anonymous", settings(None), [], who="anon", status=401, code=None),
]

RUN_ROWS = [
    run("as_of 2026-12-1", run_body(as_of="2026-12-1"), ["as_of"]),
    run("as_of in US order", run_body(as_of="12/01/2026"), ["as_of"]),
    run("as_of February 30", run_body(as_of="2026-02-30"), ["as_of"]),
    run("as_of with a time", run_body(as_of=lambda c: c["monthly"] + "T00:00:00Z"), ["as_of"]),
    run("as_of empty", run_body(as_of=""), ["as_of"]),
    run("as_of missing", run_body(as_of=DROP), ["as_of"]),
    run("as_of a number", run_body(as_of=20261201), ["as_of"]),
    run("weekly on a Tuesday", run_body(schedule="weekly", as_of=lambda c: c["tuesday"]),
        ["as_of"]),
    run("weekly on a Sunday", run_body(schedule="weekly", as_of=lambda c: c["sunday"]),
        ["as_of"]),
    run("monthly on the second business day",
        run_body(as_of=lambda c: c["monthly_second"]), ["as_of"]),
    run("monthly on the 1st when it is a weekend",
        run_body(as_of=lambda c: c["weekend_first"]), ["as_of"]),
    run("weekly next Monday (the future)",
        run_body(schedule="weekly", as_of=lambda c: c["next_monday"]), ["as_of"]),
    run("monthly next month (the future)", run_body(as_of=lambda c: c["next_monthly"]),
        ["as_of"]),
    run("schedule daily", run_body(schedule="daily"), ["schedule"]),
    run("schedule missing", run_body(schedule=DROP), ["schedule"]),
    run("schedule Monthly", run_body(schedule="Monthly"), ["schedule"]),
    run("eur_rate abc", run_body(eur_rate="abc"), ["eur_rate"]),
    run("eur_rate 0", run_body(eur_rate="0"), ["eur_rate"]),
    run("eur_rate 0.000000", run_body(eur_rate="0.000000"), ["eur_rate"]),
    run("eur_rate -0.92", run_body(eur_rate="-0.92"), ["eur_rate"]),
    run("eur_rate with 7 decimals", run_body(eur_rate="0.9212345"), ["eur_rate"]),
    run("eur_rate 100.000001", run_body(eur_rate="100.000001"), ["eur_rate"]),
    run("eur_rate a number", run_body(eur_rate=0.92), ["eur_rate"]),
    run("eur_rate with a comma", run_body(eur_rate="0,92"), ["eur_rate"]),
    run("several at once", run_body(as_of="x", schedule="x", eur_rate="0"),
        ["as_of", "schedule", "eur_rate"]),
    run("unknown field", run_body(dry_run=True), ["dry_run"]),
    run("body not JSON", ("raw", "as_of=2026-12-01", "application/x-www-form-urlencoded"),
        ["body"], status=400, code=None),
    run("by a provider", run_body(), [], who="provider", status=403, code="permission_denied"),
    run("by a customer", run_body(), [], who="customer", status=403, code="permission_denied"),
    run("anonymous", run_body(), [], who="anon", status=401, code=None),
]

ADMIN_ROWS = [
    bank("state done", {"state": "done"}, ["state"]),
    bank("state PAID", {"state": "PAID"}, ["state"]),
    bank("state missing", {"bank_reference": "x"}, ["state"]),
    bank("state a boolean", {"state": True}, ["state"]),
    bank("failed without a reason", {"state": "failed"}, ["reason"]),
    bank("failed with an empty reason", {"state": "failed", "reason": ""}, ["reason"]),
    bank("reason of 301 characters", {"state": "failed", "reason": "r" * 301}, ["reason"]),
    bank("bank_reference of 101 characters", {"state": "paid", "bank_reference": "b" * 101},
         ["bank_reference"]),
    bank("unknown field", {"state": "paid", "amount_micro": 1}, ["amount_micro"]),
    bank("body not JSON", ("raw", "paid", "text/plain"), ["body"], status=400, code=None),
    bank("on a Solana payout", {"state": "paid", "bank_reference": "x"}, [],
         payout="{po_sol}", status=409, code="failed_precondition"),
    bank("failed on a Solana payout", {"state": "failed", "reason": "returned"}, [],
         payout="{po_sol}", status=409, code="failed_precondition"),
    bank("on an unknown payout", {"state": "paid"}, [], payout=UNKNOWN_PAYOUT, status=404,
         code="not_found"),
    bank("by the payout's provider", {"state": "paid"}, [], who="sepa", status=403,
         code="permission_denied"),
    bank("by a customer", {"state": "paid"}, [], who="customer", status=403,
         code="permission_denied"),
    ("retry: a submitted payout", "POST", f"{API}/admin/payouts/{{po_sepa}}/retry", "admin",
     None, 409, [], "failed_precondition"),
    ("retry: a payout waiting for funds", "POST", f"{API}/admin/payouts/{{po_sol}}/retry",
     "admin", None, 409, [], "failed_precondition"),
    ("retry: an unknown payout", "POST", f"{API}/admin/payouts/{UNKNOWN_PAYOUT}/retry", "admin",
     None, 404, [], "not_found"),
    ("retry: by a provider", "POST", f"{API}/admin/payouts/{{po_sepa}}/retry", "sepa", None, 403,
     [], "permission_denied"),
    ("file sent: an unknown file", "POST", f"{RUNS}/{{run}}/files/{{run}}-ach.txt/sent", "admin",
     None, 404, [], "not_found"),
    ("file sent: another run's name", "POST", f"{RUNS}/{{run}}/files/run_x-sepa.xml/sent",
     "admin", None, 404, [], "not_found"),
    ("file sent: an unknown run", "POST", f"{RUNS}/run_00000000000000000000/files/{{file}}/sent",
     "admin", None, 404, [], "not_found"),
    ("file sent: by a provider", "POST", f"{RUNS}/{{run}}/files/{{file}}/sent", "sepa", None, 403,
     [], "permission_denied"),
    get("file: an unknown name", f"{RUNS}/{{run}}/files/{{run}}-ach.txt", [], who="admin",
        status=404, code="not_found"),
    get("file: a path out of the folder", f"{RUNS}/{{run}}/files/..%2F..%2Fgpunex.db", [],
        who="admin", status=400, code="invalid_argument"),
    get("file: of an unknown run", f"{RUNS}/run_00000000000000000000/files/{{file}}", [],
        who="admin", status=404, code="not_found"),
    get("file: by a provider", f"{RUNS}/{{run}}/files/{{file}}", [], who="sepa", status=403,
        code="permission_denied"),
    get("run: an unknown run", f"{RUNS}/run_00000000000000000000", [], who="admin", status=404,
        code="not_found"),
    get("run read: by a provider", f"{RUNS}/{{run}}", [], status=403, code="permission_denied"),
    get("runs: by a customer", RUNS, [], who="customer", status=403, code="permission_denied"),
    get("wallet: by a provider", f"{API}/admin/payout-wallet", [], status=403,
        code="permission_denied"),
]

READ_ROWS = [
    get("earnings: group machine", f"{EARNINGS}?group=machine", ["group"]),
    get("earnings: group GPU", f"{EARNINGS}?group=GPU", ["group"]),
    get("earnings: from 2026-13-01", f"{EARNINGS}?from=2026-13-01", ["from"]),
    get("earnings: from yesterday", f"{EARNINGS}?from=yesterday", ["from"]),
    get("earnings: to 2026-12-1", f"{EARNINGS}?to=2026-12-1", ["to"]),
    get("earnings: to a time without a zone", f"{EARNINGS}?to=2026-12-01T10:00:00", ["to"]),
    get("earnings: to before from", f"{EARNINGS}?from=2026-12-01&to=2026-11-01", ["to"]),
    get("earnings: to equal to from", f"{EARNINGS}?from=2026-12-01&to=2026-12-01", ["to"]),
    get("earnings: from and to malformed", f"{EARNINGS}?from=x&to=y", ["from", "to"]),
    get("earnings: format xml", f"{EARNINGS}?format=xml", ["format"]),
    get("earnings: format CSV", f"{EARNINGS}?format=CSV", ["format"]),
    get("earnings: by a customer", EARNINGS, [], who="customer", status=403,
        code="permission_denied"),
    get("earnings: anonymous", EARNINGS, [], who="anon", status=401, code=None),
    get("statement: month 2026-13", f"{STATEMENTS}/2026-13", ["month"]),
    get("statement: month 2026-1", f"{STATEMENTS}/2026-1", ["month"]),
    get("statement: month 2026-00", f"{STATEMENTS}/2026-00", ["month"]),
    get("statement: month 26-12", f"{STATEMENTS}/26-12", ["month"]),
    get("statement: a day", f"{STATEMENTS}/2026-12-01", ["month"]),
    get("statement: month december", f"{STATEMENTS}/december", ["month"]),
    get("statement: format pdf", f"{STATEMENTS}/2026-11?format=pdf", ["format"]),
    get("statement: by a customer", f"{STATEMENTS}/2026-11", [], who="customer", status=403,
        code="permission_denied"),
    get("payouts: limit 0", f"{PAYOUTS}?limit=0", ["limit"]),
    get("payouts: limit 201", f"{PAYOUTS}?limit=201", ["limit"]),
    get("payouts: limit ten", f"{PAYOUTS}?limit=ten", ["limit"]),
    get("payouts: a junk cursor", f"{PAYOUTS}?cursor=junk", ["cursor"]),
    get("payouts: by a customer", PAYOUTS, [], who="customer", status=403,
        code="permission_denied"),
    get("payout: unknown", f"{PAYOUTS}/{UNKNOWN_PAYOUT}", [], status=404, code="not_found"),
    get("payout: another provider's", f"{PAYOUTS}/{{po_sepa}}", [], status=404,
        code="not_found"),
    get("payout: another provider's as CSV", f"{PAYOUTS}/{{po_sepa}}?format=csv", [],
        status=404, code="not_found"),
    get("payout: an admin through the provider route", f"{PAYOUTS}/{{po_sol}}", [],
        who="admin", status=403, code="permission_denied"),
    get("payout: format xml", f"{PAYOUTS}/{{po_sol}}?format=xml", ["format"]),
    get("settings read: by a customer", SETTINGS, [], who="customer", status=403,
        code="permission_denied"),
]

TOPUP_ROWS = [
    topup("amount missing", {}, ["amount_micro"]),
    topup("amount 0", {"amount_micro": 0}, ["amount_micro"]),
    topup("amount -1", {"amount_micro": -1}, ["amount_micro"]),
    topup("amount -1 USDC", {"amount_micro": -1_000_000}, ["amount_micro"]),
    topup("amount below 1 USDC", {"amount_micro": 999_999}, ["amount_micro"]),
    topup("amount 100,000 USDC and a micro", {"amount_micro": 100_000_000_001},
          ["amount_micro"]),
    topup("amount 1e12 + 1", {"amount_micro": 10 ** 12 + 1}, ["amount_micro"]),
    topup("amount 2^63", {"amount_micro": 2 ** 63}, ["amount_micro"]),
    topup("amount -2^63 - 1", {"amount_micro": -2 ** 63 - 1}, ["amount_micro"]),
    topup("amount 9.223372036854775807e18",
          ("raw", '{"amount_micro": 9.223372036854775807e18}', "application/json"),
          ["amount_micro"]),
    topup("amount 1e19", ("raw", '{"amount_micro": 1e19}', "application/json"), ["amount_micro"]),
    topup("amount a string", {"amount_micro": "1000000"}, ["amount_micro"]),
    topup("amount a float", {"amount_micro": 1_000_000.5}, ["amount_micro"]),
    topup("amount null", {"amount_micro": None}, ["amount_micro"]),
    topup("amount a boolean", {"amount_micro": True}, ["amount_micro"]),
    topup("unknown field", {"amount_micro": 1_000_000, "mint": "x"}, ["mint"]),
    topup("a customer_id", {"amount_micro": 1_000_000, "customer_id": "usr_x"},
          ["customer_id"]),
    topup("body not JSON", ("raw", "amount_micro=1", "text/plain"), ["body"], status=400,
          code=None),
    topup("body truncated JSON", ("raw", '{"amount_micro": 1', "application/json"), ["body"],
          status=400, code=None),
    topup("body an array", [{"amount_micro": 1_000_000}], ["body"]),
    topup("anonymous", {"amount_micro": 1_000_000}, [], who="anon", status=401, code=None),
    get("top-up: unknown", f"{TOPUPS}/tu_00000000000000000000000000", [], who="customer",
        status=404, code="not_found"),
    get("top-up: its QR code, unknown", f"{TOPUPS}/tu_00000000000000000000000000/qr.svg", [],
        who="customer", status=404, code="not_found"),
    get("top-up: another customer's", f"{TOPUPS}/{{tu_other}}", [], who="customer",
        status=404, code="not_found"),
    get("top-up: another customer's QR code", f"{TOPUPS}/{{tu_other}}/qr.svg", [],
        who="customer", status=404, code="not_found"),
    get("top-ups: limit 0", f"{TOPUPS}?limit=0", ["limit"], who="customer"),
    get("top-ups: a junk cursor", f"{TOPUPS}?cursor=junk", ["cursor"], who="customer"),
]

ROWS = SETTINGS_ROWS + RUN_ROWS + ADMIN_ROWS + READ_ROWS

# Some refusals must say why in words, not only name the field.
MESSAGES = {
    "settings: wallet an associated token account (off the curve)": "off-curve",
    "settings: wallet the system program (small order)": "small order",
    "settings: wallet the platform's own wallet": "platform's own",
    "settings: wallet the USDC mint": "USDC mint",
    "settings: threshold 9.223372036854775807e18": "too large",
    "settings: threshold 1e19": "too large",
    "settings: threshold -1e19": "too large",
    "settings: threshold 2^64": "too large",
    "top-up: amount 9.223372036854775807e18": "too large",
    "settings: wallet with a 0": "base58",
    "settings: iban of the US": "SEPA",
    "settings: iban with wrong check digits": "check digits",
    "settings: bic missing for a UK IBAN": "required",
    "settings: routing number with a wrong check digit": "check digit",
    "run: weekly on a Tuesday": "Monday",
    "run: monthly on the second business day": "first business day",
    "run: weekly next Monday (the future)": "future",
}


def topups_registered():
    path = os.path.join(source_dir(), "src", "platform", "api", "topups_api.cc")
    try:
        with open(path, encoding="utf-8") as f:
            return re.search(r'Add\(\s*"POST"\s*,\s*"/api/v1/topups"', f.read()) is not None
    except OSError:
        return False


# --------------------------------------------------------------------------- the tests

from solana_front import MODULE_FRONT as FRONT  # noqa: E402
from solana_front import start_module_front as setUpModule  # noqa: E402,F401
from solana_front import stop_module_front as tearDownModule  # noqa: E402,F401


class PayoutsBadInputsMixin(ApiAssertions):
    """One gpunexd per class (setUpClass); the table changes nothing, the valid-neighbour
    test changes only provider Cleo's settings and adds one weekly run."""

    BACKEND = "sqlite"

    @classmethod
    def setUpClass(cls):
        if cls.BACKEND == "postgresql" and not PG_URL:
            raise unittest.SkipTest(PG_SKIP_REASON)
        cls.front = FRONT["front"]
        cls.agents = []
        cls.failed = False
        cls.srv = None
        try:
            cls._build()
        except BaseException:
            cls._cleanup(keep=True)
            raise

    @classmethod
    def _build(cls):
        front = cls.front
        cls.keydir = tempfile.mkdtemp(prefix="gpunex-payout-key-")
        cls.platform, key_path = pf.platform_keypair(front, cls.keydir)
        cls.srv = srv = pf.ClockGpunexd(cls.BACKEND, None,
                                        extra_toml=pf.payouts_toml(front, key_path),
                                        root_toml="allow_emulated_gpus = true")
        srv.start()
        cls.admin = admin = srv.admin()
        anna, token_a, _ = provider_with_agent_token(srv, admin, name="Anna", priced=False)
        bert, token_b, _ = provider_with_agent_token(srv, admin, name="Bert", priced=False)
        cleo, _, _ = provider_with_agent_token(srv, admin, name="Cleo", priced=False)
        cls.anna, cls.bert, cls.cleo = anna, bert, cleo
        cls.customer = customer = srv.user("Cora Customer")
        r = admin.c.post(f"{API}/admin/credits", {"user_id": customer.id,
                                                   "amount_micro": 1000 * pf.USDC,
                                                   "reference": "fixture credit"})
        assert r.status == 201, r
        cls.anna_wallet = front.new_wallet()["public_key"]
        for prov, method in ((anna, {"kind": "solana", "wallet": cls.anna_wallet}),
                             (bert, {"kind": "sepa", "holder": "Bert Person", "iban": GOOD_IBAN})):
            r = prov.c.put(SETTINGS, {"schedule": "monthly", "method": method,
                                      "password": PASSWORD})
            assert r.status == 200, r
        # Earnings: two seconds of 8 L4s on each provider's fake machine (about 2.5 USDC).
        for prov, token in ((anna, token_a), (bert, token_b)):
            pf.price_l4(prov)
            ag = FakeAgent(srv, token, models=(L4_GPU,) * 8)
            cls.agents.append(ag)
            ag.join()
            pf.run_rental(admin, customer, ag, 8, 2.2)
        pf.release_earnings(srv, [anna, bert])
        now = srv.now()
        cls.monthly = pf.latest_monthly_date(now).isoformat()
        r = admin.c.post(RUNS, {"as_of": cls.monthly, "schedule": "monthly", "eur_rate": "0.92"})
        assert r.status == 201, r
        cls.run_id = r.body["id"]
        detail = pf.wait_run(admin, cls.run_id, lambda b: b["files"] and b["state"] == "waiting",
                             what="the run planned, its SEPA file written")
        by_provider = {p["provider_id"]: p for p in detail["payouts"]}
        cls.po_sol = by_provider[anna.id]["id"]
        cls.po_sepa = by_provider[bert.id]["id"]
        assert by_provider[anna.id]["state"] == "waiting_funds", detail
        cls.file = detail["files"][0]["name"]
        r = admin.c.post(f"{RUNS}/{cls.run_id}/files/{cls.file}/sent")
        assert r.status == 200, r
        r = bert.c.get(f"{PAYOUTS}/{cls.po_sepa}")
        assert r.status == 200 and r.body["state"] == "submitted", r
        r = anna.c.post(f"{API}/api-keys", {"name": "payouts key",
                                            "scopes": ["read", "write", "provider"]})
        assert r.status == 201, r
        cls.anna_key = r.body["key"]
        r = anna.c.get(SETTINGS)
        cls.ata = r.body["method"]["token_account"]
        r = admin.c.get(f"{API}/admin/payout-wallet")
        assert r.status == 200, r
        cls.platform_ata = r.body["token_account"]
        assert cls.platform_ata and cls.ata and cls.platform_ata != cls.ata
        cls.tu_other = "tu_not_registered"
        if topups_registered():
            other = srv.user("Olga Other")
            r = other.c.post(TOPUPS, {"amount_micro": 5 * pf.USDC})
            assert r.status == 201, r
            cls.tu_other = r.body["id"]

    @classmethod
    def tearDownClass(cls):
        cls._cleanup(keep=cls.failed)

    @classmethod
    def _cleanup(cls, keep=False):
        for ag in cls.agents:
            ag.cleanup()
        if cls.srv:
            if keep:
                print(f"\n--- gpunexd logs (data kept in {cls.srv.tmp}) ---\n"
                      + cls.srv.logs()[-6000:])
            cls.srv.cleanup(keep=keep)
        if getattr(cls, "keydir", None):
            shutil.rmtree(cls.keydir, ignore_errors=True)

    def run(self, result=None):
        result = super().run(result)
        if result is not None and any(getattr(t, "test_case", t) is self
                                      for t, _ in result.failures + result.errors):
            type(self).failed = True
        return result

    # -- what no refusal may change

    def ctx(self):
        now = self.srv.now().date()
        monday = now - dt.timedelta(days=now.weekday())
        monthly = dt.date.fromisoformat(self.monthly)
        # A first of a month on a weekend, in the past.
        weekend_first = next(d for d in (dt.date(y, m, 1) for y in range(now.year - 2, now.year + 1)
                                         for m in range(1, 13))
                             if d.weekday() >= 5 and d < now)
        nxt = (monthly.replace(day=28) + dt.timedelta(days=10)).replace(day=1)
        next_monthly = pf.first_business_day(nxt.year, nxt.month)
        if next_monthly <= now:  # the month after this one
            nxt = (nxt.replace(day=28) + dt.timedelta(days=10)).replace(day=1)
            next_monthly = pf.first_business_day(nxt.year, nxt.month)
        second = monthly + dt.timedelta(days=1)
        while second.weekday() >= 5:
            second += dt.timedelta(days=1)
        if second > now:  # the previous month's
            prev = monthly.replace(day=1) - dt.timedelta(days=1)
            second = pf.first_business_day(prev.year, prev.month) + dt.timedelta(days=1)
            while second.weekday() >= 5:
                second += dt.timedelta(days=1)
        return {"po_sol": self.po_sol, "po_sepa": self.po_sepa, "run": self.run_id,
                "file": self.file, "ata": self.ata, "platform_ata": self.platform_ata,
                "platform_wallet": self.platform["public_key"], "mint": self.front.mint,
                "wallet": self.anna_wallet, "other_wallet": self.front.new_wallet()["public_key"],
                "monthly": self.monthly, "monthly_second": second.isoformat(),
                "tuesday": (monday - dt.timedelta(days=6)).isoformat(),
                "sunday": (monday - dt.timedelta(days=1)).isoformat(),
                "next_monday": (monday + dt.timedelta(days=7)).isoformat(),
                "next_monthly": next_monthly.isoformat(),
                "weekend_first": weekend_first.isoformat(), "tu_other": self.tu_other}

    def clients(self):
        return {"provider": self.anna.c, "provider_key": self.srv.client(self.anna_key),
                "sepa": self.bert.c, "customer": self.customer.c, "admin": self.admin.c,
                "anon": self.srv.client()}

    # One query: each row of the tables a refusal must not change, as (table, its columns
    # joined).
    STATE_TABLES = (
        ("payout_settings", "provider_id, schedule, threshold_micro, method, changed_at, "
                            "hold_until, updated_at"),
        ("payout_runs", "id, schedule, as_of, state, eur_rate_ppm"),
        ("payouts", "id, state, amount_micro, method, signature, bank_reference, failure, "
                    "file_name, round"),
        ("payout_attempts", "payout_id, n, state, signature"),
        ("payout_skips", "run_id, provider_id, reason"),
        ("payout_files", "run_id, name, state, sha256, lines"),
        ("ledger_transfers", "id, kind, amount"),
        ("email_outbox", "id"),
        ("notifications", "id"),
    )
    TOPUP_TABLE = ("topups", "id, customer_id, amount_micro, status, signature, credited_micro")

    def state_sql(self):
        parts = []
        tables = self.STATE_TABLES + ((self.TOPUP_TABLE,) if self.has_topups else ())
        for table, cols in tables:
            joined = " || '|' || ".join(f"COALESCE(CAST({c.strip()} AS TEXT), '-')"
                                         for c in cols.split(","))
            parts.append(f"SELECT '{table}', {joined} FROM {table}")
        return " UNION ALL ".join(parts) + " ORDER BY 1, 2"

    def state(self):
        out = {}
        for name, u in (("anna", self.anna), ("bert", self.bert)):
            r = u.c.get(SETTINGS)
            self.assertStatus(r, 200)
            out[f"settings {name}"] = r.body
        rows = {}
        for table, row in self.srv.backend.query(self.state_sql()):
            rows.setdefault(table, []).append(row)
        out["rows"] = rows
        return out

    def refuse(self, rows):
        """assertRefusedRows (harness) with this table's clients, placeholders, state and
        error messages."""
        self.assertRefusedRows(rows, self.clients(), self.ctx(), self.state,
                               check=self.check_message)

    @property
    def has_topups(self):
        return topups_registered()

    def check_message(self, name, resp, err):
        want = MESSAGES.get(name)
        if want:
            text = json.dumps(err)
            self.assertIn(want.lower(), text.lower(), f"[{name}] the error says why: {resp!r}")

    # -- the tests

    def test_table_has_enough_rows(self):
        self.assertGreaterEqual(len(ROWS), 150)
        names = [row[0] for row in ROWS + TOPUP_ROWS]
        self.assertEqual(len(names), len(set(names)), "row names must be unique")

    def test_bad_requests_are_refused_and_change_nothing(self):
        before = self.state()
        self.refuse(ROWS)
        self.assertEqual(self.state(), before)
        # The Solana payout still waits for funds, Bert's still for the bank.
        for u, po, st in ((self.anna, self.po_sol, "waiting_funds"),
                          (self.bert, self.po_sepa, "submitted")):
            r = u.c.get(f"{PAYOUTS}/{po}")
            self.assertStatus(r, 200)
            self.assertEqual(r.body["state"], st, r.body)
        self.assertEqual(self.front.sends()["count"], 0, "nothing was sent to the chain")

    def test_bad_topups_are_refused_and_change_nothing(self):
        if not self.has_topups:
            self.skipTest("POST /api/v1/topups is not registered in src/platform/api")
        before = self.state()
        self.refuse(TOPUP_ROWS)
        self.assertEqual(self.state(), before)

    def test_racing_resends_of_the_old_method_never_undo_the_owners_change(self):
        """Issue 24: PUTs without the password that re-send the current method, racing the
        owner's password-carrying change, used to write the old method back (6 rounds of
        6) and reset the hold. Whether the password is needed is decided in the write
        transaction now: each racer either went first (the old method, unchanged) or is
        refused naming the password; the owner's change stands with its hold."""
        rounds, racers = 6, 8
        dora, _, _ = provider_with_agent_token(self.srv, self.admin, name="Dora", priced=False)
        wallets = [self.front.new_wallet()["public_key"] for _ in range(rounds + 1)]

        def method(wallet):
            return {"kind": "solana", "wallet": wallet}

        r = dora.c.put(SETTINGS, {"method": method(wallets[0]), "password": PASSWORD})
        self.assertStatus(r, 200)
        for rnd in range(1, rounds + 1):
            old, new = wallets[rnd - 1], wallets[rnd]
            stop = threading.Event()
            answers = []

            def race(old=old, stop=stop, answers=answers):
                while not stop.is_set():
                    resp = dora.c.put(SETTINGS, {"schedule": "monthly", "method": method(old)})
                    answers.append(resp)

            threads = [threading.Thread(target=race) for _ in range(racers)]
            for t in threads:
                t.start()
            try:
                time.sleep(0.05)
                owner = dora.c.put(SETTINGS, {"method": method(new), "password": PASSWORD})
                time.sleep(0.3)  # the racers go on after the owner's change
            finally:
                stop.set()
                for t in threads:
                    t.join(30)
            with self.subTest(round=rnd):
                self.assertStatus(owner, 200)
                self.assertEqual(owner.body["method"]["wallet"], new)
                self.assertTrue(owner.body["hold_until"])
                after = dora.c.get(SETTINGS).body
                self.assertEqual(after["method"]["wallet"], new,
                                 f"round {rnd}: the owner's change was undone")
                self.assertEqual(after["hold_until"], owner.body["hold_until"],
                                 f"round {rnd}: the hold was reset")
                refused = 0
                for resp in answers:
                    if resp.status == 200:
                        # It wrote nothing new; its answer is read after its write, so it
                        # may show the owner's change already.
                        self.assertIn(resp.body["method"]["wallet"], (old, new), resp.body)
                    else:
                        self.assertError(resp, 422, fields=["password"])
                        refused += 1
                self.assertGreater(refused, 0, "some racers came after the owner's change")
        # One notice per change the owner made, none from the racers.
        notices = self.srv.backend.query(
            "SELECT COUNT(*) FROM notifications WHERE user_id = ? AND "
            "kind = 'payouts.method_changed'", (dora.id,))[0][0]
        self.assertEqual(notices, rounds + 1)

    def test_valid_neighbours_are_accepted(self):
        """Cleo (no earnings, never read by the table) sets what the rows break, valid."""
        c = self.cleo
        ctx = self.ctx()

        def put(body, what):
            r = c.c.put(SETTINGS, body)
            with self.subTest(what=what):
                self.assertStatus(r, 200, what)
            return r.body

        cases = [
            ("a wallet", {"kind": "solana", "wallet": ctx["other_wallet"]},
             lambda m: m["wallet"] == ctx["other_wallet"] and m["token_account"]),
            ("an IBAN in lower case with spaces",
             {"kind": "sepa", "holder": "  Cleo Person  ", "iban": "de89 3704 0044 0532 0130 00"},
             lambda m: (m["iban"], m["holder"], m["bic"], m["country"]) ==
             (GOOD_IBAN, "Cleo Person", None, "DE")),
            ("a UK IBAN with a BIC in lower case",
             {"kind": "sepa", "holder": "Cleo Person", "iban": GB_IBAN, "bic": "nwbkgb2l"},
             lambda m: (m["iban"], m["bic"]) == (GB_IBAN, "NWBKGB2L")),
            ("a Swiss IBAN with an 11-character BIC",
             {"kind": "sepa", "holder": "Cleo Person", "iban": CH_IBAN, "bic": "UBSWCHZH80A"},
             lambda m: m["bic"] == "UBSWCHZH80A"),
            ("a French IBAN (letters in its BBAN) with spaces",
             {"kind": "sepa", "holder": "Cléo Persön", "iban":
              " ".join(re.findall(".{1,4}", iban("FR", "20041010050500013M02606")))},
             lambda m: m["iban"] == iban("FR", "20041010050500013M02606")),
            ("a holder of 70 characters", {"kind": "sepa", "holder": "C" * 70, "iban": GOOD_IBAN},
             lambda m: m["holder"] == "C" * 70),
            ("ACH checking, 4 digits",
             {"kind": "ach", "holder": "Cleo Person", "routing_number": "021000021",
              "account_number": "1234", "account_type": "checking"},
             lambda m: (m["account_number_last4"], m["account_type"]) == ("1234", "checking")
             and "account_number" not in m),
            ("ACH savings, 17 digits",
             {"kind": "ach", "holder": "Cleo Person", "routing_number": "011000015",
              "account_number": "12345678901234567", "account_type": "savings"},
             lambda m: (m["routing_number"], m["account_number_last4"]) == ("011000015", "4567")),
        ]
        for what, method, ok in cases:
            body = put({"method": method, "password": PASSWORD}, what)
            with self.subTest(what=what):
                self.assertTrue(ok(body["method"]), f"{what}: {body['method']}")
        # The same method again needs no password; the hold after the first change stands.
        body = put({"schedule": "weekly", "method": cases[-1][1]}, "the same method, no password")
        self.assertEqual(body["schedule"], "weekly")
        self.assertTrue(body["hold_until"])
        for t in (10_000_000, 100_000_000_000):
            self.assertEqual(put({"threshold_micro": t}, f"threshold {t}")["threshold_micro"], t)
        # Runs: a weekly run on the latest Monday, with a rate of 100 EUR per USDC at most.
        monday = pf.latest_monday(self.srv.now())
        r = self.admin.c.post(RUNS, {"as_of": monday.isoformat(), "schedule": "weekly",
                                     "eur_rate": "100"})
        self.assertStatus(r, 201)
        self.assertEqual((r.body["schedule"], r.body["as_of"], r.body["eur_rate"]),
                         ("weekly", monday.isoformat(), "100.000000"))
        # Reads the table refused, with their valid neighbours.
        for path in (f"{EARNINGS}?group=gpu&from=2026-01-01&to=2026-01-02",
                     f"{EARNINGS}?group=day&format=csv", f"{EARNINGS}?group=model&format=json",
                     f"{EARNINGS}?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:01Z",
                     f"{STATEMENTS}/2026-12", f"{STATEMENTS}/2026-01?format=csv",
                     f"{PAYOUTS}?limit=1", f"{PAYOUTS}?limit=200", f"{PAYOUTS}/{self.po_sol}",
                     f"{PAYOUTS}/{self.po_sol}?format=csv"):
            with self.subTest(path=path):
                self.assertStatus(self.anna.c.get(path), 200, path)
        # The admin reads the runs, the file and the wallet.
        for path in (RUNS, f"{RUNS}/{self.run_id}", f"{RUNS}/{self.run_id}/files/{self.file}",
                     f"{API}/admin/payout-wallet"):
            with self.subTest(path=path):
                self.assertStatus(self.admin.c.get(path), 200, path)
        if self.has_topups:
            # The bounds, and an integral float (as JSON allows writing a whole number).
            for amount in (1_000_000, 100_000_000_000, 2e6):
                r = self.customer.c.post(TOPUPS, {"amount_micro": amount})
                with self.subTest(topup=amount):
                    self.assertStatus(r, 201)


class PayoutsBadInputsSqliteTest(PayoutsBadInputsMixin, unittest.TestCase):
    BACKEND = "sqlite"


class PayoutsBadInputsPostgresTest(PayoutsBadInputsMixin, unittest.TestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
