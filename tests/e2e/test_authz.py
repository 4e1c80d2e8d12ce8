"""Authorization matrix (ACC-2): every route gpunexd registers against five principals -
anonymous, a customer (plain user), provider A, provider B (both approved) and an admin -
and against API keys of each of them with each set of scopes they may hold (KEYS), with
the status each must get. Nobody reads or changes what is not theirs: someone else's
resource is "not found" (404), a missing role or scope is 403 (naming the scope for a
key), no credentials 401. Agent tokens are refused on the REST API; API keys act for their
owner with the roles their scopes allow (issue 24: a provider's key without the provider
scope is a customer's).

Each route declares its access when it is registered, and `gpunexd routes` lists the
routes with it: the route table check compares that list with MATRIX and ACCESS, so a
route cannot be added without a row here and the access it declares.

The payouts and top-ups rows (issue 15) need real earnings, payouts and a top-up: gpunexd
runs on the Solana test chain (tests/solana, node; payouts_fixture), and the tests that
read them build them with _payouts_fixture (a fake agent's rental, gpunexd's test clock
moved past the earnings hold, a monthly run).
"""

import datetime
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import uuid

import payouts_fixture as pf
from authz_expect import ALL_USERS, PRINCIPALS, everyone, only, users
import wsclient
from test_agent_channel import L4 as L4_GPU
from test_agent_channel import FakeAgent
from harness import (API, PASSWORD, PG_SKIP_REASON, PG_URL, ServerTestCase, SmtpSink,
                     approved_provider, community_application, gpunexd_binary, unique_email,
                     wait_until)

def _signup_body(ctx, who):
    return {"email": unique_email(f"signup-{who}"), "password": PASSWORD, "name": f"New {who}"}


def _login_body(ctx, who):
    return {"email": ctx["login_email"], "password": PASSWORD}


def _verify_body(ctx, who):
    # The link of the customer's sign-up: whoever holds it may open it (it is the credential).
    return {"token": ctx["verify_token"]}


def _resend_body(ctx, who):
    # Each user's own address, verified already: each reaches the check (409), nobody mails.
    return {"email": ctx.get(f"email_{who}", "nobody@example.com")}


def _gpu_model_body(ctx, who):
    return {"id": f"e2e-{uuid.uuid4().hex[:8]}", "name": "NVIDIA B200", "vram_gb": 192,
            "fp32_tflops": 80.0, "fp16_tflops": 160.0, "fp16_tensor_tflops": 2250.0,
            "tf32_tensor_tflops": 1100.0, "mem_bw_gbps": 8000.0,
            "default_price_micro": 4000000}


def _draft_body(ctx, who):
    return community_application(unique_email(f"draft-{who}"))


def _workload_body(ctx, who):
    return {"machine_id": ctx["mch_A"], "gpu_ids": [], "image": "gpunex-test/busybox:1",
            "command": ["/bin/sh", "-c", f"echo {who}"], "memory_mb": 256}


def _maintenance_window(days_ahead, who):
    start = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days_ahead)
    end = start + datetime.timedelta(hours=2)
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return {"start": start.strftime(fmt), "end": end.strftime(fmt), "category": "power",
            "reason": f"UPS battery swap, declared by {who}"}


def _maintenance_body(ctx, who):
    # Two days ahead: clear of {mnt_A} (one day ahead), so only the principal decides.
    return _maintenance_window(2, who)


# What the price rows write, so that the effects can be checked afterwards: each
# principal's PUT carries its own price, so the prices afterwards name who wrote them.
PRICE_BY_WHO = {"anon": 100001, "customer": 100002, "provA": 450000, "provB": 460000,
                "admin": 100005}
OVERRIDE_BY_WHO = {"anon": 200001, "customer": 200002, "provA": 610000, "provB": 200004,
                   "admin": 200005}


def _prices_body(ctx, who):
    # l4-24gb keeps its price: the fixture machine's GPU stays on the marketplace.
    return {"items": [{"gpu_model": "l4-24gb", "price_micro": PRICE_BY_WHO[who]}]}


def _machine_prices_body(ctx, who):
    return {"items": [{"gpu_model": "l4-24gb", "price_micro": OVERRIDE_BY_WHO[who]}]}


# What the schedule rows write, so that the effects can be checked afterwards.
MACHINE_SCHEDULE = {"kind": "schedule", "timezone": "Europe/Rome",
                    "windows": [{"days": ["mon", "tue"], "start": "08:00", "end": "20:00"}]}
PROVIDER_SCHEDULE = {"kind": "schedule", "timezone": "America/New_York",
                     "windows": [{"days": ["sat", "sun"], "start": "22:00", "end": "06:00"}]}


def _machine_schedule_body(ctx, who):
    return {"schedule": MACHINE_SCHEDULE}


def _provider_schedule_body(ctx, who):
    return {"schedule": PROVIDER_SCHEDULE}


def _rental_body(ctx, who):
    return {"offer_id": ctx["ofr_R"], "gpus": 1, "image": "gpunex-test/busybox:1",
            "command": ["/bin/sh", "-c", f"echo {who}"]}


def _job_body(ctx, who):
    return {"gpu_model": "l4-24gb", "gpus": 1, "max_price_micro": 1_000_000,
            "image": "gpunex-test/busybox:1", "command": ["/bin/sh", "-c", f"echo job {who}"]}


# What the admin's credit row adds to the customer's balance (the fixture credits
# FIXTURE_CREDIT first).
FIXTURE_CREDIT = 50_000_000
MATRIX_CREDIT = 1_000


def _credit_body(ctx, who):
    return {"user_id": ctx["usr_C"], "amount_micro": MATRIX_CREDIT,
            "reference": f"matrix credit by {who}"}


def _run_body(ctx, who):
    # The fixture's run: the same (as_of, schedule) again answers that run (201).
    return {"as_of": ctx["monthly"], "schedule": "monthly"}


def _topup_body(ctx, who):
    return {"amount_micro": TOPUP_MICRO}


TOPUP_MICRO = 5_000_000


def _edit_body(ctx, who):
    b = community_application(ctx["customer_contact"])
    b["infrastructure"]["maintenance_notes"] = f"edited by {who}"
    return b


# The API keys of the matrix: name -> (owner, scopes). Each row is tried with every key
# (key_expect says what each must get), so a route that declares less than it needs lets a
# key through and fails its row.
KEYS = {
    "customer:r": ("customer", ["read"]),
    "customer:w": ("customer", ["write"]),
    "customer:rw": ("customer", ["read", "write"]),
    "provA:r": ("provA", ["read"]),
    # The outside probe's key (issue 24): a provider's key without the provider scope.
    "provA:rw": ("provA", ["read", "write"]),
    "provA:rp": ("provA", ["read", "provider"]),
    "provA:rwp": ("provA", ["read", "write", "provider"]),
    "provB:rw": ("provB", ["read", "write"]),
    "provB:rwp": ("provB", ["read", "write", "provider"]),
    "admin:r": ("admin", ["read"]),
    "admin:rw": ("admin", ["read", "write"]),
    "admin:rwa": ("admin", ["read", "write", "admin"]),
}

# Keys whose owner reaches a resource through a role the key's scopes leave out: a
# provider's key without the provider scope acts as a customer, an admin's without the
# admin scope as a plain user, and the resource is not theirs (`keys=` of a row).
ROLE_LESS_KEYS = ("provA:r", "provA:rw", "admin:r", "admin:rw")


def not_found_for(*keys):
    return {k: 404 for k in keys}


