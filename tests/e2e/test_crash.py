"""Crash safety (APP-4, NTF-1): gpunexd is SIGKILLed while several writers create and
submit provider applications, then restarted on the same data. Every application whose
creation was answered 201 is there, with the right status; the SMTP sink receives exactly
one "received" email per submitted application - none lost, none twice - within a short
time after the restart.

Variant "slow sink": the SMTP server holds its reply to each message for 0.5 s and the
process is killed while a message is in that window (sent, not yet acknowledged, so not
accepted: the sink drops it when the client goes away), so the message must be delivered
again after the restart.

Duplicates: none is accepted, with one exception that NTF-1 ("at least once") allows: a
message the sink had accepted but the killed process had not yet recorded as sent (its
outbox row still 'sending' when read after the kill) may arrive once more after the
restart, with the same Message-ID.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import collections
import http.client
import subprocess
import threading
import time
import unittest

from harness import API, VERIFY_SUBJECT, ServerTestCase, community_application

SUBJECT_SUBMITTED = "gpunex: your provider application was received"

WRITERS = 4
USERS_PER_WRITER = 6
KILL_AFTER_SUBMITS = 8
DELIVERY_WINDOW_S = 15.0


def mails(sink):
    """What the sink received, but the links that verified the users' addresses at sign-up."""
    return [m for m in sink.snapshot() if m.subject != VERIFY_SUBJECT]


def outbox(srv):
    """The outbox rows, but those links (column 5 is the kind)."""
    return [r for r in srv.outbox() if r[5] != "email.verify"]


class Writer(threading.Thread):
    """Creates and submits one application for each of its users, in turn."""

    def __init__(self, users, stop):
        super().__init__(daemon=True)
        self.users = users
        self.stop_event = stop
        self.created = {}     # app id -> contact email (answered 201)
        self.submitted = set()  # app ids whose submit was answered 200
        self.in_doubt = set()  # app ids whose submit got no answer
        self.errors = []
        self.lock = threading.Lock()

    def run(self):
        for u in self.users:
            if self.stop_event.is_set():
                return
            contact = u.contact
            try:
                r = u.c.post(f"{API}/provider-applications", community_application(contact))
            except (OSError, http.client.HTTPException):
                return  # the server died: this user's application is in doubt, stop
            if r.status != 201:
                self.errors.append(f"create for {u.email}: {r!r}")
                return
            app_id = r.body["id"]
            with self.lock:
                self.created[app_id] = contact
            time.sleep(0.01)
            try:
                r = u.c.post(f"{API}/provider-applications/{app_id}/submit")
            except (OSError, http.client.HTTPException):
                with self.lock:
                    self.in_doubt.add(app_id)
                return
            if r.status != 200:
                self.errors.append(f"submit {app_id}: {r!r}")
                return
            with self.lock:
                self.submitted.add(app_id)
            time.sleep(0.02)


