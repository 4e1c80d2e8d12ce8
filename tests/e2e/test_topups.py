"""Top-ups in USDC on Solana (issue 15, PAY-6) end to end: a real gpunexd on the LiteSVM test
chain of tests/solana (solana_front.SolanaFront), customers paying the Solana Pay transfer
requests it makes with the reference client (tests/solana/pay.mjs: @solana/pay's parseURL and
createTransfer, web3.js), as a wallet would.

- POST /topups answers a solana: URL for the platform's wallet, the chain's USDC mint, the
  amount and a fresh reference; a payer's wallet pays it; the top-up becomes credited with
  the payment's signature and the balance rises by exactly the amount, once: after more
  polls, after a restart, in the statement and in the ledger;
- payments of another token, of too little, or to another recipient are never credited (the
  balance stays as it was over many polls) and the top-up's detail says why; it keeps
  waiting, and a good payment afterwards is credited;
- one transaction that carries two top-ups' references credits one of them only;
- a payment made while gpunexd is down (SIGKILLed) is credited once when it is back;
- a payment counts only once confirmed; an expired top-up paid late is still credited;
- the QR code is an SVG of the URL.

Needs node (tests/solana; setup.sh installs its packages). Runs on SQLite and, with
GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import os
import shutil
import tempfile
import time
import unittest
import urllib.parse

import payouts_fixture as pf
from harness import API, PG_SKIP_REASON, PG_URL, ApiAssertions, wait_until

TOPUPS = f"{API}/topups"
LOOP_MS = 200
POLLS = 8  # "several poll intervals": what must not happen does not happen within these
USDC = pf.USDC

TOPUPS_TOML = f"""
[topups]
loop_ms = {LOOP_MS}
ttl_s = 600
expired_check_s = 1
"""

from solana_front import MODULE_FRONT as FRONT  # noqa: E402
from solana_front import start_module_front as setUpModule  # noqa: E402,F401
from solana_front import stop_module_front as tearDownModule  # noqa: E402,F401


def parse_url(url):
    """A transfer request URL as (recipient, {parameter: [values]})."""
    assert url.startswith("solana:"), url
    recipient, _, query = url[len("solana:"):].partition("?")
    return recipient, urllib.parse.parse_qs(query, keep_blank_values=True)


class TopupsMixin(ApiAssertions):
    """One gpunexd per class (setUpClass); each test makes its own customers and top-ups."""

    BACKEND = "sqlite"

    @classmethod
    def setUpClass(cls):
        if cls.BACKEND == "postgresql" and not PG_URL:
            raise unittest.SkipTest(PG_SKIP_REASON)
        cls.front = FRONT["front"]
        cls.failed = False
        cls.srv = None
        cls.keydir = tempfile.mkdtemp(prefix="gpunex-topups-key-")
        try:
            cls.platform, key_path = pf.platform_keypair(cls.front, cls.keydir)
            cls.srv = pf.ClockGpunexd(cls.BACKEND, None,
                                      extra_toml=pf.payouts_toml(cls.front, key_path)
                                      + TOPUPS_TOML)
            cls.srv.start()
            cls.admin = cls.srv.admin()
        except BaseException:
            cls._cleanup(keep=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls._cleanup(keep=cls.failed)

    @classmethod
    def _cleanup(cls, keep=False):
        if cls.srv:
            if keep:
                print(f"\n--- gpunexd logs (data kept in {cls.srv.tmp}) ---\n"
                      + cls.srv.logs()[-6000:])
                print(f"--- rpc-front log ---\n{cls.front.log_text()[-2000:]}")
            cls.srv.cleanup(keep=keep)
        shutil.rmtree(cls.keydir, ignore_errors=True)

    def run(self, result=None):
        result = super().run(result)
        if result is not None and any(getattr(t, "test_case", t) is self
                                      for t, _ in result.failures + result.errors):
            type(self).failed = True
        return result

    # -- helpers

    def payer(self, usdc_micro=100 * USDC):
        """A wallet with 1 SOL and `usdc_micro` USDC."""
        w = self.front.new_wallet()
        self.front.mint_usdc(w["public_key"], usdc_micro)
        return w

    def topup(self, customer, amount):
        r = customer.c.post(TOPUPS, {"amount_micro": amount})
        self.assertStatus(r, 201)
        return r.body

    def get(self, customer, tid):
        r = customer.c.get(f"{TOPUPS}/{tid}")
        self.assertStatus(r, 200)
        return r.body

    def balance(self, customer):
        r = customer.c.get(f"{API}/me/balance")
        self.assertStatus(r, 200)
        return r.body["balance_micro"]

    def topup_transfers(self, customer):
        """The ledger's top-up transfers to the customer: [(id, amount)]."""
        return sorted((str(t), int(a)) for t, a in self.srv.backend.query(
            "SELECT id, amount FROM ledger_transfers WHERE kind = 'usdc_topup' "
            "AND credit_account = ?", (f"customer:{customer.id}",)))

    def wait_credited(self, customer, tid, timeout=15):
        return wait_until(lambda: (lambda t: t if t["status"] == "credited" else None)(
            self.get(customer, tid)), timeout, f"top-up {tid} credited")

    def wait_detail(self, customer, tid, words, timeout=15):
        return wait_until(lambda: (lambda t: t if words in t["detail"] else None)(
            self.get(customer, tid)), timeout, f"top-up {tid}'s detail saying {words!r}")

    def polls(self, n=POLLS):
        time.sleep(n * LOOP_MS / 1000)

    def assertCreditedOnce(self, customer, t, signature, amount, before):
        """t credited with `signature` for `amount`, the balance `before` + amount, one
        ledger transfer."""
        self.assertEqual((t["status"], t["signature"], t["credited_micro"]),
                         ("credited", signature, amount), t)
        self.assertTrue(t["credited_at"], t)
        self.assertEqual(self.balance(customer), before + amount)
        self.assertEqual(self.topup_transfers(customer), [(f"topup_{signature}", amount)])

    # -- the tests

    def test_a_payment_is_credited_once(self):
        srv, front = self.srv, self.front
        cust = srv.user("Tina Topper")
        before = self.balance(cust)
        t = self.topup(cust, 12_500_000)
        # The request: the platform's wallet, USDC, 12.5, the reference, the top-up's id.
        recipient, params = parse_url(t["url"])
        self.assertEqual(recipient, self.platform["public_key"])
        self.assertEqual((t["recipient"], t["mint"]), (recipient, front.mint))
        self.assertEqual(params["amount"], ["12.5"])
        self.assertEqual(params["spl-token"], [front.mint])
        self.assertEqual(params["reference"], [t["reference"]])
        self.assertEqual(params["memo"], [t["id"]])
        self.assertEqual(params["label"], ["gpunex"])
        self.assertEqual((t["status"], t["signature"], t["credited_micro"], t["amount_micro"]),
                         ("pending", None, None, 12_500_000), t)
        self.assertGreater(t["expires_at"], t["created_at"])
        self.assertEqual(self.balance(cust), before)
        payer = self.payer(30 * USDC)
        platform_before = front.token_balance(self.platform["public_key"])
        sig = front.pay(t["url"], payer["secret_key"])
        got = self.wait_credited(cust, t["id"])
        self.assertCreditedOnce(cust, got, sig, 12_500_000, before)
        self.assertIn(sig, got["detail"])
        self.assertEqual(front.token_balance(self.platform["public_key"]),
                         platform_before + 12_500_000)
        self.assertEqual(front.token_balance(payer["public_key"]), 30 * USDC - 12_500_000)
        # More polls, a read, a restart: still once.
        self.polls()
        self.assertCreditedOnce(cust, self.get(cust, t["id"]), sig, 12_500_000, before)
        srv.restart()
        self.polls()
        self.assertCreditedOnce(cust, self.get(cust, t["id"]), sig, 12_500_000, before)
        # The statement shows it once; the list has it; the ledger balances.
        items = cust.c.get(f"{API}/me/statement").body["items"]
        self.assertEqual([(i["kind"], i["amount_micro"]) for i in items],
                         [("usdc_topup", 12_500_000)], items)
        listed = cust.c.get(TOPUPS).body["items"]
        self.assertEqual([(x["id"], x["status"]) for x in listed], [(t["id"], "credited")])
        chk = self.admin.c.get(f"{API}/admin/ledger/check").body
        self.assertEqual((chk["ok"], chk["sum_micro"]), (True, 0), chk)
        # A second payment to the same (credited) reference is not credited. (A new
        # blockhash first: the same transfer signed with the same one is the same
        # transaction, which the chain would take as a duplicate.)
        front.expire_blockhash()
        sig2 = front.pay(t["url"], payer["secret_key"])
        self.assertTrue(front.signature_status(sig2), "the second payment landed")
        self.assertNotEqual(sig2, sig)
        self.polls()
        self.assertCreditedOnce(cust, self.get(cust, t["id"]), sig, 12_500_000, before)

    def test_bad_payments_are_never_credited(self):
        front = self.front
        cust = self.srv.user("Bad Payer")
        before = self.balance(cust)
        payer = self.payer(50 * USDC)
        other_mint = front.create_mint(6)
        front.mint_to(other_mint, payer["public_key"], 50 * USDC)
        # The platform's wallet has an account of that token too (anybody may open one):
        # the transfer of the wrong token can land where the right one would.
        front.mint_to(other_mint, self.platform["public_key"], 0)
        stranger = front.new_wallet()["public_key"]
        front.mint_usdc(stranger, 0)  # its USDC account exists: the transfer can go there
        cases = [
            ("another token", dict(mint=other_mint), "wrong mint"),
            ("too little", dict(amount="4.999999"), "less than"),
            ("another recipient", dict(recipient=stranger), "another account"),
        ]
        made = []
        for what, tamper, words in cases:
            t = self.topup(cust, 5 * USDC)
            sig = front.pay(t["url"], payer["secret_key"], **tamper)
            self.assertTrue(front.signature_status(sig), f"{what}: the payment landed")
            made.append((what, t, sig, words))
        for what, t, sig, words in made:
            with self.subTest(payment=what):
                got = self.wait_detail(cust, t["id"], words)
                self.assertIn(sig, got["detail"], got)
                self.assertIn("not credited", got["detail"], got)
        self.polls()
        for what, t, sig, words in made:
            with self.subTest(payment=what):
                got = self.get(cust, t["id"])
                self.assertEqual((got["status"], got["signature"], got["credited_micro"]),
                                 ("pending", None, None), got)
        self.assertEqual(self.balance(cust), before)
        self.assertEqual(self.topup_transfers(cust), [])
        self.assertEqual(front.token_balance(stranger), 5 * USDC)
        # The top-up that was paid too little still waits: the right payment is credited.
        _, short, _, _ = made[1]
        sig = front.pay(short["url"], payer["secret_key"])
        got = self.wait_credited(cust, short["id"])
        self.assertCreditedOnce(cust, got, sig, 5 * USDC, before)

    def test_one_transaction_for_two_topups_credits_one(self):
        front = self.front
        cust = self.srv.user("Double Dipper")
        before = self.balance(cust)
        t1, t2 = self.topup(cust, 3 * USDC), self.topup(cust, 3 * USDC)
        # One transfer whose instruction carries both references (@solana/pay takes a list).
        url = t1["url"] + "&reference=" + t2["reference"]
        sig = front.pay(url, self.payer(10 * USDC)["secret_key"])
        wait_until(lambda: any(self.get(cust, t["id"])["status"] == "credited"
                               for t in (t1, t2)), 15, "one of the two credited")
        self.polls()
        got = {t["id"]: self.get(cust, t["id"]) for t in (t1, t2)}
        credited = [t for t in got.values() if t["status"] == "credited"]
        self.assertEqual(len(credited), 1, got)
        self.assertCreditedOnce(cust, credited[0], sig, 3 * USDC, before)
        other = next(t for t in got.values() if t["status"] != "credited")
        self.assertEqual((other["status"], other["signature"]), ("pending", None), other)
        self.assertIn("another top-up", other["detail"], other)
        self.srv.restart()
        self.polls()
        self.assertEqual(self.balance(cust), before + 3 * USDC)
        self.assertEqual(self.get(cust, other["id"])["status"], "pending")

    def test_a_payment_while_gpunexd_is_down_is_credited_once(self):
        srv, front = self.srv, self.front
        cust = srv.user("Down Payer")
        before = self.balance(cust)
        t = self.topup(cust, 7 * USDC)
        srv.kill()
        try:
            sig = front.pay(t["url"], self.payer(10 * USDC)["secret_key"])
        finally:
            srv.start()
        got = self.wait_credited(cust, t["id"])
        self.assertCreditedOnce(cust, got, sig, 7 * USDC, before)
        # Killed again right after the credit, and back: still once.
        srv.kill()
        srv.start()
        self.polls()
        self.assertCreditedOnce(cust, self.get(cust, t["id"]), sig, 7 * USDC, before)

    def test_only_confirmed_payments_count(self):
        front = self.front
        cust = self.srv.user("Patient Payer")
        before = self.balance(cust)
        t = self.topup(cust, 2 * USDC)
        front.hold_confirmations(True)
        try:
            sig = front.pay(t["url"], self.payer(5 * USDC)["secret_key"])
            self.polls()
            got = self.get(cust, t["id"])
            self.assertEqual(got["status"], "pending", got)
            self.assertEqual(self.balance(cust), before)
        finally:
            front.hold_confirmations(False)
        got = self.wait_credited(cust, t["id"])
        self.assertCreditedOnce(cust, got, sig, 2 * USDC, before)

    def test_an_expired_topup_paid_late_is_credited(self):
        srv = self.srv
        cust = srv.user("Late Payer")
        before = self.balance(cust)
        t = self.topup(cust, 4 * USDC)
        srv.advance(601)  # past ttl_s (600); nothing rents here
        got = self.get(cust, t["id"])
        self.assertEqual(got["status"], "expired", got)
        sig = self.front.pay(t["url"], self.payer(5 * USDC)["secret_key"])
        got = self.wait_credited(cust, t["id"])
        self.assertCreditedOnce(cust, got, sig, 4 * USDC, before)

    def test_the_qr_code_is_an_svg(self):
        cust = self.srv.user("Quinn QR")
        t = self.topup(cust, USDC)
        r = cust.c.get(f"{TOPUPS}/{t['id']}/qr.svg")
        self.assertStatus(r, 200)
        self.assertTrue(r.header("Content-Type").startswith("image/svg+xml"), r.headers)
        self.assertIn("sandbox", r.header("Content-Security-Policy") or "")
        text = r.raw.decode("utf-8")
        self.assertIn("<svg", text)
        self.assertTrue(text.rstrip().endswith("</svg>"), text[-200:])
        self.assertNotIn("<script", text.lower())
        # Another customer's is not found.
        other = self.srv.user("Otto Other")
        self.assertError(other.c.get(f"{TOPUPS}/{t['id']}/qr.svg"), 404)


class TopupsSqliteTest(TopupsMixin, unittest.TestCase):
    BACKEND = "sqlite"


class TopupsPostgresTest(TopupsMixin, unittest.TestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