# The matrix. Each row: route (as registered), concrete path ({placeholders} filled from
# the fixture), body (None, a value, or a function (ctx, principal) -> value), expected
# status per principal, and options. Within a row the refused principals go first, so a
# later success also proves that the refusals changed nothing (a revoked key could not
# be revoked again, a submitted application not submitted again). Each row is tried with
# the API keys of KEYS too (key_expect); `keys` gives what a key gets where its owner's
# session would succeed through a role the key's scopes leave out, and `once` marks the
# rows whose success happens once: there only the keys refused for a scope (or answered by
# `keys`) are tried, and the row's success is left to the sessions.
# A user without the role a route needs (ACCESS) is refused before anything is looked up
# (403: the customer on the providers' machines).
MATRIX = [
    # --- outside /api/v1
    dict(route=("GET", "/healthz"), path="/healthz", expect=everyone(200)),
    # --- the agents' own routes, served before the router (main.cc kServerRoutes): an
    # agent token only; a user's session or key is no agent's.
    dict(route=("GET", "/api/v1/agent/connect"), path=f"{API}/agent/connect", ws=True,
         expect=everyone(401)),
    dict(route=("GET", "/api/v1/agent/data"), path=f"{API}/agent/data?machine_id={{mch_A}}",
         ws=True, expect=everyone(401)),
    dict(route=("GET", "/api/v1/agent/bench/download"),
         path=f"{API}/agent/bench/download?bytes=1024", expect=everyone(401)),
    dict(route=("POST", "/api/v1/agent/bench/upload"), path=f"{API}/agent/bench/upload",
         body="bytes", expect=everyone(401)),
    dict(route=("GET", "/readyz"), path="/readyz", expect=everyone(200)),
    dict(route=("GET", "/metrics"), path="/metrics", expect=everyone(200)),
    dict(route=("GET", "/api/v1/openapi.json"), path=f"{API}/openapi.json",
         expect=everyone(200)),
    # --- accounts
    dict(route=("POST", "/api/v1/auth/signup"), path=f"{API}/auth/signup", body=_signup_body,
         expect=everyone(201)),
    dict(route=("POST", "/api/v1/auth/login"), path=f"{API}/auth/login", body=_login_body,
         expect=everyone(200)),
    dict(route=("POST", "/api/v1/auth/logout"), path=f"{API}/auth/logout", expect=users(204),
         fresh_session=True),
    dict(route=("GET", "/api/v1/me"), path=f"{API}/me", expect=users(200)),
    dict(route=("POST", "/api/v1/api-keys"), path=f"{API}/api-keys", body={"name": "matrix"},
         expect=users(201)),
    dict(route=("GET", "/api/v1/api-keys"), path=f"{API}/api-keys", expect=users(200)),
    dict(route=("DELETE", "/api/v1/api-keys/{id}"), path=f"{API}/api-keys/{{key_A}}",
         expect=only(["provA"], 204, 404), once=True),
    # A wrong current password: each user reaches the check, nobody's password changes.
    dict(route=("POST", "/api/v1/me/password"), path=f"{API}/me/password",
         body={"current_password": "not-the-password", "new_password": "another-password-1"},
         expect=users(422)),
    dict(route=("GET", "/api/v1/me/sessions"), path=f"{API}/me/sessions", expect=users(200)),
    dict(route=("DELETE", "/api/v1/me/sessions/{id}"), path=f"{API}/me/sessions/{{ses_A}}",
         expect=only(["provA"], 204, 404), once=True),
    # Each user's other sessions end; the one making the request stays (a key would end
    # them all: once).
    dict(route=("POST", "/api/v1/me/sessions/revoke-others"),
         path=f"{API}/me/sessions/revoke-others", expect=users(200), once=True),
    dict(route=("POST", "/api/v1/auth/verify-email"), path=f"{API}/auth/verify-email",
         body=_verify_body, expect=everyone(200)),
    dict(route=("GET", "/api/v1/me/emails"), path=f"{API}/me/emails", expect=users(200)),
    dict(route=("POST", "/api/v1/me/emails/resend"), path=f"{API}/me/emails/resend",
         body=_resend_body, expect=users(409)),
    # --- provider applications
    dict(route=("POST", "/api/v1/provider-applications"), path=f"{API}/provider-applications",
         body=_draft_body,
         # customer has a draft, A and B are approved: one open application per user.
         expect=only(["admin"], 201, 409), once=True),
    dict(route=("GET", "/api/v1/provider-applications"), path=f"{API}/provider-applications",
         expect=users(200)),
    dict(route=("GET", "/api/v1/provider-applications/{id}"),
         path=f"{API}/provider-applications/{{app_A}}", expect=only(["provA", "admin"], 200, 404),
         keys=not_found_for("admin:r", "admin:rw")),
    dict(route=("GET", "/api/v1/provider-applications/{id}"),
         path=f"{API}/provider-applications/{{app_C}}",
         expect=only(["customer", "admin"], 200, 404), keys=not_found_for("admin:r", "admin:rw")),
    dict(route=("PUT", "/api/v1/provider-applications/{id}"),
         path=f"{API}/provider-applications/{{app_A}}", body=_edit_body,
         expect=only([], 0, 404, provA=409, admin=403), keys=not_found_for("admin:rw")),
    dict(route=("PUT", "/api/v1/provider-applications/{id}"),
         path=f"{API}/provider-applications/{{app_C}}", body=_edit_body,
         expect=only(["customer"], 200, 404, admin=403), keys=not_found_for("admin:rw"),
         once=True),
    dict(route=("POST", "/api/v1/provider-applications/{id}/submit"),
         path=f"{API}/provider-applications/{{app_A}}/submit",
         expect=only([], 0, 404, provA=409, admin=403), keys=not_found_for("admin:rw")),
    dict(route=("POST", "/api/v1/provider-applications/{id}/submit"),
         path=f"{API}/provider-applications/{{app_C}}/submit",
         expect=only(["customer"], 200, 404, admin=403), keys=not_found_for("admin:rw"),
         once=True),
    dict(route=("POST", "/api/v1/provider-applications/{id}/decision"),
         path=f"{API}/provider-applications/{{app_C}}/decision",
         body={"decision": "request_info", "message": "Which UPS?"},
         expect=only(["admin"], 200, 403), once=True),
    # --- providers and agent tokens
    dict(route=("GET", "/api/v1/providers/me"), path=f"{API}/providers/me",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("POST", "/api/v1/providers/me/agent-tokens"),
         path=f"{API}/providers/me/agent-tokens", body={"name": "matrix"},
         expect=only(["provA", "provB"], 201, 403)),
    dict(route=("GET", "/api/v1/providers/me/agent-tokens"),
         path=f"{API}/providers/me/agent-tokens", expect=only(["provA", "provB"], 200, 403)),
    dict(route=("DELETE", "/api/v1/providers/me/agent-tokens/{id}"),
         path=f"{API}/providers/me/agent-tokens/{{tok_A_del}}",
         expect=only(["provA"], 204, 403, provB=404), once=True),
    dict(route=("POST", "/api/v1/providers/me/agent-tokens/{id}/rotate"),
         path=f"{API}/providers/me/agent-tokens/{{tok_A_rot}}/rotate",
         expect=only(["provA"], 201, 403, provB=404)),
    # --- catalog
    dict(route=("GET", "/api/v1/gpu-models"), path=f"{API}/gpu-models", expect=everyone(200)),
    dict(route=("POST", "/api/v1/gpu-models"), path=f"{API}/gpu-models", body=_gpu_model_body,
         expect=only(["admin"], 201, 403)),
    # --- notifications
    dict(route=("GET", "/api/v1/notifications"), path=f"{API}/notifications",
         expect=users(200)),
    dict(route=("POST", "/api/v1/notifications/{id}/read"),
         path=f"{API}/notifications/{{ntf_A}}/read", expect=only(["provA"], 204, 404)),
    dict(route=("POST", "/api/v1/notifications/read-all"), path=f"{API}/notifications/read-all",
         expect=users(200)),
    # --- the agent installer, machines and workloads
    dict(route=("GET", "/agent/install.sh"), path="/agent/install.sh", expect=everyone(200)),
    dict(route=("GET", "/api/v1/machines"), path=f"{API}/machines",
         expect=only(["provA", "provB", "admin"], 200, 403)),
    # An admin lists one provider's machines; a provider may name only itself.
    dict(route=("GET", "/api/v1/machines"), path=f"{API}/machines?provider_id={{usr_A}}&status=online",
         expect=only(["provA", "admin"], 200, 403, provB=422)),
    dict(route=("GET", "/api/v1/machines/{id}"), path=f"{API}/machines/{{mch_A}}",
         expect=only(["provA", "admin"], 200, 404, customer=403)),
    # The provider names the machine; an admin may read it but not rename it.
    dict(route=("PATCH", "/api/v1/machines/{id}"), path=f"{API}/machines/{{mch_A}}",
         body={"name": "rack-A"}, expect=only(["provA"], 200, 404, admin=403, customer=403)),
    dict(route=("PATCH", "/api/v1/machines/{id}/gpus/{gpu_id}"),
         path=f"{API}/machines/{{mch_A}}/gpus/{{gpu_A}}", body={"enabled": True},
         expect=only(["provA"], 200, 404, admin=403, customer=403)),
    dict(route=("GET", "/api/v1/machines/{id}/benchmarks"),
         path=f"{API}/machines/{{mch_A}}/benchmarks",
         expect=only(["provA", "admin"], 200, 404, customer=403)),
    # Benchmarks are off in this fixture: the owner and admins are told so (409).
    dict(route=("POST", "/api/v1/machines/{id}/benchmarks"),
         path=f"{API}/machines/{{mch_A}}/benchmarks",
         body={}, expect=only(["provA", "admin"], 409, 404, customer=403)),
    # Someone else's machine is named in the body: a field error (422), as for any
    # machine id one may not use.
    dict(route=("POST", "/api/v1/workloads"), path=f"{API}/workloads", body=_workload_body,
         expect=only(["provA", "admin"], 201, 422, customer=403)),
    dict(route=("GET", "/api/v1/workloads"), path=f"{API}/workloads", expect=users(200)),
    # A workload is shown to its machine's provider acting as one and to admins (and to
    # the customer of a rental's workload).
    dict(route=("GET", "/api/v1/workloads/{id}"), path=f"{API}/workloads/{{wl_A}}",
         expect=only(["provA", "admin"], 200, 404), keys=not_found_for(*ROLE_LESS_KEYS)),
    dict(route=("GET", "/api/v1/workloads/{id}/logs"), path=f"{API}/workloads/{{wl_A}}/logs",
         expect=only(["provA", "admin"], 200, 404), keys=not_found_for(*ROLE_LESS_KEYS)),
    dict(route=("POST", "/api/v1/workloads/{id}/stop"), path=f"{API}/workloads/{{wl_A}}/stop",
         expect=only(["provA", "admin"], 202, 404, customer=403)),
    # --- rentals, balances and the ledger (issue 14), on the fixture's second machine of
    # A (six L4s), before the price and schedule rows below change its offer (a rental at
    # a price that rose, or outside the schedule, is refused). A rental is its customer's, its
    # machine's provider's (read only) and the admins'; anybody else is told there is no
    # such rental. Renting needs a balance: only the customer has one (provider A's own
    # offer is refused by name, 422, as the others' empty balances are).
    dict(route=("POST", "/api/v1/rentals"), path=f"{API}/rentals", body=_rental_body,
         expect=only(["customer"], 201, 422), once=True),
    dict(route=("GET", "/api/v1/rentals"), path=f"{API}/rentals", expect=users(200)),
    dict(route=("GET", "/api/v1/rentals"), path=f"{API}/rentals?state=active&limit=1",
         expect=users(200)),
    dict(route=("GET", "/api/v1/rentals/{id}"), path=f"{API}/rentals/{{rnt_C1}}",
         expect=only(["customer", "provA", "admin"], 200, 404),
         keys=not_found_for(*ROLE_LESS_KEYS)),
    dict(route=("GET", "/api/v1/rentals/{id}/logs"), path=f"{API}/rentals/{{rnt_C1}}/logs",
         expect=only(["customer", "provA", "admin"], 200, 404),
         keys=not_found_for(*ROLE_LESS_KEYS)),
    # The customer stops its rental; its provider may not (403); an admin stops any (as
    # the platform). The second stop of each finds it ending (409).
    dict(route=("POST", "/api/v1/rentals/{id}/stop"), path=f"{API}/rentals/{{rnt_C1}}/stop",
         expect=only(["customer"], 200, 404, provA=403, admin=409),
         order=("anon", "provA", "provB", "customer", "admin"),
         keys=not_found_for("provA:rw", "admin:rw"), once=True),
    dict(route=("POST", "/api/v1/rentals/{id}/stop"), path=f"{API}/rentals/{{rnt_C2}}/stop",
         expect=only(["admin"], 200, 404, provA=403, customer=409),
         order=("anon", "provA", "provB", "admin", "customer"),
         keys=not_found_for("provA:rw", "admin:rw"), once=True),
    dict(route=("GET", "/api/v1/providers/me/rentals"), path=f"{API}/providers/me/rentals",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/me/balance"), path=f"{API}/me/balance", expect=users(200)),
    dict(route=("GET", "/api/v1/me/statement"), path=f"{API}/me/statement", expect=users(200)),
    dict(route=("GET", "/api/v1/me/statement"), path=f"{API}/me/statement?format=csv",
         expect=users(200)),
    dict(route=("POST", "/api/v1/admin/credits"), path=f"{API}/admin/credits",
         body=_credit_body, expect=only(["admin"], 201, 403), once=True),
    dict(route=("GET", "/api/v1/admin/ledger/check"), path=f"{API}/admin/ledger/check",
         expect=only(["admin"], 200, 403)),
    dict(route=("GET", "/api/v1/admin/users"), path=f"{API}/admin/users?q=example",
         expect=only(["admin"], 200, 403)),
    dict(route=("GET", "/api/v1/admin/users/{id}"), path=f"{API}/admin/users/{{usr_C}}",
         expect=only(["admin"], 200, 403)),
    dict(route=("GET", "/api/v1/admin/providers"), path=f"{API}/admin/providers",
         expect=only(["admin"], 200, 403)),
    # An admin's filters of the rentals list: anybody else is told it is an operator's.
    dict(route=("GET", "/api/v1/rentals"), path=f"{API}/rentals?customer_id={{usr_C}}",
         expect=only(["admin"], 200, 422), keys={"admin:r": 422, "admin:rw": 422}),
    # Refunds: the fixture's rentals never ran (charged nothing), so the admin's refund
    # reaches the amount's check (422) after the stops above; nobody else gets that far.
    dict(route=("POST", "/api/v1/admin/rentals/{id}/refund"),
         path=f"{API}/admin/rentals/{{rnt_C1}}/refund",
         body={"amount_micro": 1, "reason": "matrix"}, expect=only(["admin"], 422, 403)),
    # Jobs: the customer's own (admins read every job, only the customer cancels);
    # submitting needs a balance.
    dict(route=("POST", "/api/v1/jobs"), path=f"{API}/jobs", body=_job_body,
         expect=only(["customer"], 201, 422), once=True),
    dict(route=("GET", "/api/v1/jobs"), path=f"{API}/jobs", expect=users(200)),
    dict(route=("GET", "/api/v1/jobs/{id}"), path=f"{API}/jobs/{{job_C}}",
         expect=only(["customer", "admin"], 200, 404), keys=not_found_for("admin:r", "admin:rw")),
    dict(route=("POST", "/api/v1/jobs/{id}/cancel"), path=f"{API}/jobs/{{job_C}}/cancel",
         expect=only(["customer"], 200, 404, admin=403), keys=not_found_for("admin:rw"),
         once=True),
    # --- the marketplace (issue 13). Search, one offer, the recommendation and the
    # market summary are public; a provider's own offers and prices are the provider's.
    # Before the schedule rows below: a schedule that excludes now takes the fixture
    # machine's offer off the marketplace.
    dict(route=("GET", "/api/v1/offers"), path=f"{API}/offers", expect=everyone(200)),
    dict(route=("GET", "/api/v1/offers"), path=f"{API}/offers?gpu_model=l4-24gb&sort=price",
         expect=everyone(200)),
    dict(route=("GET", "/api/v1/offers/{id}"), path=f"{API}/offers/{{ofr_A}}",
         expect=everyone(200)),
    dict(route=("GET", "/api/v1/offers/{id}"), path=f"{API}/offers/ofr_00000000000000000000",
         expect=everyone(404)),
    dict(route=("GET", "/api/v1/market/recommendation"),
         path=f"{API}/market/recommendation?gpu_model=l4-24gb", expect=everyone(200)),
    dict(route=("GET", "/api/v1/market/stats"), path=f"{API}/market/stats",
         expect=everyone(200)),
    dict(route=("GET", "/api/v1/providers/me/offers"), path=f"{API}/providers/me/offers",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/prices"), path=f"{API}/providers/me/prices",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("PUT", "/api/v1/providers/me/prices"), path=f"{API}/providers/me/prices",
         body=_prices_body, expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/prices/history"),
         path=f"{API}/providers/me/prices/history", expect=only(["provA", "provB"], 200, 403)),
    # A machine's prices are like the machine: the owner and admins read, only the owner
    # writes (admins 403), any other provider is told there is no such machine. The
    # owner's override is written once (its history is checked below).
    dict(route=("GET", "/api/v1/machines/{id}/prices"), path=f"{API}/machines/{{mch_A}}/prices",
         expect=only(["provA", "admin"], 200, 404, customer=403)),
    dict(route=("PUT", "/api/v1/machines/{id}/prices"), path=f"{API}/machines/{{mch_A}}/prices",
         body=_machine_prices_body, expect=only(["provA"], 200, 404, admin=403, customer=403),
         once=True),
    # --- availability schedules, maintenance windows, reliability (issue 12). Like the
    # machine itself: the owner and admins read, only the owner writes (admins 403), any
    # other provider is told there is no such machine.
    dict(route=("GET", "/api/v1/machines/{id}/availability"),
         path=f"{API}/machines/{{mch_A}}/availability",
         expect=only(["provA", "admin"], 200, 404, customer=403)),
    dict(route=("PUT", "/api/v1/machines/{id}/availability"),
         path=f"{API}/machines/{{mch_A}}/availability", body=_machine_schedule_body,
         expect=only(["provA"], 200, 404, admin=403, customer=403)),
    dict(route=("PUT", "/api/v1/providers/me/availability"),
         path=f"{API}/providers/me/availability", body=_provider_schedule_body,
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/machines/{id}/maintenance"),
         path=f"{API}/machines/{{mch_A}}/maintenance",
         expect=only(["provA", "admin"], 200, 404, customer=403)),
    dict(route=("POST", "/api/v1/machines/{id}/maintenance"),
         path=f"{API}/machines/{{mch_A}}/maintenance", body=_maintenance_body,
         expect=only(["provA"], 201, 404, admin=403, customer=403), once=True),
    dict(route=("DELETE", "/api/v1/machines/{id}/maintenance/{mid}"),
         path=f"{API}/machines/{{mch_A}}/maintenance/{{mnt_A}}",
         expect=only(["provA"], 200, 404, admin=403, customer=403), once=True),
    dict(route=("GET", "/api/v1/machines/{id}/reliability"),
         path=f"{API}/machines/{{mch_A}}/reliability",
         expect=only(["provA", "admin"], 200, 404, customer=403)),
    dict(route=("GET", "/api/v1/providers/me/reliability"),
         path=f"{API}/providers/me/reliability", expect=only(["provA", "provB"], 200, 403)),
    # --- earnings, payout settings and payouts (issue 15): a provider's own (403 for users
    # who are not providers, admins included: admins read payouts through the runs);
    # another provider's payout is not found.
    dict(route=("GET", "/api/v1/providers/me/payout-settings"),
         path=f"{API}/providers/me/payout-settings", expect=only(["provA", "provB"], 200, 403)),
    # The same schedule, no method: nothing to change, no password needed.
    dict(route=("PUT", "/api/v1/providers/me/payout-settings"),
         path=f"{API}/providers/me/payout-settings", body={"schedule": "monthly"},
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/earnings"), path=f"{API}/providers/me/earnings",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/earnings"),
         path=f"{API}/providers/me/earnings?group=gpu&format=csv",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/statements/{month}"),
         path=f"{API}/providers/me/statements/{{month}}",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/statements/{month}"),
         path=f"{API}/providers/me/statements/{{month}}?format=csv",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/payouts"), path=f"{API}/providers/me/payouts",
         expect=only(["provA", "provB"], 200, 403)),
    dict(route=("GET", "/api/v1/providers/me/payouts/{id}"),
         path=f"{API}/providers/me/payouts/{{po_A}}",
         expect=only(["provA"], 200, 404, customer=403, admin=403)),
    dict(route=("GET", "/api/v1/providers/me/payouts/{id}"),
         path=f"{API}/providers/me/payouts/{{po_A}}?format=csv",
         expect=only(["provA"], 200, 404, customer=403, admin=403)),
    dict(route=("GET", "/api/v1/providers/me/payouts/{id}"),
         path=f"{API}/providers/me/payouts/{{po_B}}",
         expect=only(["provB"], 200, 404, customer=403, admin=403)),
    # --- payout runs: admins only (a provider may not even read them).
    dict(route=("POST", "/api/v1/admin/payout-runs"), path=f"{API}/admin/payout-runs",
         body=_run_body, expect=only(["admin"], 201, 403)),
    dict(route=("GET", "/api/v1/admin/payout-runs"), path=f"{API}/admin/payout-runs",
         expect=only(["admin"], 200, 403)),
    dict(route=("GET", "/api/v1/admin/payout-runs/{id}"),
         path=f"{API}/admin/payout-runs/{{run_M}}", expect=only(["admin"], 200, 403)),
    dict(route=("GET", "/api/v1/admin/payout-runs/{id}/files/{name}"),
         path=f"{API}/admin/payout-runs/{{run_M}}/files/{{file_M}}",
         expect=only(["admin"], 200, 403)),
    dict(route=("POST", "/api/v1/admin/payout-runs/{id}/files/{name}/sent"),
         path=f"{API}/admin/payout-runs/{{run_M}}/files/{{file_M}}/sent",
         expect=only(["admin"], 200, 403), once=True),
    # B's line of the file marked sent: the bank returned it (the payout's own provider may
    # not say so either), then the admin retries it.
    dict(route=("POST", "/api/v1/admin/payouts/{id}/bank-result"),
         path=f"{API}/admin/payouts/{{po_B}}/bank-result",
         body={"state": "failed", "reason": "account closed (AC04)"},
         expect=only(["admin"], 200, 403), once=True),
    dict(route=("POST", "/api/v1/admin/payouts/{id}/retry"),
         path=f"{API}/admin/payouts/{{po_B}}/retry", expect=only(["admin"], 200, 403),
         once=True),
    dict(route=("GET", "/api/v1/admin/payout-wallet"), path=f"{API}/admin/payout-wallet",
         expect=only(["admin"], 200, 403)),
    # --- top-ups (issue 15): every user tops up their own balance; a top-up is its
    # customer's alone (admins included: they credit by hand, they do not read top-ups).
    dict(route=("POST", "/api/v1/topups"), path=f"{API}/topups", body=_topup_body,
         expect=users(201), once=True),
    dict(route=("GET", "/api/v1/topups"), path=f"{API}/topups", expect=users(200)),
    dict(route=("GET", "/api/v1/topups/{id}"), path=f"{API}/topups/{{tu_C}}",
         expect=only(["customer"], 200, 404)),
    dict(route=("GET", "/api/v1/topups/{id}/qr.svg"), path=f"{API}/topups/{{tu_C}}/qr.svg",
         expect=only(["customer"], 200, 404)),
]