class CrashMixin:
    SINK_DELAY_S = 0.0
    KILL_IN_FLIGHT = False

    def test_kill_while_submitting(self):
        srv, sink = self.srv, self.sink
        admin = srv.admin()
        users = []
        for i in range(WRITERS * USERS_PER_WRITER):
            u = srv.user(f"Writer{i} Person")
            # The account's own address, verified at sign-up (harness): an application's
            # email to it goes out at once (another address would wait for its link).
            u.contact = u.email
            users.append(u)
        stop = threading.Event()
        writers = [Writer(users[i::WRITERS], stop) for i in range(WRITERS)]
        for w in writers:
            w.start()

        def submitted_count():
            return sum(len(w.submitted) for w in writers)

        deadline = time.monotonic() + 60
        while submitted_count() < KILL_AFTER_SUBMITS:
            if not any(w.is_alive() for w in writers) or time.monotonic() > deadline:
                self.fail(f"writers did not reach {KILL_AFTER_SUBMITS} submits: "
                          f"{[w.errors for w in writers]}")
            time.sleep(0.005)
        if self.KILL_IN_FLIGHT:
            # Kill while the sink holds a message it has not acknowledged yet.
            t_end = time.monotonic() + 20
            while not (sink.data_started > len(sink.snapshot())):
                self.assertLess(time.monotonic(), t_end, "no message in flight to kill during")
                time.sleep(0.005)
        # Counted before the kill: the sink answers a message 0.5 s after its data began,
        # and on a loaded machine the kill can return later than that.
        in_flight_at_kill = sink.data_started - len(sink.snapshot())
        srv.kill()
        stop.set()
        for w in writers:
            w.join(timeout=30)
        errors = [e for w in writers for e in w.errors]
        self.assertFalse(errors, errors)

        created, submitted, in_doubt = {}, set(), set()
        for w in writers:
            created.update(w.created)
            submitted |= w.submitted
            in_doubt |= w.in_doubt
        self.assertGreaterEqual(len(submitted), KILL_AFTER_SUBMITS)
        if self.KILL_IN_FLIGHT:
            self.assertGreaterEqual(in_flight_at_kill, 1)

        # What the dead process left: a row still 'sending' whose message the sink already
        # accepted was delivered but not recorded; sending it again after the restart is
        # the at-least-once case of NTF-1 and must reuse the Message-ID.
        accepted_at_kill = {m.message_id for m in mails(sink)}
        unrecorded = {r[4] for r in outbox(srv)
                      if r[6] == "sending" and r[4] in accepted_at_kill}

        kill_time = time.monotonic()
        srv.start()

        # --- every acknowledged application is there, with the right status
        owners = {}
        for u in users:
            owners[u.contact] = u
        final_status = {}
        for app_id, contact in created.items():
            r = owners[contact].c.get(f"{API}/provider-applications/{app_id}")
            self.assertStatus(r, 200, f"application {app_id} lost after the crash")
            final_status[app_id] = r.body["status"]
            if app_id in submitted:
                self.assertEqual(r.body["status"], "submitted", app_id)
            elif app_id in in_doubt:
                self.assertIn(r.body["status"], ("draft", "submitted"), app_id)
            else:
                self.assertEqual(r.body["status"], "draft", app_id)
            self.assertEqual(r.body["contact"]["email"], contact)

        # The database's own view: submitted applications, from the review queue.
        queue_ids, cursor = {}, None
        while True:
            q = {"status": "submitted", "limit": "200"}
            if cursor:
                q["cursor"] = cursor
            r = admin.c.get(f"{API}/provider-applications", query=q)
            self.assertStatus(r, 200)
            for it in r.body["items"]:
                queue_ids[it["id"]] = it["contact"]["email"]
            cursor = r.body["next_cursor"]
            if not cursor:
                break
        self.assertLessEqual(submitted, set(queue_ids))
        expected = collections.Counter(queue_ids.values())
        self.assertTrue(all(n == 1 for n in expected.values()), expected)
        expected_addrs = set(expected)

        # --- exactly one email per submitted application
        window = DELIVERY_WINDOW_S + self.SINK_DELAY_S * len(expected_addrs)

        def delivered(msgs):
            return expected_addrs <= {m.to_addr for m in msgs if m.subject != VERIFY_SUBJECT}

        timed_out = None
        try:
            sink.wait_for(delivered, window, "one email per submitted application")
        except AssertionError as e:
            timed_out = str(e)
        if timed_out:
            got = {m.to_addr for m in mails(sink)}
            missing = sorted(expected_addrs - got)
            rows = [r[:3] + r[4:] for r in outbox(srv) if r[1].lower() in missing]
            self.fail(f"{len(missing)} of {len(expected_addrs)} emails not delivered "
                      f"{time.monotonic() - kill_time:.1f}s after the restart (in flight at "
                      f"the kill: {in_flight_at_kill}): {missing}\noutbox rows of the missing "
                      "(id, to, subject, message_id, kind, status, attempts, lease_until, "
                      f"last_error): {rows}\nnow: {int(time.time() * 1e6)} us")
        # Give a duplicate the chance to show up before judging.
        time.sleep(1.0 + self.SINK_DELAY_S * 2)
        msgs = mails(sink)
        by_id = collections.Counter(m.message_id for m in msgs)
        ids_by_addr = collections.defaultdict(set)
        for m in msgs:
            ids_by_addr[m.to_addr].add(m.message_id)
        self.assertEqual(set(ids_by_addr), expected_addrs,
                         "emails to applications that are not submitted")
        self.assertEqual({a: ids for a, ids in ids_by_addr.items() if len(ids) != 1}, {},
                         "more than one distinct email for one application")
        # No message twice - except, at most once more, one that the sink had accepted
        # but the dead process had not recorded as sent (same Message-ID).
        repeats = {k: v for k, v in by_id.items() if v > 1}
        tolerated = {k for k, v in repeats.items() if k in unrecorded and v == 2}
        self.assertEqual({k: v for k, v in repeats.items() if k not in tolerated}, {},
                         "the same message was delivered twice")
        if tolerated:
            print(f"\nnote: {len(tolerated)} message(s) accepted just before the kill were "
                  f"delivered again after the restart with the same Message-ID "
                  f"(at least once): {sorted(tolerated)}")
        for m in msgs:
            self.assertEqual(m.subject, SUBJECT_SUBMITTED)
            self.assertRegex(m.message_id, r"^<eml_[0-9A-Z]+@gpunex\.test>$")
        # The outbox agrees: one row per submitted application, all sent, same Message-IDs.
        # (The Message-ID set is compared, so a tolerated repeat is not a second row.)
        rows = outbox(srv)
        self.assertEqual(sorted(r[1].lower() for r in rows), sorted(expected_addrs))
        self.assertEqual({r[4] for r in rows}, set(by_id))
        deadline = time.monotonic() + 5
        while any(r[6] != "sent" for r in rows) and time.monotonic() < deadline:
            time.sleep(0.1)
            rows = outbox(srv)
        self.assertEqual([r for r in rows if r[6] != "sent"], [])

        # The restarted server still works: a draft can be submitted and is mailed.
        for app_id, status in final_status.items():
            if status == "draft":
                contact = created[app_id]
                r = owners[contact].c.post(f"{API}/provider-applications/{app_id}/submit")
                self.assertStatus(r, 200)
                sink.wait_for_addr(contact, 1, timeout=10 + self.SINK_DELAY_S * 4, links=False)
                break


