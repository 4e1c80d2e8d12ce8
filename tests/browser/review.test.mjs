// The provider-application review flow in a real browser against a real gpunexd
// (hardening issue, items 11 and 13): an applicant applies; the admin lands on the review
// queue, which shows a count, searches and sorts; nothing is preselected in the decision;
// the admin asks for more information and the panel shows who asked, when and what; the
// applicant answers in the reply box, edits a field and resubmits (the first submission
// time is kept; the history shows the reply and the edit's old and new values); the admin
// chooses Enterprise against the Community suggestion, is warned and must confirm, decides,
// and the panel shows the outcome. The Roles page asks only for the user's own
// applications (?mine=true), checked on the wire. Screenshots of every step at desktop and
// phone width.
//
// Run: ctest -R browser_review (see harness.mjs for the environment).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ADMIN,
  DESKTOP,
  Gpunexd,
  launchBrowser,
  shoot,
  uniqueEmail,
  unlabelled,
  watch,
} from "./harness.mjs";

const PASSWORD = "correct-horse-battery";

let server;
let browser;

before(async () => {
  server = new Gpunexd();
  server.createAdmin();
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.cleanup();
});

async function newPage() {
  const context = await browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const problems = watch(page);
  // Every list request for provider applications, as sent.
  const listRequests = [];
  page.on("request", (req) => {
    const url = new URL(req.url());
    if (
      url.pathname === "/api/v1/provider-applications" &&
      req.method() === "GET"
    )
      listRequests.push(url);
  });
  return { context, page, problems, listRequests };
}

async function heading(page, text) {
  await page.getByRole("heading", { level: 1, name: text }).waitFor();
}

async function expectLabelled(page, where) {
  assert.deepEqual(
    await unlabelled(page),
    [],
    `form controls without a label on ${where}`,
  );
}

function nav(page, name) {
  return page.locator("header nav").getByRole("link", { name });
}

function statusBadge(page) {
  return page.locator(".page-header .badge").first();
}

// An application submitted through the API by a new user (the queue's other entries).
async function submittedBy(name, company) {
  const email = uniqueEmail(name.split(" ")[0].toLowerCase());
  await server.apiOk("POST", "/auth/signup", {
    email,
    password: PASSWORD,
    name,
  });
  const login = await server.apiOk("POST", "/auth/login", {
    email,
    password: PASSWORD,
  });
  return server.apiOk(
    "POST",
    "/provider-applications",
    {
      submit: true,
      contact: { full_name: name, email, company },
      gpus: [
        {
          model: "l4-24gb",
          model_other: null,
          quantity: 1,
          system_ram_gb: 64,
          upload_gbps: 0.5,
          download_gbps: 0.5,
          availability: { kind: "always" },
          location: { city: "Lyon", country: "FR", region: null },
        },
      ],
      infrastructure: {
        ups: false,
        commitment_months: 0,
        maintenance_notes: "",
      },
    },
    login.token,
  );
}

