"""Bad requests (APP-4, API error shape): a table of malformed, mistyped, out-of-range and
otherwise invalid requests, each answered with the documented error shape
{"error": {"code", "message", "fields"}} naming the bad field(s), and - after the whole
table - a database unchanged but for the audit and log-in failure tables.

Runs on SQLite and, with GPUNEX_TEST_PG_URL, on PostgreSQL.
"""

import copy
import hashlib
import json
import unittest

from harness import (API, ServerTestCase, approved_provider, community_application,
                     enterprise_application, fill_placeholders, gpu_entry, unique_email)

# Tables that a rejected request may legitimately add rows to: security events are
# audited (ACC-4) and failed log-ins are counted for throttling, whatever the outcome.
# Every other table must be exactly as before the table run.
GROWING_TABLES = {"audit_events", "login_failures"}

ONE_MIB = 1 << 20


def app_with(mutate, submit=None, base=None):
    """A complete, valid application changed by `mutate(body)`."""
    body = copy.deepcopy(base or enterprise_application("apply@example.com"))
    mutate(body)
    if submit is not None:
        body["submit"] = submit
    return body


def g0(**changes):
    """Mutator: updates gpus[0]."""
    def m(b):
        b["gpus"][0].update(changes)
    return m


def avail(**changes):
    def m(b):
        a = {"kind": "schedule", "timezone": "Europe/Rome",
             "windows": [{"days": ["mon", "fri"], "start": "08:00", "end": "18:00"}]}
        for k, v in changes.items():
            if k.startswith("w_"):
                a["windows"][0][k[2:]] = v
            else:
                a[k] = v
        b["gpus"][0]["availability"] = a
    return m


def contact(**changes):
    def m(b):
        b["contact"].update(changes)
    return m


def infra(**changes):
    def m(b):
        b["infrastructure"].update(changes)
    return m


def loc(**changes):
    def m(b):
        b["gpus"][0]["location"].update(changes)
    return m


def seq(*mutators):
    def m(b):
        for f in mutators:
            f(b)
    return m


def set_key(key, value):
    def m(b):
        b[key] = value
    return m


MODEL = {"id": "b200-192gb", "name": "NVIDIA B200", "vram_gb": 192, "fp32_tflops": 80.0,
         "fp16_tflops": 160.0, "fp16_tensor_tflops": 2250.0, "tf32_tensor_tflops": 1100.0,
         "mem_bw_gbps": 8000.0, "default_price_micro": 4000000}

APPS = f"{API}/provider-applications"

