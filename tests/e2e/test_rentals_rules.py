"""What an outside probe found in the rental paths (issue 24), across processes: gpunexd
and fake agents (the protocol by hand, test_agent_channel.FakeAgent) with EMULATED L4s; no
container is ever started here.

- The queue: 600 jobs that no offer can take, from five customers (each up to its bound,
  [rentals] max_queued_jobs_per_customer, 120 here; one more is refused with 409), do not
  keep a job that an offer can take from being placed within a round of that offer
  appearing.
- The first hour: 20 concurrent rentals by a customer whose balance covers one hour of
  one GPU make one rental; the other 19 are refused naming the balance.
- The placement rule: a provider's job is never placed on its own GPUs; it waits, and is
  placed on another provider's GPU once one is offered.
- An operator's refund (issue 30 item 9): part of an ended rental's charge goes back to the
  customer as ledger transfers with the reason, on the statement and the rental; more than
  is left, a bad amount or reason, or a non-admin change nothing; a keyed repeat moves
  nothing; the ledger's balances still match and sum to zero. An operator reads the
  customer (roles, balance) and lists their rentals by state.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import threading
import time
import unittest

import payouts_fixture as pf
from harness import API, ServerTestCase, provider_with_agent_token, wait_until
from test_agent_channel import L4 as L4_GPU
from test_agent_channel import FakeAgent

L4 = "l4-24gb"
IMAGE = "gpunex-test/busybox:1"
USDC = 1_000_000
RENTALS = f"{API}/rentals"
JOBS = f"{API}/jobs"
CREDITS = f"{API}/admin/credits"
BOUND = 120  # max_queued_jobs_per_customer, as configured below
FLOODERS = 5  # customers filling their queues: 600 jobs in all
# A job no offer can take: 1 micro-USDC per GPU-hour, for a week.
UNPLACEABLE = {"gpu_model": L4, "gpus": 1, "max_price_micro": 1, "image": IMAGE,
               "command": ["/bin/sleep", "60"], "deadline_s": 604_800}
# One that any L4 offer at the catalog's prices takes.
FITS = {"gpu_model": L4, "gpus": 1, "max_price_micro": 5 * USDC, "image": IMAGE,
        "command": ["/bin/sleep", "60"]}


class RentalsRulesMixin:
    ROOT_TOML = "allow_emulated_gpus = true"
    EXTRA_TOML = f"\n[rentals]\nmax_queued_jobs_per_customer = {BOUND}\n"
    SMTP = False

    def setUp(self):
        super().setUp()
        self.admin = self.srv.admin()

    def q(self, sql, params=()):
        return self.srv.backend.query(sql, params)

    def credit(self, user, amount):
        r = self.admin.c.post(CREDITS, {"user_id": user.id, "amount_micro": amount,
                                        "reference": "e2e credit"})
        self.assertStatus(r, 201)

    def machine(self, name, gpus):
        """A provider with a fake agent of `gpus` L4s; returns (provider, agent, offer)."""
        prov, token, _ = provider_with_agent_token(self.srv, self.admin, name=name)
        ag = FakeAgent(self.srv, token, models=(L4_GPU,) * gpus)
        self.addCleanup(ag.cleanup)
        ag.join()
        offer = wait_until(lambda: self.offer_on(ag.machine_id, gpus), 10, f"{name}'s offer")
        return prov, ag, offer

    def offer_on(self, machine_id, free):
        res = self.admin.c.get(f"{API}/offers", query={"gpu_model": L4, "limit": "200"})
        self.assertStatus(res, 200)
        return next((o for o in res.body["items"]
                     if o["machine_id"] == machine_id and o["gpus_available"] == free), None)

    def job_state(self, user, job_id):
        r = user.c.get(f"{JOBS}/{job_id}")
        self.assertStatus(r, 200)
        return r.body

    def test_jobs_no_offer_can_take_do_not_stall_one_that_fits(self):
        prov, ag, offer = self.machine("Pia", 1)
        mid = ag.machine_id
        # The GPU is withdrawn for now: no offer at all.
        gpu = prov.c.get(f"{API}/machines/{mid}").body["gpus"][0]["id"]
        r = prov.c.request("PATCH", f"{API}/machines/{mid}/gpus/{gpu}", {"enabled": False})
        self.assertStatus(r, 200)
        wait_until(lambda: self.admin.c.get(f"{API}/offers/{offer['id']}").status == 404,
                   10, "the offer off the marketplace")

        # Five customers holding 1 USDC each fill their queues.
        flooders = [self.srv.user(f"Flood{i} Customer") for i in range(FLOODERS)]
        for u in flooders:
            self.credit(u, 1 * USDC)
        errors = []

        def flood(u):
            c = u.c
            for k in range(BOUND):
                r = c.post(JOBS, UNPLACEABLE)
                if r.status != 201 or r.body["state"] != "queued":
                    errors.append(f"{u.id} job {k}: {r!r}")
                    return

        threads = [threading.Thread(target=flood, args=(u,)) for u in flooders]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(self.q("SELECT COUNT(*) FROM jobs WHERE state = 'queued'")[0][0],
                         FLOODERS * BOUND)
        # One more would wait beyond its customer's bound: refused, and nothing stored.
        r = flooders[0].c.post(JOBS, UNPLACEABLE)
        err = self.assertError(r, 409, code="failed_precondition")
        self.assertIn(f"{BOUND} jobs queued", err["message"])
        self.assertEqual(self.q("SELECT COUNT(*) FROM jobs")[0][0], FLOODERS * BOUND)

        # A job that the offer will take, behind all of them.
        # Its answer waits for a scheduling round (no worker thread does) and still goes
        # through what every answer does: the common headers, the idempotency record.
        fay = self.srv.user("Fay Fits")
        self.credit(fay, 10 * USDC)
        key = {"Idempotency-Key": "fay-fits-1"}
        r = fay.c.post(JOBS, FITS, headers=key)
        self.assertStatus(r, 201)
        self.assertEqual(r.body["state"], "queued", r.body)
        self.assertEqual(r.header("x-content-type-options"), "nosniff")
        self.assertEqual(r.header("cache-control"), "no-store")
        job = r.body["id"]
        again = fay.c.post(JOBS, FITS, headers=key)
        self.assertStatus(again, 201)
        self.assertEqual(again.header("idempotent-replayed"), "true")
        self.assertEqual(again.body["id"], job)
        self.assertEqual(self.q("SELECT COUNT(*) FROM jobs WHERE customer_id = ?",
                                (fay.id,))[0][0], 1)
        r = prov.c.request("PATCH", f"{API}/machines/{mid}/gpus/{gpu}", {"enabled": True})
        self.assertStatus(r, 200)
        wait_until(lambda: self.offer_on(mid, 1), 10, "the offer back on the marketplace")
        # Rounds take the queue again every second: placed within a few, not never.
        placed = wait_until(lambda: (lambda j: j if j["state"] == "placed" else None)(
            self.job_state(fay, job)), 5, "the job that fits placed")
        self.assertEqual(placed["offer_id"], offer["id"], placed)
        rental = fay.c.get(f"{RENTALS}/{placed['rental_id']}")
        self.assertStatus(rental, 200)
        self.assertEqual(rental.body["job_id"], job)
        # The job says where its rental stands (its own state stays "placed").
        self.assertEqual(placed["rental_state"], rental.body["state"], placed)
        self.assertIsNone(placed["rental_end_reason"])
        stopped = fay.c.post(f"{RENTALS}/{placed['rental_id']}/stop", {})
        self.assertStatus(stopped, 200)
        after = self.job_state(fay, job)
        self.assertEqual(after["state"], "placed", after)
        self.assertIn(after["rental_state"], ("ending", "ended"), after)
        self.assertEqual(after["rental_end_reason"], "stopped", after)
        self.assertEqual(after["rental_detail"], "stopped by the customer", after)
        listed = [j for j in fay.c.get(f"{API}/jobs").body["items"] if j["id"] == job]
        self.assertEqual(listed[0]["rental_end_reason"], "stopped", listed)
        self.assertEqual(self.q("SELECT COUNT(*) FROM jobs WHERE state = 'queued'")[0][0],
                         FLOODERS * BOUND)

    def test_an_operator_finds_users_and_credits_one_by_email(self):
        uma = self.srv.user("Uma Underscore", email="uma_100@Example.org")
        # "_" is LIKE's any-character: taken as itself, "a_1" does not find "a-1".
        self.srv.user("Umberto Other", email="uma-100@example.org")
        found = self.admin.c.get(f"{API}/admin/users", query={"q": "A_1"})
        self.assertStatus(found, 200)
        # By email, any case, its LIKE wildcards taken as they are.
        self.assertEqual([u["id"] for u in found.body["items"]], [uma.id], found.body)
        self.assertEqual(found.body["items"][0]["email"], "uma_100@example.org")
        by_name = self.admin.c.get(f"{API}/admin/users", query={"q": "underscore"})
        self.assertEqual([u["name"] for u in by_name.body["items"]], ["Uma Underscore"])
        # By email's order, at most `limit`.
        both = self.admin.c.get(f"{API}/admin/users", query={"q": "uma"})
        self.assertEqual([u["email"] for u in both.body["items"]],
                         ["uma-100@example.org", "uma_100@example.org"])
        first = self.admin.c.get(f"{API}/admin/users", query={"q": "uma", "limit": "1"})
        self.assertEqual([u["email"] for u in first.body["items"]], ["uma-100@example.org"])
        for bad, field in (({"q": "u"}, "q"), ({"q": "um", "limit": "51"}, "limit"),
                           ({"q": "x" * 255}, "q")):
            r = self.admin.c.get(f"{API}/admin/users", query=bad)
            self.assertStatus(r, 422)
            self.assertIn(field, r.body["error"]["fields"], r.body)
        self.assertStatus(uma.c.get(f"{API}/admin/users", query={"q": "um"}), 403)
        # Credited by email; an unknown email, or both ways at once, change nothing.
        before = self.q("SELECT COUNT(*) FROM ledger_transfers")[0][0]
        for body, field in (({"email": "nobody@example.org"}, "email"),
                            ({"email": uma.email, "user_id": uma.id}, "email"),
                            ({}, "user_id")):
            r = self.admin.c.post(CREDITS, {"amount_micro": 1_000_000, "reference": "x",
                                            **body})
            self.assertStatus(r, 422)
            self.assertIn(field, r.body["error"]["fields"], r.body)
        self.assertEqual(self.q("SELECT COUNT(*) FROM ledger_transfers")[0][0], before)
        r = self.admin.c.post(CREDITS, {"email": "UMA_100@example.org",
                                        "amount_micro": 2_500_000, "reference": "by email"})
        self.assertStatus(r, 201)
        self.assertEqual(r.body["transfer"]["user_id"], uma.id)
        self.assertEqual(uma.c.get(f"{API}/me/balance").body["balance_micro"], 2_500_000)

    def test_an_operator_refunds_part_of_an_ended_rental_and_never_more(self):
        _, agent, _ = self.machine("Pia", 1)
        cust = self.srv.user("Rhea Refund")
        self.credit(cust, 10 * USDC)
        ended = pf.run_rental(self.admin, cust, agent, 1, 2)
        charged = ended["charged_micro"]
        self.assertGreater(charged, 10, ended)
        url = f"{API}/admin/rentals/{ended['id']}/refund"

        def balance():
            return cust.c.get(f"{API}/me/balance").body["balance_micro"]

        def transfers():
            return self.q("SELECT COUNT(*) FROM ledger_transfers")[0][0]

        paid, count = balance(), transfers()
        self.assertEqual(paid, 10 * USDC - charged)
        # Refused by name, and nothing moves.
        for body, field in (({"amount_micro": charged + 1, "reason": "too much"}, "amount_micro"),
                            ({"amount_micro": 0, "reason": "nothing"}, "amount_micro"),
                            ({"amount_micro": 1, "reason": ""}, "reason"),
                            ({"amount_micro": 1, "reason": "x" * 201}, "reason"),
                            ({"amount_micro": 1}, "reason"),
                            ({"amount_micro": 1, "reason": "x", "to": "me"}, "to")):
            self.assertError(self.admin.c.post(url, body), 422, fields=[field])
        self.assertError(cust.c.post(url, {"amount_micro": 1, "reason": "mine"}), 403)
        self.assertError(self.admin.c.post(f"{API}/admin/rentals/rnt_none/refund",
                                           {"amount_micro": 1, "reason": "x"}), 404)
        self.assertEqual((balance(), transfers()), (paid, count))

        # Half of it, with a key: the same request again answers the first refund.
        part = charged // 2
        key = {"Idempotency-Key": "refund-rhea-1"}
        body = {"amount_micro": part, "reason": "the image pull was slow"}
        r = self.admin.c.post(url, body, headers=key)
        self.assertStatus(r, 201)
        self.assertEqual(r.body["rental"]["refunded_micro"], part)
        self.assertEqual(sum(t["amount_micro"] for t in r.body["transfers"]), part, r.body)
        self.assertEqual({t["from"] for t in r.body["transfers"]},
                         {"platform", "provider_pending"}, r.body)
        again = self.admin.c.post(url, body, headers=key)
        self.assertStatus(again, 201)
        self.assertEqual(again.body, r.body)
        self.assertEqual((balance(), transfers()), (paid + part, count + 2))
        # The customer sees it on the rental and the statement, with the reason.
        self.assertEqual(cust.c.get(f"{RENTALS}/{ended['id']}").body["refunded_micro"], part)
        lines = [e for e in cust.c.get(f"{API}/me/statement").body["items"]
                 if e["kind"] in ("refund_fee", "refund_provider")]
        self.assertEqual(sum(e["amount_micro"] for e in lines), part, lines)
        self.assertEqual({e["reference"] for e in lines}, {"refund: the image pull was slow"})
        # More than is left now: refused, nothing moves; the rest is accepted.
        self.assertError(self.admin.c.post(url, {"amount_micro": charged - part + 1,
                                                 "reason": "too much"}), 422,
                         fields=["amount_micro"])
        self.assertEqual((balance(), transfers()), (paid + part, count + 2))
        r = self.admin.c.post(url, {"amount_micro": charged - part, "reason": "the rest"})
        self.assertStatus(r, 201)
        self.assertEqual(r.body["rental"]["refunded_micro"], charged)
        self.assertEqual(balance(), 10 * USDC)
        check = self.admin.c.get(f"{API}/admin/ledger/check")
        self.assertStatus(check, 200)
        self.assertTrue(check.body["ok"], check.body)
        self.assertEqual(check.body["sum_micro"], 0)

        # What the admin pages read: the customer, and their rentals by state.
        u = self.admin.c.get(f"{API}/admin/users/{cust.id}")
        self.assertStatus(u, 200)
        self.assertEqual((u.body["email"], u.body["balance_micro"], u.body["provider"]),
                         (cust.email, 10 * USDC, None), u.body)
        self.assertNotIn("admin", u.body["roles"])
        self.assertError(self.admin.c.get(f"{API}/admin/users/usr_none"), 404)
        mine = self.admin.c.get(RENTALS, query={"customer_id": cust.id, "state": "ended"})
        self.assertStatus(mine, 200)
        self.assertEqual([x["id"] for x in mine.body["items"]], [ended["id"]])
        running = self.admin.c.get(RENTALS, query={"customer_id": cust.id, "state": "running"})
        self.assertEqual(running.body["items"], [])
        self.assertError(cust.c.get(RENTALS, query={"customer_id": cust.id}), 422,
                         fields=["customer_id"])
        self.assertError(self.admin.c.get(RENTALS, query={"state": "paused"}), 422,
                         fields=["state"])

    def test_twenty_concurrent_rentals_on_one_hours_balance_make_one(self):
        _, _, offer = self.machine("Pia", 20)
        cust = self.srv.user("Rita Racer")
        self.credit(cust, offer["price_micro"])  # one hour of one GPU
        body = {"offer_id": offer["id"], "gpus": 1, "image": IMAGE,
                "command": ["/bin/sleep", "60"]}
        start = threading.Barrier(20)
        answers = [None] * 20

        def rent(i):
            c = cust.c
            start.wait()
            answers[i] = c.post(RENTALS, body)

        threads = [threading.Thread(target=rent, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        made = [a for a in answers if a.status == 201]
        self.assertEqual(len(made), 1, answers)
        for a in answers:
            if a.status != 201:
                err = self.assertError(a, 422, fields=["balance"], code="validation_failed")
                self.assertEqual(sorted(err["fields"]), ["balance"], a)
                self.assertIn("1 active rental", err["fields"]["balance"], a)
        self.assertEqual(self.q("SELECT COUNT(*) FROM rentals")[0][0], 1)
        self.assertEqual(self.q("SELECT COUNT(*) FROM workloads")[0][0], 1)
        r = cust.c.get(f"{API}/me/balance")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["balance_micro"], offer["price_micro"])  # nothing ran yet

    def test_a_providers_job_is_never_placed_on_its_own_gpus(self):
        pia, pia_agent, pia_offer = self.machine("Pia", 2)
        self.credit(pia, 10 * USDC)
        # Its own offer by id is refused, naming it.
        r = pia.c.post(RENTALS, {"offer_id": pia_offer["id"], "gpus": 1, "image": IMAGE})
        self.assertError(r, 422, fields=["offer_id"])
        # Its job fits only its own offer: it waits, round after round.
        r = pia.c.post(JOBS, FITS)
        self.assertStatus(r, 201)
        self.assertEqual(r.body["state"], "queued", r.body)
        job = r.body["id"]
        time.sleep(2.5)
        self.assertEqual(self.job_state(pia, job)["state"], "queued")
        self.assertEqual(self.q("SELECT COUNT(*) FROM rentals")[0][0], 0)
        pia_agent.assert_no_command(0.5)
        # Another provider's GPU appears: the job is placed there.
        _, oscar_agent, oscar_offer = self.machine("Oscar", 1)
        placed = wait_until(lambda: (lambda j: j if j["state"] == "placed" else None)(
            self.job_state(pia, job)), 10, "the job placed")
        self.assertEqual(placed["offer_id"], oscar_offer["id"], placed)
        rental = self.admin.c.get(f"{RENTALS}/{placed['rental_id']}")
        self.assertStatus(rental, 200)
        self.assertEqual(rental.body["machine_id"], oscar_agent.machine_id, rental.body)
        self.assertEqual(self.q("SELECT COUNT(*) FROM rentals WHERE provider_id = customer_id")
                         [0][0], 0)
        oscar_agent.expect_command("start_workload", 10)
        pia_agent.assert_no_command(0.5)


class RentalsRulesSqliteTest(RentalsRulesMixin, ServerTestCase):
    BACKEND = "sqlite"


class RentalsRulesPostgresTest(RentalsRulesMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