class OneServerPerSqliteDataTest(ServerTestCase):
    """One gpunexd serves a SQLite data directory at a time (docs/operations.md): on SQLite
    the payout lock and the outbox's email claims are the process's own, so a second one
    could pay a run again or send emails twice. A second `serve` refuses to start, naming
    the directory; the first goes on; once it is gone, SIGKILLed included, the next starts."""
    BACKEND = "sqlite"
    SMTP = False

    def test_a_second_gpunexd_on_a_served_sqlite_data_directory_refuses_to_start(self):
        srv = self.srv
        second = subprocess.run([srv.binary, "serve", "--config", srv.config_path],
                                env=srv.env(), cwd=srv.tmp, capture_output=True, text=True,
                                timeout=60)
        self.assertNotEqual(second.returncode, 0, second.stderr)
        self.assertIn("another gpunexd serves the data directory " + srv.data_dir,
                      second.stderr)
        self.assertStatus(srv.client().get("/readyz"), 200)
        # The lock is the kernel's: it ends with the process that held it.
        srv.kill()
        srv.start()
        self.assertStatus(srv.client().get("/readyz"), 200)


class CrashSqliteTest(CrashMixin, ServerTestCase):
    BACKEND = "sqlite"


class CrashSlowSinkSqliteTest(CrashMixin, ServerTestCase):
    BACKEND = "sqlite"
    SINK_DELAY_S = 0.5
    KILL_IN_FLIGHT = True


class CrashPostgresTest(CrashMixin, ServerTestCase):
    BACKEND = "postgresql"


class CrashSlowSinkPostgresTest(CrashMixin, ServerTestCase):
    BACKEND = "postgresql"
    SINK_DELAY_S = 0.5
    KILL_IN_FLIGHT = True


if __name__ == "__main__":
    unittest.main()