# Who: "anon" (no credentials), "user" (signed up, no application), "owner" (has the
# draft {draft}), "admin" (reviewer; {submitted} .. {submitted4} are other users'
# submitted community applications, without UPS).
# Row: (name, method, path, who, body, expected HTTP status, expected error.fields keys).
# body: a JSON-able value, or ("raw", bytes_or_str, content_type or None).
ROWS = [
    # --- not JSON / not an object
    ("malformed JSON", "POST", APPS, "user",
     ("raw", '{"contact": {"full_name": ', "application/json"),
     400, ["body"]),
    ("trailing garbage", "POST", APPS, "user",
     ("raw", '{"gpus": []} xyz', "application/json"),
     400, ["body"]),
    ("empty body", "POST", APPS, "user", ("raw", "", "application/json"), 400, ["body"]),
    ("wrong Content-Type", "POST", APPS, "user",
     ("raw", json.dumps(enterprise_application("a@example.com")), "text/plain"),
     400, ["body"]),
    ("form Content-Type", "POST", APPS, "user",
     ("raw", "contact=1", "application/x-www-form-urlencoded"),
     400, ["body"]),
    ("no Content-Type", "POST", APPS, "user", ("raw", "{}", None), 400, ["body"]),
    ("array instead of object", "POST", APPS, "user",
     [enterprise_application("a@example.com")],
     422, ["body"]),
    ("string instead of object", "POST", APPS, "user", "application", 422, ["body"]),
    # --- missing / wrong types
    ("submit with nothing", "POST", APPS, "user",
     {"submit": True},
     422, ["contact", "gpus", "infrastructure"]),
    ("submit without full_name", "POST", APPS, "user",
     app_with(contact(full_name=None), True),
     422, ["contact.full_name"]),
    ("submit with blank full_name", "POST", APPS, "user",
     app_with(contact(full_name="   "), True),
     422, ["contact.full_name"]),
    ("submit without email", "POST", APPS, "user",
     app_with(contact(email=None), True),
     422, ["contact.email"]),
    ("submit without GPU entries", "POST", APPS, "user",
     app_with(set_key("gpus", []), True),
     422, ["gpus"]),
    ("submit entry without quantity", "POST", APPS, "user",
     app_with(g0(quantity=None), True),
     422, ["gpus[0].quantity"]),
    ("submit without ups", "POST", APPS, "user",
     app_with(infra(ups=None), True),
     422, ["infrastructure.ups"]),
    ("contact is an array", "POST", APPS, "user",
     app_with(set_key("contact", ["Ada"])),
     422, ["contact"]),
    ("gpus is an object", "POST", APPS, "user",
     app_with(set_key("gpus", {"model": "l4-24gb"})),
     422, ["gpus"]),
    ("gpu entry is a string", "POST", APPS, "user",
     app_with(set_key("gpus", ["h100-sxm-80gb"])),
     422, ["gpus[0]"]),
    ("infrastructure is an array", "POST", APPS, "user",
     app_with(set_key("infrastructure", [])),
     422, ["infrastructure"]),
    ("location is a string", "POST", APPS, "user",
     app_with(g0(location="Milan, IT")),
     422, ["gpus[0].location"]),
    ("availability is a string", "POST", APPS, "user",
     app_with(g0(availability="24/7")),
     422, ["gpus[0].availability"]),
    ("quantity as string", "POST", APPS, "user",
     app_with(g0(quantity="8")),
     422, ["gpus[0].quantity"]),
    ("quantity fractional", "POST", APPS, "user",
     app_with(g0(quantity=2.5)),
     422, ["gpus[0].quantity"]),
    ("ups as string", "POST", APPS, "user",
     app_with(infra(ups="yes")),
     422, ["infrastructure.ups"]),
    ("full_name as number", "POST", APPS, "user",
     app_with(contact(full_name=42)),
     422, ["contact.full_name"]),
    ("submit as string", "POST", APPS, "user", app_with(lambda b: None, "yes"), 422, ["submit"]),
    # --- out of range
    ("quantity 0", "POST", APPS, "user", app_with(g0(quantity=0)), 422, ["gpus[0].quantity"]),
    ("quantity 1025", "POST", APPS, "user", app_with(g0(quantity=1025)), 422, ["gpus[0].quantity"]),
    ("quantity negative", "POST", APPS, "user",
     app_with(g0(quantity=-1)),
     422, ["gpus[0].quantity"]),
    ("quantity 2^64", "POST", APPS, "user",
     app_with(g0(quantity=2 ** 64)),
     422, ["gpus[0].quantity"]),
    ("RAM 0", "POST", APPS, "user", app_with(g0(system_ram_gb=0)), 422, ["gpus[0].system_ram_gb"]),
    ("RAM huge", "POST", APPS, "user",
     app_with(g0(system_ram_gb=10 ** 9)),
     422, ["gpus[0].system_ram_gb"]),
    ("upload negative", "POST", APPS, "user",
     app_with(g0(upload_gbps=-1)),
     422, ["gpus[0].upload_gbps"]),
    ("download zero", "POST", APPS, "user",
     app_with(g0(download_gbps=0)),
     422, ["gpus[0].download_gbps"]),
    ("upload huge", "POST", APPS, "user",
     app_with(g0(upload_gbps=1e9)),
     422, ["gpus[0].upload_gbps"]),
    ("download as string", "POST", APPS, "user",
     app_with(g0(download_gbps="10")),
     422, ["gpus[0].download_gbps"]),
    ("commitment 5", "POST", APPS, "user",
     app_with(infra(commitment_months=5)),
     422, ["infrastructure.commitment_months"]),
    ("commitment 24", "POST", APPS, "user",
     app_with(infra(commitment_months=24)),
     422, ["infrastructure.commitment_months"]),
    # --- bad values
    ("bad email", "POST", APPS, "user",
     app_with(contact(email="not-an-email")),
     422, ["contact.email"]),
    ("email without TLD", "POST", APPS, "user",
     app_with(contact(email="ada@localhost")),
     422, ["contact.email"]),
    ("email with header injection", "POST", APPS, "user",
     app_with(contact(email="a@example.com\r\nBcc: x@example.com")),
     422, ["contact.email"]),
    ("unknown model", "POST", APPS, "user",
     app_with(g0(model="h999-imaginary")),
     422, ["gpus[0].model"]),
    ("other without model_other", "POST", APPS, "user",
     app_with(g0(model="other", model_other=None)),
     422, ["gpus[0].model_other"]),
    ("model_other with a catalog model", "POST", APPS, "user",
     app_with(g0(model="l4-24gb", model_other="My L4")),
     422, ["gpus[0].model_other"]),
    ("bad time zone", "POST", APPS, "user",
     app_with(avail(timezone="Mars/Olympus_Mons")),
     422, ["gpus[0].availability.timezone"]),
    ("bad availability kind", "POST", APPS, "user",
     app_with(avail(kind="sometimes")),
     422, ["gpus[0].availability.kind"]),
    ("no windows", "POST", APPS, "user",
     app_with(avail(windows=[])),
     422, ["gpus[0].availability.windows"]),
    ("window start 25:00", "POST", APPS, "user",
     app_with(avail(w_start="25:00")),
     422, ["gpus[0].availability.windows[0].start"]),
    ("window end 8pm", "POST", APPS, "user",
     app_with(avail(w_end="8pm")),
     422, ["gpus[0].availability.windows[0].end"]),
    # (An end before the start is a window past midnight: 22:00-06:00 is valid.)
    ("window end equals start", "POST", APPS, "user",
     app_with(avail(w_start="20:00", w_end="20:00")),
     422, ["gpus[0].availability.windows[0].end"]),
    ("window bad day", "POST", APPS, "user",
     app_with(avail(w_days=["mon", "funday"])),
     422, ["gpus[0].availability.windows[0].days"]),
    ("window repeated day", "POST", APPS, "user",
     app_with(avail(w_days=["mon", "mon"])),
     422, ["gpus[0].availability.windows[0].days"]),
    ("bad country code", "POST", APPS, "user",
     app_with(loc(country="XX")),
     422, ["gpus[0].location.country"]),
    ("lower-case country", "POST", APPS, "user",
     app_with(loc(country="it")),
     422, ["gpus[0].location.country"]),
    ("country name", "POST", APPS, "user",
     app_with(loc(country="Italy")),
     422, ["gpus[0].location.country"]),
    ("bad region", "POST", APPS, "user",
     app_with(loc(region="EU South!")),
     422, ["gpus[0].location.region"]),
    ("control character in name", "POST", APPS, "user",
     app_with(contact(full_name="Ada\u0007")),
     422, ["contact.full_name"]),
    # --- too long / too many / unknown
    ("name 201 chars", "POST", APPS, "user",
     app_with(contact(full_name="A" * 201)),
     422, ["contact.full_name"]),
    ("company 201 chars", "POST", APPS, "user",
     app_with(contact(company="C" * 201)),
     422, ["contact.company"]),
    ("notes 2001 chars", "POST", APPS, "user",
     app_with(infra(maintenance_notes="n" * 2001)),
     422, ["infrastructure.maintenance_notes"]),
    ("65 GPU entries", "POST", APPS, "user",
     app_with(set_key("gpus", [gpu_entry("l4-24gb", 1, 64, 1, 1)] * 65)),
     422, ["gpus"]),
    ("unknown top-level field", "POST", APPS, "user",
     app_with(set_key("favourite_colour", "green")),
     422, ["favourite_colour"]),
    ("unknown GPU field", "POST", APPS, "user", app_with(g0(vram_gb=80)), 422, ["gpus[0].vram_gb"]),
    ("unknown contact field", "POST", APPS, "user",
     app_with(contact(phone="+39 02 1234")),
     422, ["contact.phone"]),
    ("status smuggled in", "POST", APPS, "user",
     app_with(set_key("status", "approved")),
     422, ["status"]),
    ("several bad fields at once", "POST", APPS, "user",
     app_with(seq(g0(quantity=0), loc(country="XX"), infra(commitment_months=7))), 422,
     ["gpus[0].quantity", "gpus[0].location.country", "infrastructure.commitment_months"]),
    ("second entry bad", "POST", APPS, "user",
     app_with(lambda b: b["gpus"][1].update(quantity=0)),
     422, ["gpus[1].quantity"]),
    # --- editing the draft
    ("PUT malformed JSON", "PUT", APPS + "/{draft}", "owner",
     ("raw", "{,}", "application/json"),
     400, ["body"]),
    ("PUT array", "PUT", APPS + "/{draft}", "owner", [], 422, ["body"]),
    ("PUT with submit", "PUT", APPS + "/{draft}", "owner",
     app_with(lambda b: None, True),
     422, ["submit"]),
    ("PUT quantity 0", "PUT", APPS + "/{draft}", "owner",
     app_with(g0(quantity=0)),
     422, ["gpus[0].quantity"]),
    ("PUT unknown model", "PUT", APPS + "/{draft}", "owner",
     app_with(g0(model="gtx-1080")),
     422, ["gpus[0].model"]),
    ("PUT notes 2001", "PUT", APPS + "/{draft}", "owner",
     app_with(infra(maintenance_notes="x" * 2001)),
     422, ["infrastructure.maintenance_notes"]),
    # --- decisions
    ("decision unknown value", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "maybe"},
     422, ["decision"]),
    ("decision missing", "POST", APPS + "/{submitted}/decision", "admin",
     {"tier": "community"},
     422, ["decision"]),
    ("decision as number", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": 1},
     422, ["decision"]),
    ("approve without tier", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "approve"},
     422, ["tier"]),
    ("approve unknown tier", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "approve", "tier": "platinum"},
     422, ["tier"]),
    ("approve enterprise without UPS", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "approve", "tier": "enterprise"},
     422, ["tier"]),
    ("reject without message", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "reject"},
     422, ["message"]),
    # (Rows that a lax server might accept target applications of their own, so that one
    # wrong acceptance does not change what the other rows see.)
    ("reject with blank message", "POST", APPS + "/{submitted2}/decision", "admin",
     {"decision": "reject", "message": ""},
     422, ["message"]),
    ("request_info with blank message", "POST", APPS + "/{submitted3}/decision", "admin",
     {"decision": "request_info", "message": " \n "},
     422, ["message"]),
    ("approve with tier null", "POST", APPS + "/{submitted4}/decision", "admin",
     {"decision": "approve", "tier": None},
     422, ["tier"]),
    ("request_info without message", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "request_info"},
     422, ["message"]),
    ("tier for reject", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "reject", "tier": "community", "message": "no"},
     422, ["tier"]),
    ("decision unknown field", "POST", APPS + "/{submitted}/decision", "admin",
     {"decision": "approve", "tier": "community", "bonus": 1},
     422, ["bonus"]),
    ("decision array body", "POST", APPS + "/{submitted}/decision", "admin",
     ["approve"],
     422, ["body"]),
    ("decision malformed JSON", "POST", APPS + "/{submitted}/decision", "admin",
     ("raw", "decision=approve", "application/json"),
     400, ["body"]),
    ("override_suggestion as string", "POST", APPS + "/{submitted2}/decision", "admin",
     {"decision": "approve", "tier": "community", "override_suggestion": "yes"},
     422, ["override_suggestion"]),
    ("override_suggestion on reject", "POST", APPS + "/{submitted3}/decision", "admin",
     {"decision": "reject", "message": "no", "override_suggestion": True},
     422, ["override_suggestion"]),
    # --- submission replies (only in needs_info; the draft is complete, so a lax server
    # would submit it)
    ("submit reply on a first submission", "POST", APPS + "/{draft}/submit", "owner",
     {"reply": "Here is more."},
     422, ["reply"]),
    ("submit reply as number", "POST", APPS + "/{draft}/submit", "owner",
     {"reply": 5},
     422, ["reply"]),
    ("submit reply 4001 chars", "POST", APPS + "/{draft}/submit", "owner",
     {"reply": "r" * 4001},
     422, ["reply"]),
    ("submit unknown field", "POST", APPS + "/{draft}/submit", "owner",
     {"reply": "x", "status": "approved"},
     422, ["status"]),
    ("submit array body", "POST", APPS + "/{draft}/submit", "owner",
     ["reply"],
     422, ["body"]),
    ("submit malformed JSON", "POST", APPS + "/{draft}/submit", "owner",
     ("raw", "reply=x", "application/json"),
     400, ["body"]),
    # --- sign-up and log-in
    ("sign-up bad email", "POST", f"{API}/auth/signup", "anon",
     {"email": "nobody", "password": "long-enough-pw", "name": "N"},
     422, ["email"]),
    ("sign-up short password", "POST", f"{API}/auth/signup", "anon",
     {"email": unique_email(), "password": "short", "name": "N"},
     422, ["password"]),
    # (A taken email is no bad input: it gets the answer a free one gets, and its owner an
    # email; test_email_verification.)
    ("sign-up common password", "POST", f"{API}/auth/signup", "anon",
     {"email": unique_email(), "password": "Password123!", "name": "N"},
     422, ["password"]),
    ("sign-up password is the email", "POST", f"{API}/auth/signup", "anon",
     {"email": "pat.smith@example.com", "password": "Pat.Smith@Example.com", "name": "N"},
     422, ["password"]),
    ("sign-up password from the name", "POST", f"{API}/auth/signup", "anon",
     {"email": unique_email(), "password": "Rosalind1953!", "name": "Rosalind Franklin"},
     422, ["password"]),
    ("sign-up password of one character", "POST", f"{API}/auth/signup", "anon",
     {"email": unique_email(), "password": "zzzzzzzzzzzz", "name": "N"},
     422, ["password"]),
    ("sign-up name of invisible characters", "POST", f"{API}/auth/signup", "anon",
     {"email": unique_email(), "password": "long-enough-pw", "name": "\u200b\u202e\u2066"},
     422, ["name"]),
    ("sign-up taken email with a weak password", "POST", f"{API}/auth/signup", "anon",
     {"email": "{owner_email_upper}", "password": "aaaaaaaaaa", "name": "N"},
     422, ["password"]),
    # --- email verification
    ("verify-email without token", "POST", f"{API}/auth/verify-email", "anon",
     {}, 422, ["token"]),
    ("verify-email token not a string", "POST", f"{API}/auth/verify-email", "anon",
     {"token": 42}, 422, ["token"]),
    ("verify-email made-up token", "POST", f"{API}/auth/verify-email", "anon",
     {"token": "dXNyX3gKYUBiLmMKOTk5OTk5OTk5OQ.AAAA"}, 422, ["token"]),
    ("verify-email token too long", "POST", f"{API}/auth/verify-email", "anon",
     {"token": "a" * 2000}, 422, ["token"]),
    ("verify-email unknown field", "POST", f"{API}/auth/verify-email", "anon",
     {"token": "x.y", "email": "a@example.com"}, 422, ["email"]),
    ("resend link without email", "POST", f"{API}/me/emails/resend", "owner",
     {}, 422, ["email"]),
    ("resend link email too long", "POST", f"{API}/me/emails/resend", "owner",
     {"email": "a" * 300 + "@example.com"}, 422, ["email"]),
    ("resend link to another's address", "POST", f"{API}/me/emails/resend", "owner",
     {"email": "{user_email}"}, 404, []),
    ("resend link to a verified address", "POST", f"{API}/me/emails/resend", "owner",
     {"email": "{owner_email}"}, 409, []),
    ("sign-up missing name", "POST", f"{API}/auth/signup", "anon",
     {"email": unique_email(), "password": "long-enough-pw"},
     422, ["name"]),
    ("sign-up asks for admin", "POST", f"{API}/auth/signup", "anon",
     {"email": unique_email(), "password": "long-enough-pw", "name": "N", "roles": ["admin"]},
     422, ["roles"]),
    ("sign-up malformed JSON", "POST", f"{API}/auth/signup", "anon",
     ("raw", "{'email': 1}", "application/json"),
     400, ["body"]),
    ("sign-up wrong Content-Type", "POST", f"{API}/auth/signup", "anon",
     ("raw", '{"email": "a@example.com"}', "text/json"),
     400, ["body"]),
    ("log-in email as number", "POST", f"{API}/auth/login", "anon",
     {"email": 5, "password": "x"},
     422, ["email"]),
    ("log-in missing password", "POST", f"{API}/auth/login", "anon",
     {"email": "{owner_email}"},
     422, ["password"]),
    # --- lists
    ("applications limit=0", "GET", APPS + "?limit=0", "admin", None, 422, ["limit"]),
    ("applications limit=201", "GET", APPS + "?limit=201", "admin", None, 422, ["limit"]),
    ("applications limit=abc", "GET", APPS + "?limit=abc", "admin", None, 422, ["limit"]),
    ("applications cursor garbage", "GET", APPS + "?cursor=%25%25garbage%21", "admin",
     None,
     422, ["cursor"]),
    ("applications cursor not ours", "GET", APPS + "?cursor=aGVsbG8", "user",
     None,
     422, ["cursor"]),
    ("applications bad status", "GET", APPS + "?status=pending", "admin", None, 422, ["status"]),
    ("applications sort=age", "GET", APPS + "?status=submitted&sort=age", "admin",
     None,
     422, ["sort"]),
    ("applications sort=NEWEST", "GET", APPS + "?sort=NEWEST", "user", None, 422, ["sort"]),
    ("applications q 101 chars", "GET", APPS + "?q=" + "q" * 101, "admin", None, 422, ["q"]),
    ("applications mine=yes", "GET", APPS + "?mine=yes", "admin", None, 422, ["mine"]),
    ("applications mine and bad limit", "GET", APPS + "?mine=1&limit=0", "user",
     None,
     422, ["mine", "limit"]),
    ("notifications limit=0", "GET", f"{API}/notifications?limit=0", "user", None, 422, ["limit"]),
    ("notifications limit=101", "GET", f"{API}/notifications?limit=101", "user",
     None,
     422, ["limit"]),
    ("notifications cursor garbage", "GET", f"{API}/notifications?cursor=zzz", "user",
     None,
     422, ["cursor"]),
    ("notifications unread=maybe", "GET", f"{API}/notifications?unread=maybe", "user",
     None,
     422, ["unread"]),
    # --- API keys and catalog
    ("API key without name", "POST", f"{API}/api-keys", "user", {}, 422, ["name"]),
    ("API key name as number", "POST", f"{API}/api-keys", "user", {"name": 5}, 422, ["name"]),
    ("API key name 101 chars", "POST", f"{API}/api-keys", "user",
     {"name": "k" * 101},
     422, ["name"]),
    # --- machine names (PATCH /machines/{id}), by a provider (the route needs the role):
    # the body is checked before the machine is looked up, so an unknown machine id is
    # enough here
    ("machine name missing", "PATCH", f"{API}/machines/mch_nosuch", "provider", {}, 422, ["name"]),
    ("machine name empty", "PATCH", f"{API}/machines/mch_nosuch", "provider", {"name": ""},
     422, ["name"]),
    ("machine name blank", "PATCH", f"{API}/machines/mch_nosuch", "provider", {"name": "   "},
     422, ["name"]),
    ("machine name 101 chars", "PATCH", f"{API}/machines/mch_nosuch", "provider",
     {"name": "m" * 101},
     422, ["name"]),
    ("machine name with a line break", "PATCH", f"{API}/machines/mch_nosuch", "provider",
     {"name": "rack\n1"},
     422, ["name"]),
    ("machine name as number", "PATCH", f"{API}/machines/mch_nosuch", "provider", {"name": 7},
     422, ["name"]),
    ("machine unknown field", "PATCH", f"{API}/machines/mch_nosuch", "provider",
     {"name": "rack-1", "colour": "red"},
     422, ["colour"]),
    ("GPU model bad id", "POST", f"{API}/gpu-models", "admin",
     dict(MODEL, id="B200 Big"),
     422, ["id"]),
    ("GPU model id other", "POST", f"{API}/gpu-models", "admin",
     dict(MODEL, id="other"),
     422, ["id"]),
    ("GPU model existing id", "POST", f"{API}/gpu-models", "admin",
     dict(MODEL, id="h100-sxm-80gb"),
     409, ["id"]),
    ("GPU model missing fields", "POST", f"{API}/gpu-models", "admin",
     {"id": "x-1"},
     422, ["name", "vram_gb", "default_price_micro"]),
    ("GPU model vram 0", "POST", f"{API}/gpu-models", "admin",
     dict(MODEL, vram_gb=0),
     422, ["vram_gb"]),
    # --- size
    ("body over 1 MiB", "POST", APPS, "user",
     ("raw", json.dumps({"contact": {"full_name": "x" * (ONE_MIB + 16)}}), "application/json"),
     413, ["body"]),
    ("sign-up body over 1 MiB", "POST", f"{API}/auth/signup", "anon",
     ("raw", " " * (ONE_MIB + 1), "application/json"),
     413, ["body"]),
    ("PUT body 2 MiB", "PUT", APPS + "/{draft}", "owner",
     ("raw", "[" + "1," * ONE_MIB + "1]", "application/json"),
     413, ["body"]),
]