# The access each route declares when it is registered (`gpunexd routes`, api.h's
# `access`): who gets past gpunexd's guard before any handler runs. Every access but
# "public" authenticates; an API key then needs the read scope for GET and the write scope
# for other methods, and "provider", "admin" and "provider_or_admin" need the role (a key:
# the scope), "session" and "provider_session" a logged-in session (no key).
ACCESS = {
    "public": [
        ("GET", "/healthz"),
        ("GET", "/readyz"),
        ("GET", "/metrics"),
        ("GET", "/api/v1/openapi.json"),
        ("POST", "/api/v1/auth/signup"),
        ("POST", "/api/v1/auth/login"),
        ("POST", "/api/v1/auth/verify-email"),
        ("GET", "/api/v1/gpu-models"),
        ("GET", "/agent/install.sh"),
    ],
    "public_or_user": [
        ("GET", "/api/v1/offers"),
        ("GET", "/api/v1/offers/{id}"),
        ("GET", "/api/v1/market/recommendation"),
        ("GET", "/api/v1/market/stats"),
    ],
    "user": [
        ("POST", "/api/v1/auth/logout"),
        ("GET", "/api/v1/me"),
        ("GET", "/api/v1/api-keys"),
        ("DELETE", "/api/v1/api-keys/{id}"),
        ("GET", "/api/v1/me/sessions"),
        ("DELETE", "/api/v1/me/sessions/{id}"),
        ("POST", "/api/v1/me/sessions/revoke-others"),
        ("GET", "/api/v1/me/emails"),
        ("POST", "/api/v1/me/emails/resend"),
        ("POST", "/api/v1/provider-applications"),
        ("GET", "/api/v1/provider-applications"),
        ("GET", "/api/v1/provider-applications/{id}"),
        ("PUT", "/api/v1/provider-applications/{id}"),
        ("POST", "/api/v1/provider-applications/{id}/submit"),
        ("GET", "/api/v1/notifications"),
        ("POST", "/api/v1/notifications/{id}/read"),
        ("POST", "/api/v1/notifications/read-all"),
        ("GET", "/api/v1/workloads"),
        ("GET", "/api/v1/workloads/{id}"),
        ("GET", "/api/v1/workloads/{id}/logs"),
        ("POST", "/api/v1/rentals"),
        ("GET", "/api/v1/rentals"),
        ("GET", "/api/v1/rentals/{id}"),
        ("GET", "/api/v1/rentals/{id}/logs"),
        ("POST", "/api/v1/rentals/{id}/stop"),
        ("GET", "/api/v1/me/balance"),
        ("GET", "/api/v1/me/statement"),
        ("POST", "/api/v1/jobs"),
        ("GET", "/api/v1/jobs"),
        ("GET", "/api/v1/jobs/{id}"),
        ("POST", "/api/v1/jobs/{id}/cancel"),
        ("POST", "/api/v1/topups"),
        ("GET", "/api/v1/topups"),
        ("GET", "/api/v1/topups/{id}"),
        ("GET", "/api/v1/topups/{id}/qr.svg"),
    ],
    "provider": [
        ("GET", "/api/v1/providers/me"),
        ("GET", "/api/v1/providers/me/agent-tokens"),
        ("DELETE", "/api/v1/providers/me/agent-tokens/{id}"),
        ("PATCH", "/api/v1/machines/{id}"),
        ("PATCH", "/api/v1/machines/{id}/gpus/{gpu_id}"),
        ("GET", "/api/v1/providers/me/rentals"),
        ("GET", "/api/v1/providers/me/offers"),
        ("GET", "/api/v1/providers/me/prices"),
        ("PUT", "/api/v1/providers/me/prices"),
        ("GET", "/api/v1/providers/me/prices/history"),
        ("PUT", "/api/v1/machines/{id}/prices"),
        ("PUT", "/api/v1/machines/{id}/availability"),
        ("PUT", "/api/v1/providers/me/availability"),
        ("POST", "/api/v1/machines/{id}/maintenance"),
        ("DELETE", "/api/v1/machines/{id}/maintenance/{mid}"),
        ("GET", "/api/v1/providers/me/reliability"),
        ("GET", "/api/v1/providers/me/payout-settings"),
        ("PUT", "/api/v1/providers/me/payout-settings"),
        ("GET", "/api/v1/providers/me/earnings"),
        ("GET", "/api/v1/providers/me/statements/{month}"),
        ("GET", "/api/v1/providers/me/payouts"),
        ("GET", "/api/v1/providers/me/payouts/{id}"),
    ],
    "provider_or_admin": [
        ("GET", "/api/v1/machines"),
        ("GET", "/api/v1/machines/{id}"),
        ("GET", "/api/v1/machines/{id}/benchmarks"),
        ("POST", "/api/v1/machines/{id}/benchmarks"),
        ("POST", "/api/v1/workloads"),
        ("POST", "/api/v1/workloads/{id}/stop"),
        ("GET", "/api/v1/machines/{id}/prices"),
        ("GET", "/api/v1/machines/{id}/availability"),
        ("GET", "/api/v1/machines/{id}/maintenance"),
        ("GET", "/api/v1/machines/{id}/reliability"),
    ],
    "admin": [
        ("POST", "/api/v1/provider-applications/{id}/decision"),
        ("POST", "/api/v1/gpu-models"),
        ("POST", "/api/v1/admin/credits"),
        ("GET", "/api/v1/admin/users"),
        ("GET", "/api/v1/admin/users/{id}"),
        ("GET", "/api/v1/admin/providers"),
        ("POST", "/api/v1/admin/rentals/{id}/refund"),
        ("GET", "/api/v1/admin/ledger/check"),
        ("POST", "/api/v1/admin/payout-runs"),
        ("GET", "/api/v1/admin/payout-runs"),
        ("GET", "/api/v1/admin/payout-runs/{id}"),
        ("GET", "/api/v1/admin/payout-runs/{id}/files/{name}"),
        ("POST", "/api/v1/admin/payout-runs/{id}/files/{name}/sent"),
        ("POST", "/api/v1/admin/payouts/{id}/bank-result"),
        ("POST", "/api/v1/admin/payouts/{id}/retry"),
        ("GET", "/api/v1/admin/payout-wallet"),
    ],
    "session": [
        ("POST", "/api/v1/api-keys"),
        ("POST", "/api/v1/me/password"),
    ],
    # An agent token (api::AuthenticateAgentRequest), never a user's credentials.
    "agent": [
        ("GET", "/api/v1/agent/connect"),
        ("GET", "/api/v1/agent/data"),
        ("GET", "/api/v1/agent/bench/download"),
        ("POST", "/api/v1/agent/bench/upload"),
    ],
    "provider_session": [
        ("POST", "/api/v1/providers/me/agent-tokens"),
        ("POST", "/api/v1/providers/me/agent-tokens/{id}/rotate"),
    ],
}