describe("review flow", () => {
  test(
    "apply, request information, reply, edit, resubmit, override the suggestion, decide",
    { timeout: 150000 },
    async () => {
      const applicant = await newPage();
      const admin = await newPage();
      const p = applicant.page;
      const a = admin.page;
      try {
        // Two others in the queue before ours.
        await submittedBy("Olga Older", "Older Racks");
        await submittedBy("Nina Nearly", "Nearly GPUs");

        // --- the applicant signs up (Roles) and applies
        await p.goto(server.base + "/#/signup");
        await heading(p, "Create your gpunex account");
        await p.getByLabel("Your name").fill("Quentin Quick");
        const email = uniqueEmail("quentin");
        await p.getByLabel("Email").fill(email);
        await p.getByLabel("Password").fill(PASSWORD);
        await p.getByRole("button", { name: "Create account" }).click();
        await heading(p, "Your roles");
        await p.getByRole("link", { name: "Apply to provide GPUs" }).waitFor();
        await shoot(p, "review-01-roles");

        await p.getByRole("link", { name: "Apply to provide GPUs" }).click();
        await heading(p, "Apply to provide GPUs");
        await p.getByLabel("Company (optional)").fill("Quick Compute");
        const entry = p.locator("fieldset.gpu-entry").nth(0);
        await entry.getByLabel("GPU model").selectOption("l4-24gb");
        await entry.getByLabel("Quantity (GPUs)").fill("2");
        await entry.getByLabel("System RAM (GB)").fill("128");
        await entry.getByLabel(/^Upload/).fill("1");
        await entry.getByLabel(/^Download/).fill("1");
        await entry.getByLabel("Weekly schedule").check();
        await entry.getByLabel("Time zone").selectOption("Europe/Rome");
        const win = entry.locator("fieldset.window").first();
        for (const day of ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
          await win
            .getByLabel(day, { exact: true })
            .setChecked(["Mon", "Tue", "Wed", "Thu", "Fri"].includes(day));
        await win.getByLabel("From").fill("09:00");
        await win.getByLabel("Until").fill("18:00");
        await entry.getByLabel("City").fill("Milan");
        // A picker by name: what is shown is the country, what is sent its code.
        await entry.getByLabel("Country").selectOption("IT");
        assert.equal(
          await entry
            .getByLabel("Country")
            .evaluate((s) => s.selectedOptions[0].textContent),
          "Italy (IT)",
        );
        assert.equal(
          await entry
            .getByLabel("Country")
            .locator("option[value=DE]")
            .textContent(),
          "Germany (DE)",
        );
        await p.getByLabel("The machines are protected by a UPS").check();
        await p.getByLabel("Commitment period").selectOption("12");
        await p.getByRole("button", { name: "Submit application" }).click();
        await heading(p, "Your provider application");
        assert.equal(
          await statusBadge(p).textContent(),
          "Submitted: in review",
        );
        await shoot(p, "review-02-submitted");
        const appId = p.url().split("/applications/")[1];
        const mineBefore = await server.apiOk("POST", "/auth/login", {
          email,
          password: PASSWORD,
        });
        const first = await server.apiOk(
          "GET",
          `/provider-applications/${appId}`,
          undefined,
          mineBefore.token,
        );
        assert.ok(first.submitted_at);
        assert.equal(first.resubmitted_at, null);

        // --- the admin logs in and lands on the queue: a count, a search, a sort
        await a.goto(server.base + "/#/login");
        await heading(a, "Log in");
        await a.getByLabel("Email").fill(ADMIN.email);
        await a.getByLabel("Password").fill(ADMIN.password);
        await a.getByRole("button", { name: "Log in" }).click();
        await heading(a, "Review queue");
        const count = a.locator(".queue-count");
        await count
          .filter({ hasText: "3 applications · awaiting a decision" })
          .waitFor();
        const names = () =>
          a.locator("table.queue tbody .applicant-name").allTextContents();
        assert.deepEqual(
          await names(),
          ["Olga Older", "Nina Nearly", "Quentin Quick"],
          "oldest first",
        );
        await expectLabelled(a, "the review queue");
        await shoot(a, "review-03-queue");

        await a.getByLabel("Sort").selectOption("newest");
        await a.waitForURL(/sort=newest/);
        await a
          .locator("table.queue tbody tr")
          .first()
          .filter({ hasText: "Quentin Quick" })
          .waitFor();
        assert.deepEqual(
          await names(),
          ["Quentin Quick", "Nina Nearly", "Olga Older"],
          "newest first",
        );
        await a.getByLabel("Search").fill("quick COMPUTE");
        await a.getByLabel("Search").press("Enter");
        await count
          .filter({ hasText: "1 application · awaiting a decision · matching" })
          .waitFor();
        assert.deepEqual(await names(), ["Quentin Quick"]);
        assert.equal(
          await a.getByLabel("Sort").inputValue(),
          "newest",
          "the sort is kept",
        );
        await shoot(a, "review-04-queue-search");
        await a.getByLabel("Search").fill("nobody at all");
        await a.getByLabel("Search").press("Enter");
        await a.getByText("No applications match the search.").waitFor();
        await count.filter({ hasText: "0 applications" }).waitFor();
        await a.getByLabel("Search").fill("Quentin");
        await a.getByLabel("Search").press("Enter");
        await count.filter({ hasText: "1 application" }).waitFor();

        // --- the review page: nothing preselected
        await a
          .getByRole("link", {
            name: "Review the application of Quentin Quick",
          })
          .click();
        await heading(a, "Application from Quentin Quick");
        assert.equal(
          await a.locator(".decision input[type=radio]:checked").count(),
          0,
          "no decision preselected",
        );
        assert.equal(
          await a.getByLabel("Tier").isVisible(),
          false,
          "no tier before Approve",
        );
        await a
          .getByText("not available 24/7 on every GPU entry")
          .first()
          .waitFor();
        await expectLabelled(a, "the review page");
        await shoot(a, "review-05-review");
        await a.getByRole("button", { name: "Decide" }).click();
        await a.locator('.field-error[data-path="decision"]').waitFor();
        await a.getByLabel("Request more information").check();
        await a
          .getByLabel("What information is needed")
          .fill("Which UPS model protects the rack?");
        await a.getByRole("button", { name: "Request information" }).click();
        await a.getByText("Information requested.").waitFor();
        assert.equal(
          await statusBadge(a).textContent(),
          "More information needed",
        );
        const outcome = a.locator(".outcome");
        await outcome.getByText("More information requested").waitFor();
        await outcome.getByText(/^by Rita Reviewer · /).waitFor();
        await outcome.getByText("Which UPS model protects the rack?").waitFor();
        assert.equal(
          await a
            .getByText("Only submitted applications can be decided")
            .count(),
          0,
        );
        await shoot(a, "review-06-info-requested");

        // --- the applicant replies, edits a field and resubmits
        await nav(p, "Roles").click();
        await heading(p, "Your roles");
        await p.getByRole("link", { name: "Edit and resubmit" }).click();
        await heading(p, "Your provider application");
        await p
          .locator(".reviewer-message")
          .getByText("Which UPS model protects the rack?")
          .waitFor();
        const reply = p.getByLabel("Your reply to the reviewer (optional)");
        await reply.fill("An APC Smart-UPS SRT 5000, 40 minutes at full load.");
        await p
          .locator("fieldset.gpu-entry")
          .nth(0)
          .getByLabel(/^Upload/)
          .fill("2.5");
        await expectLabelled(p, "the needs-info page");
        await shoot(p, "review-07-reply");
        await p.getByRole("button", { name: "Resubmit application" }).click();
        await p
          .getByText("Application resubmitted: it is back in review.")
          .waitFor();
        assert.equal(
          await statusBadge(p).textContent(),
          "Submitted: in review",
        );
        const timeline = p.locator(".timeline");
        const replied = timeline.locator(".event-reply");
        await replied.getByText("Replied to the reviewer").waitFor();
        await replied
          .getByText("An APC Smart-UPS SRT 5000, 40 minutes at full load.")
          .waitFor();
        const edited = timeline.locator(".event-updated");
        assert.equal(await edited.count(), 1, "one Edited entry");
        const change = edited.locator(
          '.change[data-field="gpus[0].upload_gbps"]',
        );
        assert.match(
          await change.locator(".change-field").textContent(),
          /^GPU entry 1 · Upload/,
        );
        assert.equal(await change.locator("del").textContent(), "1");
        assert.equal(await change.locator("ins").textContent(), "2.5");
        assert.equal(
          await edited.locator(".change").count(),
          1,
          "only the field that changed",
        );
        assert.match(
          await p.locator(".page-header .app-status").textContent(),
          /resubmitted/,
        );
        await shoot(p, "review-08-resubmitted");
        const again = await server.apiOk(
          "GET",
          `/provider-applications/${appId}`,
          undefined,
          mineBefore.token,
        );
        assert.equal(
          again.submitted_at,
          first.submitted_at,
          "the first submission time is kept",
        );
        assert.ok(again.resubmitted_at > first.submitted_at);

        // --- the admin: back in the queue, the override warning, the decision
        await a.getByRole("link", { name: "Back to the queue" }).click();
        await heading(a, "Review queue");
        await count.filter({ hasText: "3 applications" }).waitFor();
        assert.deepEqual(
          await names(),
          ["Olga Older", "Nina Nearly", "Quentin Quick"],
          "kept its place",
        );
        await a
          .getByRole("link", {
            name: "Review the application of Quentin Quick",
          })
          .click();
        await heading(a, "Application from Quentin Quick");
        await a
          .locator(".timeline .event-reply")
          .getByText("An APC Smart-UPS SRT 5000")
          .waitFor();
        await a
          .locator('.timeline .change[data-field="gpus[0].upload_gbps"] ins')
          .getByText("2.5")
          .waitFor();
        assert.equal(
          await a.locator(".decision input[type=radio]:checked").count(),
          0,
          "no decision preselected",
        );
        await a.getByLabel("Approve").check();
        const tierHint = a.locator(".decision .field .hint").first();
        assert.match(
          await tierHint.textContent(),
          /^Suggested: Community \(for the reasons listed above\)\.$/,
        );
        assert.equal(
          await a.getByLabel("Tier").inputValue(),
          "community",
          "the suggestion is preselected",
        );
        const warning = a.locator(".override-warning");
        assert.equal(
          await warning.isVisible(),
          false,
          "no warning for the suggested tier",
        );
        await a.getByLabel("Tier").selectOption("enterprise");
        await warning.waitFor();
        assert.match(
          await warning.textContent(),
          /Enterprise differs from the suggested tier, Community: not available 24\/7/,
        );
        await a.getByRole("button", { name: "Approve" }).click();
        await a
          .locator('.field-error[data-path="override_suggestion"]')
          .waitFor();
        await expectLabelled(a, "the decision with the override warning");
        await shoot(a, "review-09-override-warning");
        await a.getByLabel("Confirm: decide against the suggestion").check();
        await a
          .getByLabel("Message to the applicant (optional)")
          .fill("Welcome aboard.");
        await a.getByRole("button", { name: "Approve" }).click();
        await a.getByText("Approved as Enterprise.").waitFor();
        assert.equal(await statusBadge(a).textContent(), "Approved");
        await outcome.getByText("Approved as Enterprise").waitFor();
        await outcome.getByText(/^by Rita Reviewer · /).waitFor();
        await outcome
          .getByText("Against the suggested tier, Community.")
          .waitFor();
        await outcome.getByText("Welcome aboard.").waitFor();
        await a.locator(".timeline .event-approve .override-note").waitFor();
        await shoot(a, "review-10-approved");

        // --- Roles asks for the user's own applications only
        await nav(a, "Roles").click();
        await heading(a, "Your roles");
        await a.getByRole("link", { name: "Apply to provide GPUs" }).waitFor();
        await shoot(a, "review-11-admin-roles");
        for (const { listRequests, who } of [
          { listRequests: applicant.listRequests, who: "applicant" },
          {
            listRequests: admin.listRequests.filter(
              (u) => !u.searchParams.has("status"),
            ),
            who: "admin",
          },
        ]) {
          assert.ok(
            listRequests.length >= 1,
            `${who}: the Roles page asked for applications`,
          );
          for (const url of listRequests)
            assert.equal(
              url.searchParams.get("mine"),
              "true",
              `${who}: ${url}`,
            );
        }
        assert.deepEqual(applicant.problems, []);
        assert.deepEqual(admin.problems, []);
      } finally {
        await applicant.context.close();
        await admin.context.close();
      }
    },
  );
});