class BadInputsMixin:

    def test_table_has_enough_rows(self):
        self.assertGreaterEqual(len(ROWS), 45)
        names = [r[0] for r in ROWS]
        self.assertEqual(len(names), len(set(names)), "row names must be unique")

    def test_bad_requests_are_refused_and_change_nothing(self):
        srv = self.srv
        admin = srv.admin()
        user = srv.user("Una User")
        owner = srv.user("Otto Owner")
        r = owner.c.post(APPS, community_application(unique_email("otto")))
        self.assertStatus(r, 201)
        draft = r.body["id"]
        ctx = {"draft": draft, "owner_email": owner.email,
               "owner_email_upper": owner.email.upper(), "user_email": user.email}
        for key in ("submitted", "submitted2", "submitted3", "submitted4"):
            applicant = srv.user(f"Vera {key}")
            body = community_application(unique_email("vera"))
            body["submit"] = True
            r = applicant.c.post(APPS, body)
            self.assertStatus(r, 201)
            self.assertEqual(r.body["status"], "submitted")
            ctx[key] = r.body["id"]
        submitted = ctx["submitted"]
        provider, _, _ = approved_provider(srv, admin, "Pia")
        who = {"anon": srv.client(), "user": user.c, "owner": owner.c, "admin": admin.c,
               "provider": provider.c}
        # Let the emails of the setup go out first: the outbox must be still afterwards.
        self.sink.wait_for(lambda ms: len(ms) >= 4, 15, "the setup's emails")
        self._wait_outbox_idle()

        before = self._snapshot()
        failures = []
        for name, method, path, principal, body, status, fields in ROWS:
            path = fill_placeholders(path, ctx)
            client = who[principal]
            if isinstance(body, tuple) and body[0] == "raw":
                resp = client.request(method, path, raw=body[1], content_type=body[2])
            else:
                resp = client.request(method, path, fill_placeholders(body, ctx))
            with self.subTest(row=name):
                try:
                    self.assertError(resp, status, fields=fields, msg=f"[{name}]")
                except AssertionError as e:
                    failures.append(f"{name}: {e}")
                    raise
        after = self._snapshot()
        self.maxDiff = None
        self.assertEqual(before, after, "a rejected request changed the database")
        self.assertFalse(failures, "\n".join(failures))

        # The drafts and submitted applications are as they were.
        self.assertEqual(owner.c.get(f"{APPS}/{draft}").body["status"], "draft")
        for key in ("submitted", "submitted2", "submitted3", "submitted4"):
            self.assertEqual(admin.c.get(f"{APPS}/{ctx[key]}").body["status"], "submitted",
                             key)

    # -- helpers

    def _wait_outbox_idle(self, timeout=15):
        import time
        deadline = time.monotonic() + timeout
        while True:
            # Held emails wait for their unverified addresses (the applicants' contacts).
            rows = self.srv.backend.query(
                "SELECT COUNT(*) FROM email_outbox WHERE status NOT IN ('sent', 'held')")
            if rows[0][0] == 0:
                return
            if time.monotonic() > deadline:
                self.fail(f"outbox not drained: {self.srv.outbox()}")
            time.sleep(0.1)

    def _snapshot(self):
        b = self.srv.backend
        snap = {}
        # Every table's row count in one query.
        counted = [t for t in b.tables() if t not in GROWING_TABLES]
        snap.update(b.query(" UNION ALL ".join(f"SELECT '{t}', COUNT(*) FROM {t}"
                                               for t in counted)))
        rows = b.query("SELECT id, status, body, suggested_tier, COALESCE(tier, ''), updated_at "
                       "FROM provider_applications ORDER BY id")
        h = hashlib.sha256()
        for row in rows:
            h.update(json.dumps([str(c) for c in row]).encode())
        snap["provider_applications checksum"] = h.hexdigest()
        rows = b.query("SELECT id, COALESCE(revoked_at, 0), COALESCE(last_used_at, 0) "
                       "FROM api_keys ORDER BY id")
        snap["api_keys state"] = [tuple(str(c) for c in r) for r in rows]
        rows = b.query("SELECT user_id, role FROM user_roles ORDER BY user_id, role")
        snap["user_roles"] = [tuple(r) for r in rows]
        return snap


class BadInputsSqliteTest(BadInputsMixin, ServerTestCase):
    BACKEND = "sqlite"


class BadInputsPostgresTest(BadInputsMixin, ServerTestCase):
    BACKEND = "postgresql"


if __name__ == "__main__":
    unittest.main()