def _module_rows():
    """The rows of the routes each module folder keeps beside them
    (src/platform/<folder>/authz_rows.py: MATRIX, ACCESS, and optionally
    fixture(srv, who) -> the ids its rows' paths name)."""
    base = os.path.join(os.environ.get("GPUNEX_SOURCE_DIR", "../.."), "src", "platform")
    modules = []
    for path in sorted(glob.glob(os.path.join(base, "*", "authz_rows.py"))):
        name = "authz_rows_" + os.path.basename(os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    return modules


MODULE_ROWS = _module_rows()
for _rows in MODULE_ROWS:
    MATRIX.extend(_rows.MATRIX)
    for _access, _routes in _rows.ACCESS.items():
        ACCESS.setdefault(_access, []).extend(_routes)

ROUTE_ACCESS = {route: access for access, routes in ACCESS.items() for route in routes}

def key_expect(row, key):
    """(status, words, why) for `key` on `row`: 403 naming the scope when the route's
    access needs one the key lacks (`words`: what the message must say), else the row's
    `keys` override, else what the key's owner gets with a session. `why` is "scope",
    "override" or "owner"."""
    owner, scopes = KEYS[key]
    method, _ = row["route"]
    access = ROUTE_ACCESS.get(tuple(row["route"]), "user")
    # An agent's or an instance's route refuses a key as it refuses its owner.
    if access in ("public", "agent", "instance"):
        return row["expect"][owner], [], "owner"
    # What flows over a WebSocket can change things: its key needs the write scope.
    needed = "read" if method in ("GET", "HEAD") and not row.get("ws") else "write"
    if needed not in scopes:
        return 403, [f"{needed} scope"], "scope"
    if access in ("provider", "provider_session") and "provider" not in scopes:
        return 403, ["provider scope"], "scope"
    if access == "admin" and "admin" not in scopes:
        return 403, ["admin scope"], "scope"
    if access == "provider_or_admin" and not {"provider", "admin"} & set(scopes):
        return 403, ["provider scope", "admin scope"], "scope"
    if access in ("session", "provider_session"):
        return 403, ["API key cannot"], "scope"
    if key in row.get("keys", {}):
        return row["keys"][key], [], "override"
    return row["expect"][owner], [], "owner"


def row_headers(row):
    """A WebSocket row's request asks for the upgrade (a plain GET is answered 426 before
    anyone is authenticated)."""
    if not row.get("ws"):
        return None
    return {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


JOBS_ROUTE = ("POST", "/api/v1/jobs")

_SERVER_ROUTES = {}


def server_routes():
    """{(method, pattern): access} of every route gpunexd registers (`gpunexd routes`),
    less the dashboard's catch-alls (every segment a {pN} parameter), which must all be
    public."""
    if not _SERVER_ROUTES:
        out = subprocess.run([gpunexd_binary(), "routes"], check=True, capture_output=True,
                             text=True, timeout=60).stdout
        for r in json.loads(out)["routes"]:
            route = (r["method"], r["pattern"])
            segments = r["pattern"].strip("/").split("/")
            if all(seg == "" or (seg.startswith("{p") and seg.endswith("}"))
                   for seg in segments):
                if r["access"] != "public":
                    raise AssertionError(f"a dashboard route that is not public: {r}")
                continue
            if route in _SERVER_ROUTES:
                raise AssertionError(f"listed twice: {r}")
            _SERVER_ROUTES[route] = r["access"]
    return dict(_SERVER_ROUTES)


def missing_from_matrix(routes, matrix=MATRIX):
    covered = {tuple(row["route"]) for row in matrix}
    return sorted(set(routes) - covered)


def stale_in_matrix(routes, matrix=MATRIX):
    covered = {tuple(row["route"]) for row in matrix}
    return sorted(covered - set(routes))


def access_mismatches(routes, table=ROUTE_ACCESS):
    """(route, declared, expected) of the routes whose declared access is not ACCESS's."""
    return sorted((route, access, table.get(route)) for route, access in routes.items()
                  if table.get(route) != access)


class RouteTableTest(unittest.TestCase):
    """Needs the gpunexd binary, not a server."""

    def test_every_route_is_in_the_matrix_with_its_access(self):
        routes = server_routes()
        self.assertGreaterEqual(len(routes), 90, f"gpunexd listed too few routes: {routes}")
        self.assertEqual(missing_from_matrix(routes), [],
                         "routes without a row in test_authz.MATRIX")
        self.assertEqual(stale_in_matrix(routes), [],
                         "MATRIX rows for routes that are not registered")
        self.assertEqual(access_mismatches(routes), [],
                         "routes that declare another access than test_authz.ACCESS says")
        self.assertEqual(sorted(set(ROUTE_ACCESS) - set(routes)), [],
                         "ACCESS names routes that are not registered")

    def test_check_fails_for_a_new_route(self):
        new = ("DELETE", "/api/v1/providers/me")
        routes = server_routes() | {new: "provider"}
        self.assertEqual(missing_from_matrix(routes), [new])
        self.assertEqual(access_mismatches(routes), [(new, "provider", None)])
        # A route that declares less than the matrix says is named too.
        machine = ("PATCH", "/api/v1/machines/{id}")
        routes = server_routes() | {machine: "user"}
        self.assertEqual(access_mismatches(routes), [(machine, "user", "provider")])

    def test_matrix_rows_are_complete(self):
        listed = [route for routes in ACCESS.values() for route in routes]
        self.assertEqual(len(listed), len(set(listed)), "a route in ACCESS twice")
        self.assertEqual(sorted({tuple(row["route"]) for row in MATRIX}), sorted(listed),
                         "MATRIX and ACCESS name the same routes")
        for row in MATRIX:
            self.assertEqual(set(row["expect"]), set(PRINCIPALS), row["route"])
            if "order" in row:
                self.assertEqual(sorted(row["order"]), sorted(PRINCIPALS), row["route"])
            self.assertLessEqual(set(row.get("keys", {})), set(KEYS), row["route"])
            for p, s in row["expect"].items():
                self.assertIn(s, (200, 201, 202, 204, 401, 403, 404, 409, 410, 422),
                              (row["route"], p))

    def test_keys_are_refused_by_the_scopes_they_lack(self):
        machine = next(r for r in MATRIX if r["route"] == ("PATCH", "/api/v1/machines/{id}"))
        self.assertEqual(key_expect(machine, "provA:rw"), (403, ["provider scope"], "scope"))
        self.assertEqual(key_expect(machine, "provA:rp"), (403, ["write scope"], "scope"))
        self.assertEqual(key_expect(machine, "provA:rwp"), (200, [], "owner"))
        me = next(r for r in MATRIX if r["route"] == ("GET", "/api/v1/me"))
        self.assertEqual(key_expect(me, "customer:w"), (403, ["read scope"], "scope"))
        self.assertEqual(key_expect(me, "customer:r")[0], 200)


# The Solana test chain (tests/solana) of the module, started by the first test that needs
# it: gpunexd offers Solana payouts and top-ups only with an RPC and a key.
FRONT = {"front": None}


def solana_front():
    if FRONT["front"] is None:
        if not shutil.which(os.environ.get("GPUNEX_NODE", "node")):
            raise unittest.SkipTest("node is not installed (the Solana test chain needs it)")
        from solana_front import SolanaFront
        FRONT["front"] = SolanaFront().start()
    return FRONT["front"]


def tearDownModule():
    if FRONT["front"] is not None:
        FRONT["front"].stop()
        FRONT["front"] = None


PAYER_CREDIT = 1000 * pf.USDC


class AuthzMixin:
    ROOT_TOML = "allow_emulated_gpus = true"

    def setUp(self):
        # ServerTestCase.setUp, with a gpunexd on the Solana test chain (a platform wallet
        # of its own) whose clock the payouts fixture moves past the earnings hold.
        if self.BACKEND == "postgresql" and not PG_URL:
            self.skipTest(PG_SKIP_REASON)
        self.front = solana_front()
        keydir = tempfile.mkdtemp(prefix="gpunex-authz-key-")
        self.addCleanup(shutil.rmtree, keydir, True)
        _, key_path = pf.platform_keypair(self.front, keydir)
        self.sink = SmtpSink(self.SINK_DELAY_S)
        self.addCleanup(self._stop_sink)
        self.srv = pf.ClockGpunexd(self.BACKEND, self.sink.url,
                                   extra_toml=pf.payouts_toml(self.front, key_path),
                                   root_toml=self.ROOT_TOML)
        self.addCleanup(self._cleanup_server)
        self.srv.start()

    def _machine(self, agent_token):
        """Registers a machine for the token's provider through the agent channel, as a
        minimal agent would; returns (open socket, machine id)."""
        ws = wsclient.connect(self.srv.port, "/api/v1/agent/connect",
                              {"Authorization": f"Bearer {agent_token}"})
        gpu = "GPU-emu-%08x-aaaa-bbbb-cccc-1234567890ab" % (uuid.uuid4().int & 0xFFFFFFFF)
        ws.send_json({"type": "hello", "protocol": 1, "agent_version": "authz",
                      "machine_id": "", "machine_key": uuid.uuid4().hex + uuid.uuid4().hex,
                      "emulated": True,
                      "host": {"hostname": "authz", "cpu_model": "x", "os": "x", "kernel": "x",
                               "docker_version": "", "cpu_cores": 8, "ram_mb": 65536,
                               "disk_total_mb": 100000, "disk_free_mb": 50000,
                               "network_isolation": {"state": "isolated", "reached": [],
                                                     "detail": "authz"}},
                      "gpus": [{"index": 0, "uuid": gpu, "name": "NVIDIA L4 (emulated)",
                                "catalog_id": "l4-24gb", "vram_mb": 24576,
                                "driver_version": "emulated", "cuda_driver_version": "emulated",
                                "pcie_gen_max": 4, "pcie_gen_current": 4, "pcie_width_max": 16,
                                "pcie_width_current": 16, "power_limit_w": 72,
                                "emulated": True}],
                      "containers": []})
        welcome = ws.recv_json(timeout=10)
        self.assertEqual(welcome["type"], "welcome", welcome)
        return ws, welcome["machine_id"]

    def _fixture(self):
        srv = self.srv
        admin = srv.admin()
        prov_a, app_a, agent_a = approved_provider(srv, admin, "Alice", sink=self.sink)
        prov_b, app_b, agent_b = approved_provider(srv, admin, "Boris", sink=self.sink)
        self.assertTrue(agent_a and agent_b, "the approval emails carry agent tokens")
        customer = srv.user("Carla Customer")
        customer_contact = unique_email("carla")
        r = customer.c.post(f"{API}/provider-applications",
                            community_application(customer_contact))
        self.assertStatus(r, 201)
        app_c = r.body["id"]
        who = {"anon": None, "customer": customer, "provA": prov_a, "provB": prov_b,
               "admin": admin}
        r = prov_a.c.post(f"{API}/api-keys", {"name": "A's key",
                                              "scopes": ["read", "write", "provider"]})
        self.assertStatus(r, 201)
        key_a, key_a_secret = r.body["id"], r.body["key"]
        r = prov_b.c.post(f"{API}/api-keys", {"name": "B's key"})
        self.assertStatus(r, 201)
        key_b, key_b_secret = r.body["id"], r.body["key"]
        r = prov_a.c.post(f"{API}/providers/me/agent-tokens", {"name": "to delete"})
        self.assertStatus(r, 201)
        tok_a_del = r.body["id"]
        r = prov_a.c.post(f"{API}/providers/me/agent-tokens", {"name": "to rotate"})
        self.assertStatus(r, 201)
        tok_a_rot = r.body["id"]
        r = prov_a.c.get(f"{API}/notifications")
        self.assertStatus(r, 200)
        ntf_a = r.body["items"][0]["id"]
        login_user = srv.user("Lola Login")
        # A second session of provider A, for the session rows.
        second = srv.login(prov_a.email, prov_a.password).body["token"]
        ses_a = next(x["id"] for x in srv.client(second).get(f"{API}/me/sessions").body["items"]
                     if x["current"])
        self._agent_ws, mch_a = self._machine(agent_a)
        self.addCleanup(self._agent_ws.close)
        r = prov_a.c.get(f"{API}/machines/{mch_a}")
        self.assertStatus(r, 200)
        gpu_a = r.body["gpus"][0]["id"]
        r = prov_a.c.post(f"{API}/workloads", {"machine_id": mch_a, "gpu_ids": [gpu_a],
                                               "image": "gpunex-test/busybox:1",
                                               "command": ["sleep", "60"]})
        self.assertStatus(r, 201)
        wl_a = r.body["id"]
        r = prov_a.c.post(f"{API}/machines/{mch_a}/maintenance",
                          _maintenance_window(1, "fixture"))
        self.assertStatus(r, 201)
        mnt_a = r.body["id"]
        # The machine's offer (its one GPU, rented by wl_A, is still on the marketplace),
        # once the market index has it (it polls every 200 ms).
        ofr_a = wait_until(lambda: next((o["id"] for o in prov_a.c.get(
            f"{API}/providers/me/offers").body["items"] if o["machine_id"] == mch_a), None),
            5, "the fixture machine's offer")
        # Rentals: a second machine of A with six free L4s (a fake agent that never answers
        # its commands: rentals stay pending, a stop leaves them ending); the customer
        # credited and renting twice, and a job.
        rent_agent = FakeAgent(srv, agent_a, models=(L4_GPU,) * 6)
        self.addCleanup(rent_agent.cleanup)
        rent_agent.join()
        mch_r = rent_agent.machine_id
        ofr_r = wait_until(lambda: next((o["id"] for o in prov_a.c.get(
            f"{API}/providers/me/offers").body["items"] if o["machine_id"] == mch_r
            and o["gpus_available"] == 6), None), 5, "the rental machine's offer")
        r = admin.c.post(f"{API}/admin/credits", {"user_id": customer.id,
                                                   "amount_micro": FIXTURE_CREDIT,
                                                   "reference": "fixture credit"})
        self.assertStatus(r, 201)
        rentals = []
        for _ in range(2):
            r = customer.c.post(f"{API}/rentals", _rental_body({"ofr_R": ofr_r}, "fixture"))
            self.assertStatus(r, 201)
            rentals.append(r.body["id"])
        job_c = "job_not_registered"
        if JOBS_ROUTE in server_routes():
            # A model nobody offers here: the job stays queued, so that it can be cancelled.
            r = customer.c.post(f"{API}/jobs",
                                dict(_job_body({}, "fixture"), gpu_model="h100-sxm-80gb"))
            self.assertStatus(r, 201)
            job_c = r.body["id"]
        modules = {}
        for rows in MODULE_ROWS:
            if hasattr(rows, "fixture"):
                modules.update(rows.fixture(srv, who))
        return dict(srv=srv, who=who, admin=admin, prov_a=prov_a, prov_b=prov_b,
                    customer=customer, agent_a=agent_a, agent_b=agent_b,
                    key_a_secret=key_a_secret, key_b_secret=key_b_secret,
                    ctx=dict(app_A=app_a, app_B=app_b, app_C=app_c, key_A=key_a, key_B=key_b,
                             tok_A_del=tok_a_del, tok_A_rot=tok_a_rot, ntf_A=ntf_a,
                             mch_A=mch_a, gpu_A=gpu_a, wl_A=wl_a, mnt_A=mnt_a, ofr_A=ofr_a,
                             ses_A=ses_a, mch_R=mch_r, ofr_R=ofr_r, rnt_C1=rentals[0],
                             rnt_C2=rentals[1], job_C=job_c, usr_C=customer.id, usr_A=prov_a.id,
                             login_email=login_user.email,
                             customer_contact=customer_contact,
                             verify_token=srv.verification_token(customer.id, customer.email),
                             **{f"email_{w}": u.email for w, u in who.items() if u},
                             # Filled by _payouts_fixture (the tests that need them).
                             po_A="po_00000000000000000000000000",
                             po_B="po_00000000000000000000000001",
                             run_M="run_00000000000000000000000000",
                             file_M="run_00000000000000000000000000-sepa.xml",
                             tu_C="tu_00000000000000000000000000", month="2026-11",
                             monthly="2026-11-02", **modules))

    def _matrix_keys(self, f):
        """Makes the API keys of KEYS; name -> secret."""
        out = {}
        for name, (owner, scopes) in KEYS.items():
            r = f["who"][owner].c.post(f"{API}/api-keys", {"name": name, "scopes": scopes})
            self.assertStatus(r, 201, name)
            self.assertEqual(r.body["scopes"], scopes, name)
            out[name] = r.body["key"]
        return out

    def _payouts_fixture(self, f):
        """Issue 15: A pays out to a Solana wallet, B by SEPA, both monthly; each earned
        about 2.5 USDC from a payer's rental of 8 L4s on a fake machine of theirs (priced
        at 720 USDC per GPU-hour for it, then back to the fixture's prices); the clock moved
        past the earnings hold; a monthly run planned A's payout (waiting for the platform
        wallet's funds, never given here) and wrote B's in a pain.001 file; the customer
        asked for a top-up. Fills ctx po_A, po_B, run_M, file_M, tu_C, month, monthly."""
        srv, admin, ctx = f["srv"], f["admin"], f["ctx"]
        a, b = f["prov_a"], f["prov_b"]
        payer = srv.user("Pia Payer")
        r = admin.c.post(f"{API}/admin/credits", {"user_id": payer.id,
                                                   "amount_micro": PAYER_CREDIT,
                                                   "reference": "payouts fixture"})
        self.assertStatus(r, 201)
        wallet_a = self.front.new_wallet()["public_key"]
        for prov, method in ((a, {"kind": "solana", "wallet": wallet_a}),
                             (b, {"kind": "sepa", "holder": "Boris Person",
                                  "iban": "DE89370400440532013000"})):
            r = prov.c.put(f"{API}/providers/me/payout-settings",
                           {"schedule": "monthly", "method": method, "password": PASSWORD})
            self.assertStatus(r, 200)
        machines, rentals = {}, {}
        for key, prov in (("A", a), ("B", b)):
            r = prov.c.post(f"{API}/providers/me/agent-tokens", {"name": "payouts"})
            self.assertStatus(r, 201)
            prices = [{"gpu_model": i["gpu_model"], "price_micro": i["price_micro"]}
                      for i in prov.c.get(f"{API}/providers/me/prices").body["items"]]
            pf.price_l4(prov)
            ag = FakeAgent(srv, r.body["token"], models=(L4_GPU,) * 8)
            self.addCleanup(ag.cleanup)
            ag.join()
            rentals[key] = pf.run_rental(admin, payer, ag, 8, 2.2)["id"]
            machines[key] = ag.machine_id
            self.assertStatus(prov.c.put(f"{API}/providers/me/prices", {"items": prices}), 200)
        # The rental machine's offer is back at the fixture's price.
        l4 = next(p["price_micro"] for p in prices if p["gpu_model"] == "l4-24gb")
        wait_until(lambda: srv.client().get(f"{API}/offers/{ctx['ofr_R']}").body.get(
            "price_micro") == l4, 10, "the rental machine's offer at its price again")
        pf.release_earnings(srv, [a, b])
        monthly = pf.latest_monthly_date(srv.now()).isoformat()
        r = admin.c.post(f"{API}/admin/payout-runs",
                         {"as_of": monthly, "schedule": "monthly", "eur_rate": "0.92"})
        self.assertStatus(r, 201)
        run = pf.wait_run(admin, r.body["id"], lambda x: x["files"] and x["state"] == "waiting",
                          what="the run planned, its SEPA file written")
        payouts = {p["provider_id"]: p for p in run["payouts"]}
        self.assertEqual(payouts[a.id]["state"], "waiting_funds", run)
        self.assertEqual(payouts[b.id]["state"], "planned", run)
        r = f["customer"].c.post(f"{API}/topups", {"amount_micro": TOPUP_MICRO})
        self.assertStatus(r, 201)
        ctx.update(po_A=payouts[a.id]["id"], po_B=payouts[b.id]["id"], run_M=run["id"],
                   file_M=run["files"][0]["name"], tu_C=r.body["id"],
                   month=srv.now().strftime("%Y-%m"), monthly=monthly)
        f.update(payer=payer, wallet_a=wallet_a, payout_machines=machines,
                 payout_rentals=rentals)

    def test_matrix(self):
        f = self._fixture()
        self._payouts_fixture(f)
        srv, who, ctx = f["srv"], f["who"], f["ctx"]
        keys = self._matrix_keys(f)
        results = []
        # Rows of routes gpunexd does not register (yet) are left to RouteTableTest,
        # which names them; the rest of the matrix still runs.
        registered = server_routes()
        for row in MATRIX:
            if tuple(row["route"]) not in registered:
                continue
            path = row["path"]
            for k, v in ctx.items():
                path = path.replace("{" + k + "}", v)
            self.assertNotIn("{", path, f"unfilled placeholder in {row['path']}")
            # Who tries the row: (name, owner, token, status, words in the message).
            tries = {}
            for principal in PRINCIPALS:
                user = who[principal]
                token = ""
                if user is not None:
                    token = user.token
                    if row.get("fresh_session"):
                        token = srv.login(user.email, user.password).body["token"]
                tries[principal] = (principal, token, row["expect"][principal], [])
            for key, (owner, _) in KEYS.items():
                want, words, why = key_expect(row, key)
                # A row whose success happens once is left to the owner's session: only
                # the keys refused for a scope they lack (or answered by `keys`) try it,
                # before the sessions.
                if row.get("once") and why == "owner":
                    continue
                tries[key] = (owner, keys[key], want, words)
            # A row may fix the order when two principals can succeed but only the first
            # does (the second stop of a rental finds it ending); the keys then go first.
            if "order" in row:
                order = [k for k in tries if k not in PRINCIPALS] + list(row["order"])
            else:
                names = list(tries)
                order = sorted(names, key=lambda n: (tries[n][2] < 300, names.index(n)))
            for name in order:
                owner, token, want, words = tries[name]
                body = row.get("body")
                if callable(body):
                    body = body(ctx, owner)
                r = srv.client().request(row["route"][0], path, body, token=token,
                                         headers=row_headers(row))
                results.append((row["route"][0], path, name, want, r.status))
                with self.subTest(route=row["route"], path=path, who=name):
                    self.assertEqual(r.status, want,
                                     f"{row['route'][0]} {path} as {name}: {r!r}")
                    if want >= 400:
                        err = self.assertError(r, want)
                        for w in words:
                            self.assertIn(w, err["message"], f"{name}: {r!r}")
        # Effects of the successful rows, and none of the refused ones.
        c = f["customer"]
        r = c.c.get(f"{API}/provider-applications/{ctx['app_C']}")
        self.assertEqual(r.body["status"], "needs_info")
        edits = [h for h in r.body["history"] if h["action"] == "updated"]
        self.assertEqual(len(edits), 1, "only the owner's PUT changed the draft")
        self.assertEqual(r.body["infrastructure"]["maintenance_notes"], "edited by customer")
        r = f["prov_a"].c.get(f"{API}/provider-applications/{ctx['app_A']}")
        self.assertEqual(r.body["status"], "approved")
        self.assertNotIn("updated", [h["action"] for h in r.body["history"]])
        # Availability: the owner's machine PUT, then the provider-wide PUT (A's one
        # machine; B has none); nobody else's write landed.
        r = f["prov_a"].c.get(f"{API}/machines/{ctx['mch_A']}/availability")
        self.assertStatus(r, 200)
        self.assertEqual((r.body["schedule"], r.body["source"]), (PROVIDER_SCHEDULE, "provider"),
                         r.body)
        # Maintenance: the fixture's window cancelled by its owner alone, one more declared
        # by the owner alone.
        r = f["prov_a"].c.get(f"{API}/machines/{ctx['mch_A']}/maintenance")
        self.assertStatus(r, 200)
        got = sorted((w["id"] == ctx["mnt_A"], w["state"], w["reason"]) for w in r.body["items"])
        self.assertEqual(got, [(False, "upcoming", "UPS battery swap, declared by provA"),
                               (True, "cancelled", "UPS battery swap, declared by fixture")],
                         r.body)
        # Prices: each provider's own PUT, the owner's machine override; the refused
        # PUTs (the customer's, the admin's, provider B's on A's machine) left nothing.
        for p in ("provA", "provB"):
            r = who[p].c.get(f"{API}/providers/me/prices")
            self.assertStatus(r, 200)
            self.assertEqual([(i["gpu_model"], i["price_micro"]) for i in r.body["items"]],
                             [("l4-24gb", PRICE_BY_WHO[p])], f"{p}: {r.body}")
        r = f["admin"].c.get(f"{API}/machines/{ctx['mch_A']}/prices")
        self.assertStatus(r, 200)
        self.assertEqual([(i["gpu_model"], i["price_micro"]) for i in r.body["items"]],
                         [("l4-24gb", OVERRIDE_BY_WHO["provA"])], r.body)
        self.assertEqual(r.body["effective"],
                         [{"gpu_model": "l4-24gb", "price_micro": OVERRIDE_BY_WHO["provA"]}],
                         r.body)
        r = f["prov_a"].c.get(f"{API}/providers/me/prices/history")
        self.assertStatus(r, 200)
        machine_changes = [(c["machine_id"], c["new_price_micro"], c["changed_by"])
                           for c in r.body["items"] if c["machine_id"]]
        self.assertEqual(machine_changes,
                         [(ctx["mch_A"], OVERRIDE_BY_WHO["provA"], f["prov_a"].id)], r.body)
        r = f["prov_b"].c.get(f"{API}/providers/me/prices/history")
        self.assertEqual([c["machine_id"] for c in r.body["items"] if c["machine_id"]], [],
                         r.body)
        # Rentals: only the customer's POST made one (with the fixture's two, and what its
        # job was placed as); the admin's credit landed once; nothing was charged (nothing
        # ran); the stops ended each rental once, by whom the row says.
        q = srv.backend.query
        # (The payer's two rentals and its credit are the payouts fixture's.)
        self.assertEqual({row[0] for row in q("SELECT customer_id FROM rentals")},
                         {f["customer"].id, f["payer"].id})
        self.assertEqual(q("SELECT COUNT(*) FROM rentals WHERE job_id = '' AND customer_id = ?",
                           (f["customer"].id,)), [(3,)])
        credits = q("SELECT credit_account, amount FROM ledger_transfers "
                    "WHERE kind = 'operator_credit' ORDER BY amount")
        self.assertEqual(credits, [(f"customer:{f['customer'].id}", MATRIX_CREDIT),
                                   (f"customer:{f['customer'].id}", FIXTURE_CREDIT),
                                   (f"customer:{f['payer'].id}", PAYER_CREDIT)])
        r = f["customer"].c.get(f"{API}/me/balance")
        self.assertEqual(r.body["balance_micro"], FIXTURE_CREDIT + MATRIX_CREDIT, r.body)
        for key, reason, party in (("rnt_C1", "stopped", "customer"),
                                   ("rnt_C2", "operator", "platform")):
            r = f["customer"].c.get(f"{API}/rentals/{ctx[key]}")
            self.assertStatus(r, 200)
            self.assertEqual((r.body["end_reason"], r.body["end_party"], r.body["charged_micro"]),
                             (reason, party, 0), r.body)
            self.assertIn(r.body["state"], ("ending", "ended"), r.body)
        if JOBS_ROUTE in registered:
            r = f["customer"].c.get(f"{API}/jobs/{ctx['job_C']}")
            self.assertEqual(r.body["state"], "cancelled", r.body)
        # Payouts: the admin's POST of the same run answered that run (one monthly run);
        # its file was marked sent once, B's line failed by the admin alone and retried by
        # the admin alone (planned again); the providers' PUTs changed no method.
        admin = f["admin"]
        runs = admin.c.get(f"{API}/admin/payout-runs").body["items"]
        self.assertEqual([(x["id"], x["schedule"]) for x in runs], [(ctx["run_M"], "monthly")])
        detail = admin.c.get(f"{API}/admin/payout-runs/{ctx['run_M']}").body
        first = next(x for x in detail["files"] if x["name"] == ctx["file_M"])
        self.assertEqual(first["state"], "sent", detail)
        po_b = f["prov_b"].c.get(f"{API}/providers/me/payouts/{ctx['po_B']}").body
        self.assertEqual((po_b["state"], po_b["failure"]), ("planned", None), po_b)
        po_a = f["prov_a"].c.get(f"{API}/providers/me/payouts/{ctx['po_A']}").body
        self.assertEqual(po_a["state"], "waiting_funds", po_a)
        for p, kind in (("provA", "solana"), ("provB", "sepa")):
            st = who[p].c.get(f"{API}/providers/me/payout-settings").body
            self.assertEqual((st["schedule"], st["method"]["kind"], st["hold_until"]),
                             ("monthly", kind, None), st)
        # Top-ups: each user's POST made one of their own; the customer's list has its two.
        for p in ALL_USERS:
            items = who[p].c.get(f"{API}/topups").body["items"]
            own = 2 if p == "customer" else 1
            self.assertEqual(len(items), own, f"{p}: {items}")
            self.assertEqual(ctx["tu_C"] in {t["id"] for t in items}, p == "customer", p)
        self.assertEqual(q("SELECT COUNT(*) FROM topups"), [(5,)])
        chk = f["admin"].c.get(f"{API}/admin/ledger/check").body
        self.assertEqual((chk["ok"], chk["sum_micro"], chk["mismatches"]), (True, 0, []), chk)

    def test_payouts_and_topups_are_seen_only_by_their_owners(self):
        """A provider never sees another's earnings, statement lines or payouts (another's
        payout is not found, as CSV too); only admins start runs or record bank results,
        and a refused one changes nothing; a customer never reads another's top-up."""
        f = self._fixture()
        self._payouts_fixture(f)
        srv, ctx, a, b, admin = f["srv"], f["ctx"], f["prov_a"], f["prov_b"], f["admin"]
        mine = {"A": (a, ctx["po_A"], f["payout_machines"]["A"], f["payout_rentals"]["A"]),
                "B": (b, ctx["po_B"], f["payout_machines"]["B"], f["payout_rentals"]["B"])}
        for key, other in (("A", "B"), ("B", "A")):
            prov, po, mch, rnt = mine[key]
            _, other_po, other_mch, other_rnt = mine[other]
            items = prov.c.get(f"{API}/providers/me/payouts").body["items"]
            self.assertEqual([x["id"] for x in items], [po], key)
            for path in (f"{API}/providers/me/payouts/{other_po}",
                         f"{API}/providers/me/payouts/{other_po}?format=csv"):
                self.assertError(prov.c.get(path), 404, msg=f"{key}: {path}")
            r = prov.c.get(f"{API}/providers/me/payouts/{po}")
            self.assertStatus(r, 200)
            self.assertEqual([x["rental_id"] for x in r.body["lines"]], [rnt], r.body)
            self.assertNotIn("provider_id", r.body)
            r = prov.c.get(f"{API}/providers/me/earnings", query={"group": "gpu"})
            self.assertStatus(r, 200)
            self.assertEqual({x["machine_id"] for x in r.body["rows"]}, {mch}, r.body)
            r = prov.c.get(f"{API}/providers/me/statements/{ctx['month']}")
            self.assertStatus(r, 200)
            self.assertEqual([x["rental_id"] for x in r.body["lines"]], [rnt], r.body)
            self.assertEqual([x["id"] for x in r.body["payouts"]], [po], r.body)
            for path in (f"{API}/providers/me/earnings?group=gpu&format=csv",
                         f"{API}/providers/me/statements/{ctx['month']}?format=csv",
                         f"{API}/providers/me/payouts", f"{API}/providers/me/payout-settings"):
                text = prov.c.get(path).raw.decode("utf-8")
                for secret in (other_po, other_mch, other_rnt, mine[other][0].id,
                               mine[other][0].email, f["wallet_a"] if key == "B" else "DE89"):
                    self.assertNotIn(secret, text, f"{key} sees {secret} in {path}")
        # Only admins start runs and record bank results; the refusals changed nothing.
        before = admin.c.get(f"{API}/admin/payout-runs/{ctx['run_M']}").body
        monday = pf.latest_monday(srv.now()).isoformat()
        for user in (f["customer"], a, b):
            for body in ({"as_of": monday, "schedule": "weekly"},
                         {"as_of": ctx["monthly"], "schedule": "monthly", "eur_rate": "0.5"}):
                self.assertError(user.c.post(f"{API}/admin/payout-runs", body), 403)
            self.assertError(user.c.post(f"{API}/admin/payouts/{ctx['po_B']}/bank-result",
                                         {"state": "paid"}), 403)
            self.assertError(user.c.post(f"{API}/admin/payouts/{ctx['po_B']}/retry"), 403)
            self.assertError(user.c.post(
                f"{API}/admin/payout-runs/{ctx['run_M']}/files/{ctx['file_M']}/sent"), 403)
            self.assertError(user.c.get(
                f"{API}/admin/payout-runs/{ctx['run_M']}/files/{ctx['file_M']}"), 403)
        self.assertEqual(admin.c.get(f"{API}/admin/payout-runs/{ctx['run_M']}").body, before)
        self.assertEqual(len(admin.c.get(f"{API}/admin/payout-runs").body["items"]), 1)
        # Top-ups: another customer's is not found (admins too) and never listed.
        other = srv.user("Olga Other")
        r = other.c.post(f"{API}/topups", {"amount_micro": TOPUP_MICRO})
        self.assertStatus(r, 201)
        tu_o = r.body["id"]
        for user, tu in ((f["customer"], tu_o), (other, ctx["tu_C"]), (admin, tu_o), (a, tu_o)):
            for path in (f"{API}/topups/{tu}", f"{API}/topups/{tu}/qr.svg"):
                self.assertError(user.c.get(path), 404, msg=path)
            self.assertNotIn(tu, {t["id"] for t in user.c.get(f"{API}/topups").body["items"]})
        self.assertEqual([t["id"] for t in f["customer"].c.get(f"{API}/topups").body["items"]],
                         [ctx["tu_C"]])
        r = other.c.get(f"{API}/topups/{tu_o}/qr.svg")
        self.assertStatus(r, 200)
        self.assertTrue(r.header("Content-Type").startswith("image/svg+xml"), r.headers)

    def test_rentals_are_seen_only_by_their_parties(self):
        """A customer never sees another's rentals (404, and not in any list); a provider
        sees the rentals on its machines only, with a pseudonym for the customer; only the
        machine's provider and admins see the machine; only admins credit or check the
        ledger."""
        f = self._fixture()
        srv, ctx, a, b, cust = f["srv"], f["ctx"], f["prov_a"], f["prov_b"], f["customer"]
        other = srv.user("Olga Other")
        r = f["admin"].c.post(f"{API}/admin/credits", {"user_id": other.id,
                                                        "amount_micro": FIXTURE_CREDIT,
                                                        "reference": "other credit"})
        self.assertStatus(r, 201)
        r = other.c.post(f"{API}/rentals", _rental_body(ctx, "other"))
        self.assertStatus(r, 201)
        rnt_o = r.body["id"]
        mine = {ctx["rnt_C1"], ctx["rnt_C2"]}

        def ids(user, path, query=None):
            r = user.c.get(path, query=query)
            self.assertStatus(r, 200, path)
            return {x["id"] for x in r.body["items"]}

        for q in (None, {"state": "active"}, {"state": "ended"}, {"limit": "1"}):
            self.assertNotIn(rnt_o, ids(cust, f"{API}/rentals", q), q)
            self.assertLessEqual(ids(other, f"{API}/rentals", q), {rnt_o}, q)
        self.assertGreaterEqual(ids(cust, f"{API}/rentals"), mine)
        for rid, stranger in ((rnt_o, cust), (ctx["rnt_C1"], other)):
            for method, path in (("GET", f"{API}/rentals/{rid}"),
                                 ("GET", f"{API}/rentals/{rid}/logs"),
                                 ("POST", f"{API}/rentals/{rid}/stop")):
                self.assertError(stranger.c.request(method, path), 404, msg=f"{method} {path}")
        # Providers: A sees every rental on its machine, B none.
        self.assertGreaterEqual(ids(a, f"{API}/providers/me/rentals"), mine | {rnt_o})
        self.assertEqual(ids(b, f"{API}/providers/me/rentals"), set())
        seen = a.c.get(f"{API}/rentals/{rnt_o}").body
        self.assertEqual(seen["machine_id"], ctx["mch_R"])
        self.assertTrue(seen["customer"].startswith("customer-"), seen)
        text = json.dumps(a.c.get(f"{API}/providers/me/rentals").body)
        for secret in (other.email, other.id, cust.email, cust.id, "Olga"):
            self.assertNotIn(secret, text)
        own = other.c.get(f"{API}/rentals/{rnt_o}").body
        self.assertNotIn("machine_id", own)
        self.assertEqual(f["admin"].c.get(f"{API}/rentals/{rnt_o}").body["machine_id"],
                         ctx["mch_R"])
        self.assertIn(rnt_o, ids(f["admin"], f"{API}/rentals"))
        # Balances and statements are each user's own.
        self.assertEqual(other.c.get(f"{API}/me/balance").body["balance_micro"], FIXTURE_CREDIT)
        st = other.c.get(f"{API}/me/statement").body["items"]
        self.assertEqual([(i["kind"], i["amount_micro"]) for i in st],
                         [("operator_credit", FIXTURE_CREDIT)])
        # Only admins credit or check the ledger; a refused credit moves nothing.
        before = srv.backend.query("SELECT COUNT(*) FROM ledger_transfers")
        for user in (cust, other, a, b):
            r = user.c.post(f"{API}/admin/credits", {"user_id": user.id, "amount_micro": 1,
                                                      "reference": "self-service"})
            self.assertError(r, 403)
            self.assertError(user.c.get(f"{API}/admin/ledger/check"), 403)
        self.assertEqual(srv.backend.query("SELECT COUNT(*) FROM ledger_transfers"), before)

    def test_lists_show_only_own_applications(self):
        f = self._fixture()
        ctx = f["ctx"]
        expect_own = {"customer": {ctx["app_C"]}, "provA": {ctx["app_A"]},
                      "provB": {ctx["app_B"]}}
        for p, own in expect_own.items():
            for query in (None, {"status": "submitted"}, {"status": "approved"},
                          {"limit": "1"}):
                r = f["who"][p].c.get(f"{API}/provider-applications", query=query)
                self.assertStatus(r, 200)
                ids = {it["id"] for it in r.body["items"]}
                self.assertLessEqual(ids, own, f"{p} listed {query}: {r.body}")
            r = f["who"][p].c.get(f"{API}/provider-applications")
            self.assertEqual({it["id"] for it in r.body["items"]}, own)
            for it in r.body["items"]:
                self.assertEqual(it["user_id"], f["who"][p].id)
        r = f["admin"].c.get(f"{API}/provider-applications")
        self.assertEqual({it["id"] for it in r.body["items"]},
                         {ctx["app_A"], ctx["app_B"], ctx["app_C"]})
        # ?mine=true: the caller's own only, for an admin too (the Roles page asks so).
        for p, own in dict(expect_own, admin=set()).items():
            r = f["who"][p].c.get(f"{API}/provider-applications", query={"mine": "true"})
            self.assertStatus(r, 200)
            self.assertEqual({it["id"] for it in r.body["items"]}, own, p)
            self.assertEqual(r.body["total"], len(own), p)
        # Nobody but the admin can decide, not even on their own application.
        r = f["customer"].c.post(f"{API}/provider-applications/{ctx['app_C']}/submit")
        self.assertStatus(r, 200)
        for p in ("customer", "provA", "provB"):
            for d in ({"decision": "approve", "tier": "community"},
                      {"decision": "reject", "message": "no"}):
                r = f["who"][p].c.post(
                    f"{API}/provider-applications/{ctx['app_C']}/decision", d)
                self.assertError(r, 403, msg=p)
        r = f["customer"].c.get(f"{API}/provider-applications/{ctx['app_C']}")
        self.assertEqual(r.body["status"], "submitted")
        self.assertError(f["customer"].c.get(f"{API}/providers/me"), 403)
        # A reviewer does not decide on their own application (REV-2: decisions are
        # someone else's).
        body = community_application(unique_email("admin-apply"))
        body["submit"] = True
        r = f["admin"].c.post(f"{API}/provider-applications", body)
        self.assertStatus(r, 201)
        own = r.body["id"]
        r = f["admin"].c.post(f"{API}/provider-applications/{own}/decision",
                              {"decision": "approve", "tier": "community"})
        self.assertError(r, 403)
        r = f["admin"].c.get(f"{API}/provider-applications/{own}")
        self.assertEqual(r.body["status"], "submitted")
        self.assertNotIn("provider", f["admin"].c.get(f"{API}/me").body["roles"])

    def test_other_providers_resources_are_not_found(self):
        f = self._fixture()
        ctx, a, b = f["ctx"], f["prov_a"], f["prov_b"]
        # B cannot read, edit or submit A's application.
        self.assertError(b.c.get(f"{API}/provider-applications/{ctx['app_A']}"), 404)
        self.assertError(b.c.put(f"{API}/provider-applications/{ctx['app_A']}",
                                 community_application(unique_email())), 404)
        self.assertError(b.c.post(f"{API}/provider-applications/{ctx['app_A']}/submit"), 404)
        # ... nor revoke or rotate A's agent tokens.
        before = a.c.get(f"{API}/providers/me/agent-tokens").body["items"]
        for t in before:
            self.assertError(b.c.delete(f"{API}/providers/me/agent-tokens/{t['id']}"), 404)
            self.assertError(b.c.post(f"{API}/providers/me/agent-tokens/{t['id']}/rotate"), 404)
        after = a.c.get(f"{API}/providers/me/agent-tokens").body["items"]
        self.assertEqual(before, after)
        b_tokens = {t["id"] for t in b.c.get(f"{API}/providers/me/agent-tokens").body["items"]}
        self.assertFalse(b_tokens & {t["id"] for t in before}, "B lists A's tokens")
        # ... nor delete A's API key, which keeps working.
        self.assertError(b.c.delete(f"{API}/api-keys/{ctx['key_A']}"), 404)
        self.assertStatus(f["srv"].client(f["key_a_secret"]).get(f"{API}/me"), 200)
        keys_b = {k["id"] for k in b.c.get(f"{API}/api-keys").body["items"]}
        self.assertNotIn(ctx["key_A"], keys_b)
        # ... nor mark A's notifications read.
        self.assertError(b.c.post(f"{API}/notifications/{ctx['ntf_A']}/read"), 404)
        self.assertError(f["admin"].c.post(f"{API}/notifications/{ctx['ntf_A']}/read"), 404)
        items = a.c.get(f"{API}/notifications").body["items"]
        self.assertFalse([n for n in items if n["id"] == ctx["ntf_A"]][0]["read"])
        b_ntf = {n["id"] for n in b.c.get(f"{API}/notifications").body["items"]}
        self.assertNotIn(ctx["ntf_A"], b_ntf)
        # ... nor read or change A's machine's schedule, maintenance or reliability; B's
        # provider-wide schedule is B's machines only (none).
        mch = ctx["mch_A"]

        def schedule_state():
            body = a.c.get(f"{API}/machines/{mch}/availability").body
            return body["schedule"], body["source"], body["updated_at"]

        av_before = schedule_state()
        mnt_before = a.c.get(f"{API}/machines/{mch}/maintenance").body
        for method, path, body in (
                ("GET", f"{API}/machines/{mch}/availability", None),
                ("PUT", f"{API}/machines/{mch}/availability", {"schedule": MACHINE_SCHEDULE}),
                ("GET", f"{API}/machines/{mch}/maintenance", None),
                ("POST", f"{API}/machines/{mch}/maintenance", _maintenance_body(ctx, "provB")),
                ("DELETE", f"{API}/machines/{mch}/maintenance/{ctx['mnt_A']}", None),
                ("GET", f"{API}/machines/{mch}/reliability", None)):
            self.assertError(b.c.request(method, path, body), 404, msg=f"{method} {path}")
        r = b.c.put(f"{API}/providers/me/availability", {"schedule": PROVIDER_SCHEDULE})
        self.assertStatus(r, 200)
        self.assertEqual(r.body, {"updated": 0})
        r = b.c.get(f"{API}/providers/me/reliability")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["machines"], [])
        self.assertNotIn(mch, {e["machine_id"] for e in r.body["events"]})
        self.assertEqual(schedule_state(), av_before)
        self.assertEqual(a.c.get(f"{API}/machines/{mch}/maintenance").body, mnt_before)
        self.assertEqual([w["state"] for w in mnt_before["items"]], ["upcoming"])
        # Only the admin adds GPU models.
        for p in ("customer", "provA", "provB"):
            self.assertError(f["who"][p].c.post(f"{API}/gpu-models", _gpu_model_body(ctx, p)),
                             403)
        self.assertError(f["srv"].client().post(f"{API}/gpu-models", _gpu_model_body(ctx, "x")),
                         401)

    def test_offers_show_the_machine_only_to_its_provider_and_admins(self):
        """An offer names no provider (a pseudonym only) for anybody, and its machine only
        for the offer's provider and admins."""
        f = self._fixture()
        srv, who, ctx, a = f["srv"], f["who"], f["ctx"], f["prov_a"]
        # A second machine of A with a free GPU, so that searches show an offer.
        ws, mch2 = self._machine(f["agent_a"])
        self.addCleanup(ws.close)

        def search(user):
            token = user.token if user else ""
            r = srv.client().get(f"{API}/offers", query={"explain": "true"}, token=token)
            self.assertStatus(r, 200)
            return r

        wait_until(lambda: [o for o in search(None).body["items"] if o["gpu_model"] == "l4-24gb"],
                   5, "the second machine's offer in search")
        offer_id = search(a).body["items"][0]["id"]
        # What would identify the provider: its account, its application's contact.
        r = a.c.get(f"{API}/me")
        secrets = {a.email, a.id, r.body["name"], a.contact_email, "Analytical Engines DC",
                   mch2, ctx["mch_A"], ctx["mch_R"]}
        for p in PRINCIPALS:
            user = who[p]
            sees_machine = p in ("provA", "admin")
            for r in (search(user),
                      srv.client().get(f"{API}/offers/{offer_id}",
                                       token=user.token if user else ""),
                      srv.client().get(f"{API}/offers/{ctx['ofr_A']}",
                                       token=user.token if user else "")):
                with self.subTest(who=p, answer=r.raw[:80]):
                    self.assertStatus(r, 200)
                    offers = r.body["items"] if "items" in r.body else [r.body]
                    self.assertTrue(offers, r)
                    for o in offers:
                        self.assertEqual(set(o["provider"]), {"pseudonym"}, o)
                        if sees_machine:
                            self.assertIn(o["machine_id"], (mch2, ctx["mch_A"], ctx["mch_R"]), o)
                        else:
                            self.assertNotIn("machine_id", o, o)
                    text = r.raw.decode("utf-8")
                    shown = (secrets if not sees_machine
                             else secrets - {mch2, ctx["mch_A"], ctx["mch_R"]})
                    for s in shown:
                        self.assertNotIn(s, text, f"{p} sees {s!r} in {text[:400]}")

    def test_api_keys_act_for_their_owner(self):
        f = self._fixture()
        srv, ctx = f["srv"], f["ctx"]
        key_a = srv.client(f["key_a_secret"])
        r = key_a.get(f"{API}/me")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["id"], f["prov_a"].id)
        self.assertStatus(key_a.get(f"{API}/providers/me"), 200)
        self.assertError(key_a.get(f"{API}/provider-applications/{ctx['app_B']}"), 404)
        self.assertError(key_a.delete(f"{API}/api-keys/{ctx['key_B']}"), 404)
        # Revoked: refused.
        self.assertStatus(f["prov_a"].c.delete(f"{API}/api-keys/{ctx['key_A']}"), 204)
        self.assertError(key_a.get(f"{API}/me"), 401)
        self.assertError(f["prov_a"].c.delete(f"{API}/api-keys/{ctx['key_A']}"), 404)
        self.assertStatus(srv.client(f["key_b_secret"]).get(f"{API}/me"), 200)

    def test_a_providers_key_without_the_provider_scope_controls_nothing(self):
        """Issue 24, item 1: a provider's API key made with {"scopes": ["read", "write"]}
        is a customer's key. It neither changes nor reads the provider's machines, GPUs,
        prices, availability, maintenance, benchmarks, workloads, earnings, payout settings
        or agent tokens (403 naming the provider scope), and what it tried changed nothing;
        the provider's key with the provider scope may do it all."""
        f = self._fixture()
        srv, ctx, a = f["srv"], f["ctx"], f["prov_a"]
        mch, gpu, q = ctx["mch_A"], ctx["gpu_A"], srv.backend.query
        r = a.c.post(f"{API}/api-keys", {"name": "probe", "scopes": ["read", "write"]})
        self.assertStatus(r, 201)
        key = srv.client(r.body["key"])

        def state():
            m = a.c.get(f"{API}/machines/{mch}").body
            return (m["name"], [(g["id"], g["enabled"]) for g in m["gpus"]],
                    a.c.get(f"{API}/machines/{mch}/prices").body,
                    {k: v for k, v in a.c.get(f"{API}/machines/{mch}/availability").body.items()
                     if k in ("schedule", "source", "updated_at")},
                    a.c.get(f"{API}/machines/{mch}/maintenance").body,
                    a.c.get(f"{API}/providers/me/prices").body,
                    a.c.get(f"{API}/providers/me/payout-settings").body,
                    a.c.get(f"{API}/providers/me/agent-tokens").body,
                    q("SELECT id, state FROM workloads ORDER BY id"),
                    q("SELECT COUNT(*) FROM agent_commands WHERE machine_id = ?", (mch,)))

        before = state()
        price = {"items": [{"gpu_model": "l4-24gb", "price_micro": 7}]}
        probe = [
            ("PATCH", f"{API}/machines/{mch}", {"name": "probed"}),
            ("PATCH", f"{API}/machines/{mch}/gpus/{gpu}", {"enabled": False}),
            ("PUT", f"{API}/machines/{mch}/prices", price),
            ("PUT", f"{API}/providers/me/prices", price),
            ("PUT", f"{API}/machines/{mch}/availability", {"schedule": MACHINE_SCHEDULE}),
            ("PUT", f"{API}/providers/me/availability", {"schedule": PROVIDER_SCHEDULE}),
            ("POST", f"{API}/machines/{mch}/maintenance", _maintenance_window(3, "the probe")),
            ("DELETE", f"{API}/machines/{mch}/maintenance/{ctx['mnt_A']}", None),
            ("POST", f"{API}/machines/{mch}/benchmarks", {}),
            ("POST", f"{API}/workloads", {"machine_id": mch, "gpu_ids": [gpu],
                                          "image": "gpunex-test/busybox:1",
                                          "command": ["sleep", "600"]}),
            ("POST", f"{API}/workloads/{ctx['wl_A']}/stop", None),
            ("PUT", f"{API}/providers/me/payout-settings", {"schedule": "monthly"}),
            ("DELETE", f"{API}/providers/me/agent-tokens/{ctx['tok_A_del']}", None),
            ("GET", f"{API}/machines", None),
            ("GET", f"{API}/machines/{mch}", None),
            ("GET", f"{API}/machines/{mch}/prices", None),
            ("GET", f"{API}/providers/me", None),
            ("GET", f"{API}/providers/me/earnings", None),
            ("GET", f"{API}/providers/me/rentals", None),
        ]
        for method, path, body in probe:
            r = key.request(method, path, body)
            with self.subTest(method=method, path=path):
                err = self.assertError(r, 403, code="permission_denied")
                self.assertIn("provider scope", err["message"])
        self.assertEqual(state(), before, "the refused requests changed nothing")
        # Nor does it see the provider's side of what customers may read.
        self.assertError(key.get(f"{API}/workloads/{ctx['wl_A']}"), 404)
        self.assertNotIn(ctx["wl_A"], {w["id"] for w in key.get(f"{API}/workloads").body["items"]})
        self.assertError(key.get(f"{API}/rentals/{ctx['rnt_C1']}"), 404)
        self.assertNotIn("machine_id", key.get(f"{API}/offers/{ctx['ofr_A']}").body)
        self.assertNotIn("provider", key.get(f"{API}/me").body["roles"])
        # With the provider scope, the same provider's key does it.
        r = a.c.post(f"{API}/api-keys", {"name": "ops", "scopes": ["read", "write", "provider"]})
        self.assertStatus(r, 201)
        ops = srv.client(r.body["key"])
        self.assertStatus(ops.request("PATCH", f"{API}/machines/{mch}", {"name": "rack-7"}), 200)
        self.assertEqual(a.c.get(f"{API}/machines/{mch}").body["name"], "rack-7")
        self.assertEqual(ops.get(f"{API}/offers/{ctx['ofr_A']}").body["machine_id"], mch)
        self.assertStatus(ops.get(f"{API}/workloads/{ctx['wl_A']}"), 200)

    def test_workloads_show_what_rentals_show(self):
        """Issue 24, item 9: /workloads follows the view rules of /rentals. A rental's
        workload shows its customer neither the provider nor the machine, its GPUs or its
        container; it shows the provider and admins the machine and the customer's
        pseudonym, never the customer's id."""
        f = self._fixture()
        ctx, a, cust, admin = f["ctx"], f["prov_a"], f["customer"], f["admin"]
        r = cust.c.get(f"{API}/workloads")
        self.assertStatus(r, 200)
        mine = r.body["items"]
        self.assertEqual(len(mine), 2, "the fixture's two rentals")
        pseudonym = a.c.get(f"{API}/rentals/{ctx['rnt_C1']}").body["customer"]
        self.assertTrue(pseudonym.startswith("customer-"), pseudonym)
        for w in mine:
            self.assertEqual((w["purpose"], w["created_by"]), ("rental", cust.id), w)
            for hidden in ("machine_id", "provider_id", "gpu_ids", "container_id", "customer"):
                self.assertNotIn(hidden, w)
            self.assertNotIn("gpu_uuids", w["spec"])
            r = cust.c.get(f"{API}/workloads/{w['id']}")
            self.assertStatus(r, 200)
            text = r.raw.decode("utf-8")
            for secret in (a.id, a.email, ctx["mch_R"], ctx["mch_A"]):
                self.assertNotIn(secret, text)
            self.assertStatus(cust.c.get(f"{API}/workloads/{w['id']}/logs"), 200)
            for viewer in (a, admin):
                r = viewer.c.get(f"{API}/workloads/{w['id']}")
                self.assertStatus(r, 200)
                self.assertEqual((r.body["machine_id"], r.body["customer"]),
                                 (ctx["mch_R"], pseudonym), r.body)
                self.assertTrue(r.body["gpu_ids"], r.body)
                self.assertNotIn("created_by", r.body)
                text = r.raw.decode("utf-8")
                for secret in (cust.id, cust.email):
                    self.assertNotIn(secret, text)
        text = a.c.get(f"{API}/workloads").raw.decode("utf-8")
        self.assertNotIn(cust.id, text)
        # The provider's own workload: its machine and who made it, and not the customer's.
        r = a.c.get(f"{API}/workloads/{ctx['wl_A']}")
        self.assertEqual((r.body["machine_id"], r.body["created_by"]), (ctx["mch_A"], a.id))
        self.assertError(cust.c.get(f"{API}/workloads/{ctx['wl_A']}"), 404)
        self.assertNotIn(ctx["wl_A"], {w["id"] for w in mine})

    def test_agent_tokens_and_junk_are_refused_on_rest(self):
        f = self._fixture()
        srv, ctx = f["srv"], f["ctx"]
        r = f["prov_a"].c.post(f"{API}/providers/me/agent-tokens", {"name": "fresh"})
        fresh = r.body["token"]
        bad = {
            "agent token A (approval email)": f["agent_a"],
            "agent token B (approval email)": f["agent_b"],
            "agent token A (created)": fresh,
            "unknown session": "gpx_s_" + "A" * 43,
            "unknown API key": "gpx_k_" + "A" * 43,
            "junk": "hello",
            "overlong": "gpx_s_" + "A" * 500,
        }
        registered = server_routes()
        # (The agents' own routes take agent tokens: their rows say what users get.)
        authed = [row for row in MATRIX
                  if row["expect"]["anon"] == 401 and tuple(row["route"]) in registered
                  and ROUTE_ACCESS.get(tuple(row["route"])) != "agent"]
        for label, token in bad.items():
            for row in authed:
                path = row["path"]
                for k, v in ctx.items():
                    path = path.replace("{" + k + "}", v)
                body = row.get("body")
                if callable(body):
                    body = body(ctx, "anon")
                r = srv.client(token).request(row["route"][0], path, body,
                                              headers=row_headers(row))
                with self.subTest(token=label, route=row["route"]):
                    self.assertError(r, 401)
                    self.assertEqual(r.header("WWW-Authenticate"), "Bearer")
        # The agent token as a session cookie is no better.
        r = srv.client().get(f"{API}/me", headers={"Cookie": f"gpunex_session={f['agent_a']}"})
        self.assertError(r, 401)
        # Malformed Authorization headers.
        for h in (f"Basic {f['prov_a'].token}", f"bearer{f['prov_a'].token}", "Bearer "):
            r = srv.client().get(f"{API}/me", headers={"Authorization": h})
            self.assertError(r, 401, msg=h)
        # Nothing those requests tried happened.
        self.assertEqual(len(f["prov_a"].c.get(f"{API}/api-keys").body["items"]), 1)
        r = f["customer"].c.get(f"{API}/provider-applications/{ctx['app_C']}")
        self.assertEqual(r.body["status"], "draft")


class AuthzSqliteTest(AuthzMixin, ServerTestCase):
    BACKEND = "sqlite"


class AuthzPostgresTest(AuthzMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
