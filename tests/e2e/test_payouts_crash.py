"""Crash safety of payout runs (issue 15): gpunexd SIGKILLs itself at every step of a run
(GPUNEX_TEST_CRASH_AT) and is started again on the same data, port and test clock, with the
next step's crash point each time, until the run is done: every provider is paid exactly
once, on the chain and in the ledger.

Five providers earn from real rentals (real gpunex-agents, EMULATED L4s, containers in a
private Docker engine; test_payouts.PayoutsFixture): three are paid in USDC on the Solana
test node (tests/solana/rpc-front.mjs), one by SEPA, one by ACH. [payouts] batch = 1, so
that each Solana payout is signed and sent on its own and one restart moves the run on by
one step. Payouts are carried out in the order of their ids: S0 < S1 < S2.

  start        crash at            what the data holds afterwards
  1            payout.after_plan   all five planned, their money in payment; nothing sent
  2            payout.after_sign   S0 signed and recorded, nothing sent; then the node's
                                   blockhashes expire (test_expireBlockhash): that
                                   transaction can never land
  3            payout.after_send   S0's attempt 1 expired, attempt 2 signed and sent (it
                                   landed), 'sent' not recorded
  4            payout.before_confirm  nothing new (statuses read, nothing committed)
  5            payout.after_confirm   S0 confirmed (paid), attempt 2 landed
  6            payout.after_sign   S1 signed and recorded, nothing sent (its blockhash
                                   stays valid); then the node drops the next send
                                   (test_dropNextSends) and the clock passes the resend delay
  7            payout.before_file_write  S1's recorded transaction sent and dropped, S2
                                   sent and landed; both bank files recorded, neither
                                   written to files_dir
  8            (none)              S1's transaction sent again (the same signature: one
                                   attempt in all): answered HTTP 503 (test_failSends), then
                                   landed; S2 confirmed; while the node holds confirmations
                                   back (test_holdConfirmations) S1 stays submitted, then it
                                   is confirmed; the files written as recorded
Then the bank files are checked (xmllint, bankcheck), marked sent and paid.

Afterwards: each wallet holds exactly its payout, one landed transaction per payout and
no memo twice, the old transaction of S0 refused by the node, each provider's
provider_paid = what reached them, in payment 0, one payout_paid transfer per payout,
GET /api/v1/admin/ledger/check ok.

Same needs as test_payouts. Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import hashlib
import http.client
import os
import time
import unittest

import bankcheck
from harness import API, PASSWORD, wait_until
from solana_front import SolanaRpcError
from test_payouts import (ACH_ACCOUNT, ACH_FEE, ACH_ROUTING, EUR_RATE, EUR_RATE_PPM, SEPA_IBAN,
                          GpunexdDied, PayoutsFixture, monday_on_or_before, xsd_path)
# The module's private dockerd, as test_payouts starts and stops it.
from test_payouts import setUpModule, tearDownModule  # noqa: F401

CHAIN = ["payout.after_plan", "payout.after_sign", "payout.after_send",
         "payout.before_confirm", "payout.after_confirm", "payout.after_sign",
         "payout.before_file_write"]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class PayoutsCrashMixin(PayoutsFixture):
    BATCH = 1
    FIRST_CRASH_AT = CHAIN[0]

    # -- gpunexd dying and coming back

    def wait_crash(self, point, timeout=30):
        """gpunexd reaches `point` and SIGKILLs itself."""
        try:
            rc = self.srv.proc.wait(timeout=timeout)
        except Exception:
            raise AssertionError(f"gpunexd did not crash at {point} within {timeout}s")
        self.assertEqual(rc, -9, f"gpunexd exited with {rc}, not SIGKILL, at {point}")
        self.srv.kill()  # closes the log
        log = read_bytes(self.srv.log_paths[-1]).decode("utf-8", "replace")
        self.assertIn('"event":"faults.crash","point":"' + point + '"', log)
        self.crashes.append(point)
        self.mark(f"crashed at {point}")

    def mark(self, what):
        now = time.monotonic()
        self.marks.append(f"{what} +{now - self.last_mark:.1f}s")
        self.last_mark = now

    def restart(self, crash_at):
        """Starts gpunexd again on the same data, port and clock; it may die at its crash
        point before it says it is ready."""
        self.mark("checked")
        self.srv.crash_at = crash_at
        try:
            self.srv.start(timeout=60)
        except GpunexdDied:
            pass  # wait_crash checks how it died
        except RuntimeError:
            # It died before it said it was listening.
            if self.srv.proc is None or self.srv.proc.returncode != -9:
                raise
        self.mark("started")

    # -- the data as it is while gpunexd is down

    def payouts(self):
        rows = self.q("SELECT id, provider_id, state, method_kind, amount_micro, fee_micro, "
                      "COALESCE(file_name, '') FROM payouts ORDER BY id")
        return [dict(zip(("id", "provider", "state", "kind", "amount", "fee", "file"), r))
                for r in rows]

    def attempts(self, payout_id):
        return [tuple(r) for r in self.q(
            "SELECT n, state, signature FROM payout_attempts WHERE payout_id = ? ORDER BY n",
            (payout_id,))]

    def wire(self, payout_id, n):
        return self.q("SELECT wire FROM payout_attempts WHERE payout_id = ? AND n = ?",
                      (payout_id, n))[0][0]

    def snapshot(self):
        return ([tuple(p.values()) for p in self.payouts()],
                [tuple(r) for r in self.q("SELECT payout_id, n, state, signature FROM "
                                          "payout_attempts ORDER BY payout_id, n")],
                [tuple(r) for r in self.q("SELECT id, balance FROM ledger_accounts ORDER BY id")])

    def states(self):
        return {p["id"]: p["state"] for p in self.payouts()}

    def memos(self):
        return [t["memo"] for t in self.front.transactions() if t["memo"]]

    def sends_of(self, signature):
        return [s["outcome"] for s in self.front.sends()["sends"] if s["signature"] == signature]

    # -- the test

    def test_a_crash_at_every_step_pays_everyone_once(self):
        t_start = self.last_mark = time.monotonic()
        self.crashes, self.marks = [], []
        provs = self.providers(["Sol0", "Sol1", "Sol2", "Sepa", "Ach"])
        ended = self.earn(provs)
        for p in provs:
            p.earned = sum(r["provider_micro"] for r in ended[p.id])
        *sols, b, c = provs
        for p in sols:
            p.wallet = self.front.new_wallet()["public_key"]
            self.put_settings(p, {"method": {"kind": "solana", "wallet": p.wallet},
                                  "password": PASSWORD})
        self.put_settings(b, {"method": {"kind": "sepa", "holder": "Sepa Person",
                                         "iban": SEPA_IBAN}, "password": PASSWORD})
        self.put_settings(c, {"method": {"kind": "ach", "holder": "Ach Person",
                                         "routing_number": ACH_ROUTING,
                                         "account_number": ACH_ACCOUNT,
                                         "account_type": "checking"}, "password": PASSWORD})
        self.clock.advance(25 * 3600)
        for p in provs:
            wait_until(lambda p=p: self.totals(p)["available_micro"] == p.earned, 20,
                       f"{p.name}'s earnings released")
        by_provider = {p.id: p for p in provs}
        self.mark("earned")

        # 1: the run is planned, and gpunexd dies before any chain work.
        as_of = monday_on_or_before(self.clock.now().date()).isoformat()
        try:
            r = self.admin.c.post(f"{API}/admin/payout-runs", {"as_of": as_of,
                                                               "schedule": "weekly",
                                                               "eur_rate": EUR_RATE})
            self.assertStatus(r, 201)
        except (OSError, http.client.HTTPException):
            pass  # it died before it answered; the run is in the database all the same
        self.wait_crash("payout.after_plan")
        run_id = self.q("SELECT id FROM payout_runs WHERE as_of = ?", (as_of,))[0][0]
        pos = self.payouts()
        self.assertEqual(sorted(p["provider"] for p in pos), sorted(by_provider))
        self.assertEqual({p["state"] for p in pos}, {"planned"}, pos)
        for p in pos:
            self.assertEqual(self.account("provider_in_payment", p["provider"]), p["amount"])
        self.assertEqual(self.q("SELECT COUNT(*) FROM payout_attempts")[0][0], 0)
        self.assertEqual(self.front.sends()["count"], 0)
        s0, s1, s2 = [p for p in pos if p["kind"] == "solana"]
        bank = [p for p in pos if p["kind"] != "solana"]
        sol_ids = [s0["id"], s1["id"], s2["id"]]

        # 2: S0 signed and recorded, then the crash: nothing sent.
        self.restart("payout.after_sign")
        self.wait_crash("payout.after_sign")
        self.assertEqual(self.states(), {s0["id"]: "submitted", s1["id"]: "planned",
                                         s2["id"]: "planned", bank[0]["id"]: "planned",
                                         bank[1]["id"]: "planned"})
        a1 = self.attempts(s0["id"])
        self.assertEqual([(n, st) for n, st, _ in a1], [(1, "signed")], a1)
        self.assertEqual(self.front.sends()["count"], 0)
        self.assertEqual(self.front.transactions(), [])
        # While gpunexd is down the blockhash expires: the signed transaction can no
        # longer land.
        lvbh = self.q("SELECT last_valid_block_height FROM payout_attempts WHERE "
                      "payout_id = ? AND n = 1", (s0["id"],))[0][0]
        info = self.front.expire_blockhash()
        self.assertGreater(info["blockHeight"], lvbh)

        # 3: attempt 1 found expired, attempt 2 signed, sent (it lands), then the crash
        #    before 'sent' is recorded.
        self.restart("payout.after_send")
        self.wait_crash("payout.after_send")
        a2 = self.attempts(s0["id"])
        self.assertEqual([(n, st) for n, st, _ in a2], [(1, "expired"), (2, "signed")], a2)
        self.assertEqual(a2[0][2], a1[0][2])
        self.assertNotEqual(a2[1][2], a1[0][2])
        txs = self.front.transactions()
        self.assertEqual([(t["memo"], t["signature"]) for t in txs],
                         [(f"gpunex payout {s0['id']}", a2[1][2])], txs)
        self.assertEqual(self.front.token_balance(by_provider[s0["provider"]].wallet),
                         s0["amount"] - s0["fee"])
        self.assertEqual(self.states()[s1["id"]], "planned")
        # The first, expired transaction is refused by the node.
        with self.assertRaises(SolanaRpcError) as cm:
            self.front.call("sendTransaction", self.wire(s0["id"], 1), {"encoding": "base64"})
        self.assertIn("Blockhash not found", cm.exception.message)

        # 4: the statuses read, then the crash: nothing recorded.
        before = self.snapshot()
        self.restart("payout.before_confirm")
        self.wait_crash("payout.before_confirm")
        self.assertEqual(self.snapshot(), before)

        # 5: S0's confirmation committed, then the crash.
        self.restart("payout.after_confirm")
        self.wait_crash("payout.after_confirm")
        self.assertEqual(self.states()[s0["id"]], "confirmed")
        self.assertEqual([(n, st) for n, st, _ in self.attempts(s0["id"])],
                         [(1, "expired"), (2, "landed")])
        self.assertEqual(self.account("provider_paid", s0["provider"]), s0["amount"] - s0["fee"])
        self.assertEqual(self.account("provider_in_payment", s0["provider"]), 0)
        self.assertEqual(len(self.front.transactions()), 1)

        # 6: S1 signed and recorded, the crash again before it is sent; this time its
        #    blockhash stays valid, so the same transaction must be sent after the restart
        #    (never one signed anew).
        self.restart("payout.after_sign")
        self.wait_crash("payout.after_sign")
        a_s1 = self.attempts(s1["id"])
        self.assertEqual([(n, x) for n, x, _ in a_s1], [(1, "signed")], a_s1)
        self.assertEqual(self.states()[s2["id"]], "planned")
        self.assertEqual(self.sends_of(a_s1[0][2]), [])
        # The node will drop the next transaction sent to it; the clock moves past the
        # resend delay.
        self.front.drop_next_sends(1)
        self.clock.advance(5)

        # 7: S1's recorded transaction sent (dropped by the node), S2 sent and landed, both
        #    bank files recorded; the crash before the first is written to files_dir.
        self.restart("payout.before_file_write")
        self.wait_crash("payout.before_file_write")
        st = self.states()
        self.assertEqual((st[s1["id"]], st[s2["id"]]), ("submitted", "submitted"), st)
        self.assertEqual(self.attempts(s1["id"]), [(1, "sent", a_s1[0][2])])
        a_s2 = self.attempts(s2["id"])
        self.assertEqual([(n, x) for n, x, _ in a_s2], [(1, "sent")], a_s2)
        self.assertEqual(self.sends_of(a_s1[0][2]), ["dropped"])
        self.assertEqual(self.sends_of(a_s2[0][2]), ["landed"])
        self.assertEqual(sorted(self.memos()), sorted(f"gpunex payout {i}" for i in
                                                      (s0["id"], s2["id"])))
        files = [tuple(r) for r in self.q("SELECT name, kind, sha256 FROM payout_files "
                                          "WHERE run_id = ? ORDER BY name", (run_id,))]
        self.assertEqual([(n, k) for n, k, _ in files],
                         [(f"{run_id}-ach.txt", "nacha"), (f"{run_id}-sepa.xml", "pain.001")])
        files_dir = os.path.join(self.srv.data_dir, "payout-files")
        for name, _, _ in files:
            self.assertFalse(os.path.exists(os.path.join(files_dir, name)), name)
        file_of = {p["id"]: p["file"] for p in self.payouts()}
        self.assertEqual(sorted(file_of[p["id"]] for p in bank), [n for n, _, _ in files])

        # 8: no crash. S2 (landed before) is confirmed. S1's transaction is sent again:
        #    the node answers that send with HTTP 503, the next one lands, but while the
        #    node holds confirmations back S1 stays "processed" and is not confirmed; then
        #    it is. The files are written as recorded.
        self.front.fail_sends(1)
        self.front.hold_confirmations(True)
        self.restart(None)
        wait_until(lambda: self.sends_of(a_s1[0][2])[-1:] == ["landed"], 30, "S1 landed")
        self.assertEqual(self.sends_of(a_s1[0][2]), ["dropped", "http_503", "landed"])
        time.sleep(1.0)  # ten passes of the loop
        run = self.run_detail(run_id)
        run_states = {p["id"]: p["state"] for p in run["payouts"]}
        self.assertEqual([run_states[i] for i in sol_ids], ["confirmed", "submitted", "confirmed"],
                         "S1 landed but only processed: not confirmed yet")
        self.assertEqual(self.front.signature_status(a_s1[0][2])["confirmationStatus"],
                         "processed")
        self.front.hold_confirmations(False)
        run = self.wait_run(run_id, ("waiting",), timeout=60, what="the run waiting for the bank")
        run_states = {p["id"]: p["state"] for p in run["payouts"]}
        self.assertEqual([run_states[i] for i in sol_ids], ["confirmed"] * 3, run_states)
        self.assertEqual(self.attempts(s1["id"]), [(1, "landed", a_s1[0][2])])
        self.assertEqual(self.sends_of(a_s1[0][2])[:3], ["dropped", "http_503", "landed"])
        for name, kind, sha in files:
            path = os.path.join(files_dir, name)
            data = wait_until(lambda path=path: os.path.exists(path) and read_bytes(path),
                              10, f"{name} written")
            self.assertEqual(hashlib.sha256(data).hexdigest(), sha, name)
            self.assertEqual(self.download(run_id, name).raw, data)
        bp = self.payout_of(run, b)
        cp = self.payout_of(run, c)
        pain = bankcheck.check_pain001(os.path.join(files_dir, f"{run_id}-sepa.xml"), xsd_path())
        b_minor = bp["net_micro"] * EUR_RATE_PPM // 1_000_000 // 10_000
        self.assertEqual((pain["transactions"], pain["ctrl_sum_cents"]), (1, b_minor), pain)
        with open(os.path.join(files_dir, f"{run_id}-ach.txt"), encoding="ascii") as f:
            nacha = bankcheck.check_nacha(f.read())
        self.assertEqual(nacha["total_credit_cents"], (cp["amount_micro"] - ACH_FEE) // 10_000)
        for name in (f"{run_id}-sepa.xml", f"{run_id}-ach.txt"):
            self.assertStatus(self.admin.c.post(
                f"{API}/admin/payout-runs/{run_id}/files/{name}/sent"), 200)
        for po in (bp, cp):
            self.assertStatus(self.admin.c.post(f"{API}/admin/payouts/{po['id']}/bank-result",
                                                {"state": "paid"}), 200)
        run = self.wait_run(run_id, ("done",))
        self.assertEqual(run["counts"]["confirmed"], 5, run)

        # Everyone paid exactly once.
        self.assertEqual(self.crashes, CHAIN)
        memos = self.memos()
        self.assertEqual(len(memos), len(set(memos)), memos)
        self.assertEqual(sorted(memos), sorted(f"gpunex payout {i}" for i in sol_ids))
        sigs = [t["signature"] for t in self.front.transactions()]
        self.assertEqual(len(sigs), len(set(sigs)))
        for t in self.front.transactions():
            self.assertIsNone(t["err"], t)
        landed = [r[0] for r in self.q("SELECT signature FROM payout_attempts WHERE "
                                       "state = 'landed'")]
        self.assertEqual(sorted(landed), sorted(sigs), "every landed transaction is recorded")
        for po in run["payouts"]:
            prov = by_provider[po["provider_id"]]
            net = po["amount_micro"] - po["fee_micro"]
            if po["method"]["kind"] == "solana":
                self.assertEqual(self.front.token_balance(prov.wallet), net, prov.name)
                self.assertEqual(po["signature"], self.memo_sig(po["id"]))
            self.assertEqual(self.account("provider_paid", prov.id), net, prov.name)
            self.assertEqual(self.account("provider_in_payment", prov.id), 0, prov.name)
            self.assertEqual(self.account("provider_available", prov.id),
                             prov.earned - po["amount_micro"], prov.name)
            self.assertEqual(self.q("SELECT COUNT(*) FROM ledger_transfers WHERE "
                                    "kind = 'payout_paid' AND credit_account = ?",
                                    (f"provider_paid:{prov.id}",))[0][0], 1, prov.name)
        self.assertLedgerOk()
        self.mark("done")
        print(f"\n({self.BACKEND}: {time.monotonic() - t_start:.1f} s: " + ", ".join(self.marks)
              + ")")

    def memo_sig(self, payout_id):
        txs = self.memo_txs(payout_id)
        self.assertEqual(len(txs), 1, txs)
        return txs[0]["signature"]


class PayoutsCrashSqliteTest(PayoutsCrashMixin, unittest.TestCase):
    BACKEND = "sqlite"


class PayoutsCrashPostgresTest(PayoutsCrashMixin, unittest.TestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
