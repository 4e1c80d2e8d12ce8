// The money side of the dashboard in a real browser against a real gpunexd and
// gpunex-agent. Rentals, balances and the ledger (issue 14), with an agent whose
// workloads run in a private Docker engine (harness.mjs TestDockerd: dockerd.sh, as the
// e2e tests start one; the image imported from the host's static busybox, nothing
// pulled; the test skips with the reason without root, dockerd or busybox-static): a
// visitor's Rent goes through log-in back to the offer, where a customer without
// balance is refused beside the balance; an admin credits the customer (an unknown user
// refused beside its field first, then found by part of her email) and the ledger check
// balances; the Balance page shows the credit, the statement filtered by days and its
// CSV link with the same query; the Marketplace's Rent form reports every wrong field
// at once (image, command, environment, ports, registry user) and a refused maximum
// duration beside their fields, and a request whose answer is lost is retried with the
// same Idempotency-Key (one rental); the rental runs in a container with the command
// and environment typed, its output followed, its cost counting up between meter ticks,
// the low-balance warning; its HTTP port opens the container's page in a new tab, a
// file uploaded lands in the container and a folder downloads as a tar, a shell in the
// container follows the window's size, the SSH card gives the gateway's commands and
// host key; it shows on the Rentals page, and Stop (asked first) ends it as stopped by
// the customer (the container's last words shown, the container removed); the statement
// groups its charges in one row; the provider's Overview lists it with the customer's
// pseudonym, its end terms and the commission; a job is placed and links to its rental;
// a workload that exits by itself is not "ended by the customer". Earnings, payouts and
// top-ups (issue 15), on a gpunexd of their own with the Solana test node
// (tests/solana/rpc-front.mjs), SEPA and ACH set up and a clock moved forward: the
// provider's Earnings tab (the period, pending/available/in payment/paid, per GPU,
// model and day with the chart and CSV, a range of days, the monthly statement); the
// Payments tab with each method's terms, a wallet refused as it is typed, a wrong
// password refused beside its field, the Solana method saved with its USDC token
// account (the one the payout reached), a bad IBAN and ABA number refused as typed, the
// schedule, SEPA saved with the hold explained, the history with the signature,
// attempts and lines as CSV; an admin's weekly run paid on Solana (the signature, its
// memo on chain), the wallet and the runs list, a monthly SEPA run whose file is
// downloaded, marked sent, failed, retried, sent again and paid; a customer's top-up
// with its link and QR code, paid from a wallet with tests/solana/pay.mjs and credited.
// Without Solana or bank accounts the methods are shown disabled with why, and a top-up
// says it is not offered.
//
// The provider's side and the account are in dashboard.test.mjs, which ctest runs beside
// this file; the helpers both use are in dashboard_lib.mjs. Nothing here needs that
// walk's state: each test approves its providers through the API
// (Gpunexd.approvedProvider; the application, review and approval in the browser are
// dashboard.test.mjs's provider journey) and makes its own customers, on this file's
// gpunexd.
//
// Run: ctest -R browser_dashboard_money (see harness.mjs for the environment).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import {
  ADMIN,
  Agent,
  badAmounts,
  DESKTOP,
  dockerMissing,
  Gpunexd,
  shoot,
  sleep,
  SMALL_PHONE,
  SolanaFront,
  TestDockerd,
  uniqueEmail,
  until,
  usdcShown,
} from "./harness.mjs";
import {
  expectLabelled,
  heading,
  logIn,
  logInByKeyboard,
  nav,
  newPage,
  PASSWORD,
  server,
  signUp,
  useSuiteServer,
} from "./dashboard_lib.mjs";

useSuiteServer();

// The workload image of the rentals test, imported into its private dockerd.
const BUSYBOX_REF = "gpunex-test/busybox:1";
// A rental's command (typed as `/bin/sh -c 'SCRIPT'` in the Command field): prints its
// environment, then a step a second; on SIGTERM (Stop) says so and ends at once.
// It also serves a page on its declared HTTP port 8080 (busybox httpd, in /scratch: the
// root file system is read-only).
const TRAINER_SCRIPT =
  "mkdir -p /scratch/www && echo '<h1>hello from the container</h1>' > /scratch/www/index.html && " +
  "httpd -p 8080 -h /scratch/www; " +
  "trap 'echo received SIGTERM; exit 143' TERM; " +
  'echo "training for $EPOCHS epochs, wandb $WANDB_MODE"; ' +
  "i=0; while :; do i=$((i+1)); echo step $i; sleep 1 & wait $!; done";
// A job's: runs until stopped.
const RENDER_SCRIPT = "trap 'exit 0' TERM; echo rendering; sleep 3600 & wait";

// `text` as one shell word in single quotes (what a user types in the Command field).
function shellQuote(text) {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

// 123456 → "0.12", as the dashboard shows an amount (web/src/money.ts).
const usdcText = (micro) => usdcShown(micro);

// 123456 → "0.123456", 500000 → "0.50": the exact amount an amount's title gives on hover.
function exactText(micro) {
  const digits = String(Math.abs(micro)).padStart(7, "0");
  let frac = digits.slice(-6).replace(/0+$/, "");
  if (frac.length < 2) frac = frac.padEnd(2, "0");
  return `${micro < 0 ? "−" : ""}${digits.slice(0, -6)}.${frac}`;
}

describe("rentals and balances", () => {
  test(
    "rentals, balance, jobs, credits and the ledger",
    { timeout: 300000, skip: dockerMissing() ?? false },
    async (t) => {
      // A provider in us-east with two EMULATED L4 at 0.45 USDC/h whose agent runs
      // workloads in a private Docker engine with a busybox image.
      const docker = new TestDockerd();
      let agent = null;
      // The agent first, then the engine (and all it left behind).
      t.after(async () => {
        await agent?.stop();
        await docker.stop();
      });
      await docker.start();
      await docker.importBusybox(BUSYBOX_REF);
      const prov = await server.approvedProvider("Renata Rentals", PASSWORD, {
        region: "us-east",
        prices: { "l4-24gb": 450000 },
      });
      agent = new Agent(server, prov.agentToken, "l4-24gb:2", {
        name: "rental-agent",
        dockerSocket: docker.socket,
      });
      const offer = await until(
        async () =>
          (await server.apiOk("GET", "/offers?region=us-east")).items.find(
            (o) => o.gpus_available === 2,
          ),
        90000,
        "the provider's offer on the marketplace",
      ).catch((e) => {
        throw new Error(
          `${e.message}\n--- agent log ---\n${agent.logs()}\n--- gpunexd log ---\n${server.logs()}`,
        );
      });

      const cust = await newPage();
      const c = cust.page;
      const adm = await newPage();
      const a = adm.page;
      const anon = await newPage();
      const prv = await newPage();
      const p = prv.page;
      const email = uniqueEmail("carla");
      const keys = []; // the Idempotency-Key of every POST /rentals, in order
      c.on("request", (r) => {
        if (
          r.method() === "POST" &&
          new URL(r.url()).pathname === "/api/v1/rentals"
        )
          keys.push(r.headers()["idempotency-key"]);
      });
      try {
        await signUp(c, "Carla Customer", email);
        const me = await c.evaluate(async () =>
          (await fetch("/api/v1/me")).json(),
        );
        for (const link of ["Rentals", "Jobs", "Balance"])
          await nav(c, link).waitFor();
        assert.equal(await nav(c, "Credits & ledger").count(), 0);

        // --- a visitor's Rent sends them to log in, and back to the offer; with no
        // balance yet the API refuses, next to the balance
        const v = anon.page;
        await v.goto(`${server.base}/#/marketplace?region=us-east`);
        const anonCard = v.locator(`article[data-offer-id="${offer.id}"]`);
        await anonCard.getByRole("link", { name: /^Rent NVIDIA L4/ }).click();
        await heading(v, "Log in");
        await v.getByText("Log in to rent GPUs").waitFor();
        await v.getByLabel("Email").fill(email);
        await v.getByLabel("Password").fill(PASSWORD);
        await v.getByRole("button", { name: "Log in" }).click();
        await heading(v, "Rent GPUs");
        assert.equal(
          new URL(v.url()).hash,
          `#/rent/${encodeURIComponent(offer.id)}`,
        );
        await expectLabelled(v, "the Rent page");
        await v.getByLabel("Image").fill(BUSYBOX_REF);
        await v.getByRole("button", { name: "Start the rental" }).click();
        const balanceError = v.locator(
          '[data-field="balance"] .field-error[data-path="balance"]',
        );
        await balanceError.waitFor();
        assert.match(await balanceError.textContent(), /\S/);
        // ... with the way to more funds beside it
        const topUpLink = v
          .locator(".balance-line .topup-hint")
          .getByRole("link", { name: "Top up your balance" });
        await topUpLink.waitFor();
        assert.equal(await topUpLink.getAttribute("href"), "#/balance/top-up");
        await anon.context.close();

        // --- the admin credits Carla: an unknown user first, refused beside its field
        await logInByKeyboard(a, ADMIN.email, ADMIN.password);
        await nav(a, "Credits & ledger").click();
        await heading(a, "Credits and ledger");
        await a
          .locator(".ledger-verdict .badge", { hasText: "Balanced" })
          .waitFor();
        await expectLabelled(a, "Credits and ledger");
        const who = a.getByLabel("User id or email");
        await who.fill("nobody@example.org");
        await a.getByLabel("Amount (USDC)").fill("0.50");
        await a.getByLabel("Reference").fill("Bank transfer 2026-118");
        await a.getByRole("button", { name: "Credit…" }).click();
        await a.getByRole("button", { name: "Credit 0.50 USDC" }).click();
        const userError = a.locator('[data-field="email"] + .field-error');
        await userError.waitFor();
        assert.match(await userError.textContent(), /no user has this email/);
        assert.equal(await who.getAttribute("aria-invalid"), "true");
        await shoot(a, "80-admin-credit-error");
        // Found by part of her email address (any case): the credit goes to that email.
        await a
          .getByLabel("Find a user")
          .fill(email.split("@")[0].toUpperCase());
        await a.getByRole("button", { name: "Find", exact: true }).click();
        const found = a.locator(`.user-results li[data-user-id="${me.id}"]`);
        await found.waitFor();
        assert.equal(await a.locator(".user-results li").count(), 1);
        await shoot(a, "80b-admin-find-user");
        await found.getByRole("button", { name: "Credit this user" }).click();
        assert.equal(await who.inputValue(), email);
        await a.getByRole("button", { name: "Credit…" }).click();
        await a
          .getByRole("group", { name: "Confirm the credit" })
          .getByText(`Credit 0.50 USDC to ${email}?`)
          .waitFor();
        await a.getByRole("button", { name: "Credit 0.50 USDC" }).click();
        await a
          .getByText(
            new RegExp(
              `^Credited 0\\.50 USDC to ${email.replace(/[.+]/g, "\\$&")}: their balance is 0\\.50 USDC now`,
            ),
          )
          .waitFor();
        assert.equal(await userError.count(), 0);
        assert.equal(await who.inputValue(), "");
        await a.getByRole("button", { name: "Check again" }).click();
        await until(
          async () =>
            Number(await a.locator(".ledger-facts .transfers").textContent()) >=
            1,
          10000,
          "the credit counted by the ledger check",
        );
        await a
          .locator(".ledger-verdict .badge", { hasText: "Balanced" })
          .waitFor();
        assert.equal(
          await a.locator(".ledger-facts .sum").textContent(),
          "0.00 USDC (must be 0.00)",
        );
        await shoot(a, "81-admin-credited");

        // --- Carla's balance and statement, with a date range and its CSV
        await nav(c, "Balance").click();
        await heading(c, "Balance");
        await c
          .locator(".balance-now .money-value", { hasText: /^0\.50 USDC$/ })
          .waitFor();
        assert.equal(
          await c.locator(".running-cost .money-value").textContent(),
          "Nothing running",
        );
        assert.equal(await c.locator(".low-balance").count(), 0);
        assert.equal(await c.locator(".user-id").textContent(), me.id);
        const credit = c.locator(
          'table.statement tr[data-kind="operator_credit"]',
        );
        await credit.waitFor();
        assert.equal(
          await credit.locator("td[data-label=Amount]").textContent(),
          "+0.50",
        );
        assert.equal(
          await credit.locator("td[data-label=Reference]").textContent(),
          "Bank transfer 2026-118",
        );
        const csv = c.getByRole("link", { name: "Download CSV" });
        assert.equal(
          await csv.getAttribute("href"),
          "/api/v1/me/statement?format=csv",
        );
        const today = await c.evaluate(() => {
          const d = new Date();
          const pad = (n) => String(n).padStart(2, "0");
          return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
        });
        await c.getByLabel("From").fill(today);
        await c.getByLabel("To").fill(today);
        await c.getByRole("button", { name: "Show", exact: true }).click();
        await c.waitForURL(
          (u) => u.hash === `#/balance?from=${today}&to=${today}`,
        );
        await credit.waitFor();
        const href = await csv.getAttribute("href");
        const q = new URL(href, server.base).searchParams;
        const [from, to] = await c.evaluate((day) => {
          const [y, m, d] = day.split("-").map(Number);
          return [
            new Date(y, m - 1, d).toISOString(),
            new Date(y, m - 1, d + 1).toISOString(),
          ];
        }, today);
        assert.deepEqual(
          [...q],
          [
            ["from", from],
            ["to", to],
            ["format", "csv"],
          ],
        );
        const csvText = await c.evaluate(
          async (u) => (await fetch(u)).text(),
          href,
        );
        const lines = csvText.trim().split(/\r?\n/);
        assert.equal(
          lines[0],
          "at,id,kind,amount_micro,amount_usdc,rental_id,reference",
        );
        assert.ok(
          lines.some(
            (l) => l.includes("operator_credit") && l.includes("500000"),
          ),
          csvText,
        );
        // A range without it: the credit is not listed.
        await c.goto(`${server.base}/#/balance?from=2020-01-01&to=2020-01-31`);
        await heading(c, "Balance");
        await c
          .getByText("Nothing moved your balance in these days.")
          .waitFor();
        assert.equal(await credit.count(), 0);
        await c.goto(`${server.base}/#/balance?from=${today}&to=${today}`);
        await credit.waitFor();
        await expectLabelled(c, "the Balance page");
        await shoot(c, "82-balance");

        // --- rent from the Marketplace: a bad environment line (found here), a
        // maximum duration the API refuses, each beside its field
        await nav(c, "Marketplace").click();
        await heading(c, "Marketplace");
        const card = c.locator(`article[data-offer-id="${offer.id}"]`);
        await card.getByRole("button", { name: /^Rent NVIDIA L4/ }).click();
        const form = card.locator("form.rent-form");
        await form.waitFor();
        await expectLabelled(c, "the rental form");
        assert.deepEqual(
          await form.getByLabel("GPUs").locator("option").allTextContents(),
          ["1", "2"],
        );
        // No image yet, and a quote left open: reported with the rest, at once.
        await form
          .getByLabel("Command (optional)")
          .fill(`/bin/sh -c 'echo unfinished`);
        await form
          .locator(".command-preview")
          .getByText("The command has a ' (single quote) that is not closed.")
          .waitFor();
        await form
          .getByLabel("Environment variables (optional)")
          .fill("EPOCHS=3\nnot a variable");
        await form.getByLabel("Ports (optional)").fill("8080, 99999");
        // A private registry's password without its user.
        await form.getByLabel("Password or token").fill("s3cret-token");
        await form.getByLabel("Max. duration").fill("30 s");
        await form.getByLabel("GPUs").selectOption("2");
        await form
          .getByText(
            /^Costs 0\.90 USDC\/h \(2 GPUs × 0\.45 USDC\/h\); at most 0\.01 USDC over 30 s\.$/,
          )
          .waitFor();
        // 0.0075 USDC is shown to the cent, the exact amount on hover.
        assert.equal(
          await form
            .locator(".estimate .amount", { hasText: /^0\.01 USDC$/ })
            .getAttribute("title"),
          "0.0075 USDC",
        );
        const start = form.getByRole("button", { name: "Start the rental" });
        await start.click();
        const envError = form.locator('.field-error[data-path="env"]');
        await envError.waitFor();
        assert.match(
          await form.locator('.field-error[data-path="image"]').textContent(),
          /is required/,
        );
        assert.match(
          await form.locator('.field-error[data-path="command"]').textContent(),
          /single quote\) that is not closed/,
        );
        await shoot(c, "83a-rent-form-every-error");
        assert.match(
          await envError.textContent(),
          /^line 2 must be NAME=value/,
        );
        assert.match(
          await form.locator('.field-error[data-path="ports"]').textContent(),
          /"99999" must be a port from 1 to 65535/,
        );
        assert.match(
          await form
            .locator('.field-error[data-path="registry_auth.username"]')
            .textContent(),
          /is required with a password/,
        );
        assert.equal(
          keys.length,
          0,
          "nothing is sent while a field is wrong here",
        );
        await form.getByLabel("Image").fill(BUSYBOX_REF);
        await form
          .getByLabel("Command (optional)")
          .fill(`/bin/sh -c ${shellQuote(TRAINER_SCRIPT)}`);
        // What will run, argument by argument, before it runs.
        await form.locator(".command-preview ol.argv").waitFor();
        assert.deepEqual(
          await form.locator(".command-preview ol.argv li").allTextContents(),
          ["/bin/sh", "-c", TRAINER_SCRIPT],
        );
        await form
          .getByLabel("Environment variables (optional)")
          .fill("EPOCHS=3\nWANDB_MODE=offline");
        await form
          .getByLabel("Ports (optional)")
          .fill("8080, 7000/tcp, 22/tcp");
        await form.getByLabel("Password or token").fill("");
        await form.getByLabel("GPUs").selectOption("1");
        await start.click();
        const durationError = form.locator(
          '.field-error[data-path="max_duration_s"]',
        );
        await durationError.waitFor();
        assert.equal(await envError.count(), 0);
        assert.equal(
          await form.getByLabel("Max. duration").getAttribute("aria-invalid"),
          "true",
        );
        await shoot(c, "83-rent-form-error");

        // --- the answer is lost once: the retry carries the same Idempotency-Key
        await form.getByLabel("Max. duration").fill("2 h");
        await form
          .getByText(/^Costs 0\.45 USDC\/h; at most 0\.90 USDC over 2 h\.$/)
          .waitFor();
        let dropped = false;
        await c.route("**/api/v1/rentals", (route) => {
          if (route.request().method() === "POST" && !dropped) {
            dropped = true;
            return route.abort("connectionrefused");
          }
          return route.continue();
        });
        await start.click();
        await form
          .getByRole("alert")
          .filter({ hasText: "Cannot reach the gpunex server" })
          .waitFor();
        await form
          .getByText(/a retry of the same request never starts a second rental/)
          .waitFor();
        await start.click();
        await heading(c, "Rental: NVIDIA L4 × 1");
        await c.unroute("**/api/v1/rentals");
        // The refused 30 s, the attempt whose answer was lost, its retry.
        assert.equal(keys.length, 3, keys.join());
        const uuid =
          /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
        for (const k of keys) assert.match(k, uuid);
        assert.notEqual(keys[1], keys[0], "a new key for a changed request");
        assert.equal(keys[2], keys[1], "the retry reuses its key");
        const rid = decodeURIComponent(new URL(c.url()).hash.split("/")[2]);
        const mine = (
          await c.evaluate(async () => (await fetch("/api/v1/rentals")).json())
        ).items;
        assert.deepEqual(
          mine.map((r) => r.id),
          [rid],
          "one rental, not two",
        );

        // --- the rental runs: its state, cost, time left, output
        await c.getByText(/^Rental started: NVIDIA L4 × 1\./).waitFor();
        await c
          .locator(".rental-status dd .rental-state[data-state=running]")
          .waitFor({ timeout: 30000 });
        const logView = c.locator("pre.log-view");
        await logView
          .getByText("training for 3 epochs, wandb offline")
          .waitFor({ timeout: 20000 });
        await logView.getByText("step 2").waitFor({ timeout: 20000 });
        // The container in the engine: the command and environment typed in the form.
        const managed = await docker.containers("io.gpunex.managed=true");
        assert.equal(managed.length, 1, JSON.stringify(managed));
        const container = await docker.inspect(managed[0].Id);
        assert.match(container.Name, /^\/gpunex-wl-/);
        assert.equal(container.State.Running, true);
        assert.equal(container.Config.Image, BUSYBOX_REF);
        assert.deepEqual(container.Config.Cmd, [
          "/bin/sh",
          "-c",
          TRAINER_SCRIPT,
        ]);
        // The rental page shows exactly that argument list.
        assert.deepEqual(
          await c.locator("dd.command ol.argv li").allTextContents(),
          ["/bin/sh", "-c", TRAINER_SCRIPT],
        );
        assert.ok(
          container.Config.Env.includes("EPOCHS=3"),
          container.Config.Env.join(),
        );
        assert.ok(container.Config.Env.includes("WANDB_MODE=offline"));
        assert.equal(
          await c.locator(".rental-cost dd.rate").textContent(),
          "0.45 USDC/h",
        );
        assert.match(
          await c.locator(".rental-cost dd.time-left").textContent(),
          /^(\d+ min|1 h( \d+ min)?) at your balance of 0\.\d\d USDC$/,
        );
        // 0.50 USDC lasts about 66 minutes at 0.45 USDC/h: under the 70 of "low".
        await c
          .locator(".low-balance")
          .getByText("Your balance is low")
          .waitFor();
        assert.match(
          await c.locator(".rental-cost dd.charged").textContent(),
          /^(0\.\d\d|<0\.01) USDC$/,
        );
        // The cost moves by the second between meter ticks: with the rental's answer held
        // still (the meter's figures frozen), the page still counts up.
        const frozen = await c.evaluate(
          async (id) => (await fetch(`/api/v1/rentals/${id}`)).text(),
          rid,
        );
        await c.route(`**/api/v1/rentals/${rid}`, (route) =>
          route.request().method() === "GET"
            ? route.fulfill({ contentType: "application/json", body: frozen })
            : route.continue(),
        );
        const billedText = () =>
          c.locator(".rental-cost dd.billed").textContent();
        // (The exact cost, on hover: shown to the cent, it moves by a cent in 80 s.)
        const chargedText = () =>
          c.locator(".rental-cost dd.charged .amount").getAttribute("title");
        const billedNow = await billedText();
        const chargedNow = await chargedText();
        await until(
          async () =>
            (await billedText()) !== billedNow &&
            (await chargedText()) !== chargedNow,
          5000,
          "the billed time and cost to move while the meter's figures stand still",
        );
        await c.unroute(`**/api/v1/rentals/${rid}`);
        await shoot(c, "84-rental-running");

        // --- its ports: the HTTP one opens the container's page in a new tab (an access
        // token, traded there for a cookie of that host); the TCP one shows its command
        const ports = c.locator(".rental-ports");
        const tcpRow = ports.locator('tr[data-port="7000"]');
        assert.match(
          await tcpRow.locator(".command-line").textContent(),
          new RegExp(
            `^websocat --binary .* tcp-l:127\\.0\\.0\\.1:7000 ws://.*/api/v1/rentals/${rid}/ports/7000/connect$`,
          ),
        );
        await shoot(c, "84b-rental-ports");
        const [tab] = await Promise.all([
          c.context().waitForEvent("page"),
          ports.getByRole("button", { name: "Open port 8080" }).click(),
        ]);
        await tab
          .getByRole("heading", { name: "hello from the container" })
          .waitFor({ timeout: 20000 });
        const opened = new URL(tab.url());
        assert.equal(
          opened.hostname,
          `${rid.slice(4).toLowerCase()}-8080.localhost`,
        );
        assert.equal(opened.search, "", "the token left the address");
        await shoot(tab, "84c-rental-port-page");
        await tab.close();
        // A token for programs, shown once.
        await ports.getByRole("button", { name: "New access token" }).click();
        const tokenPanel = c.getByRole("region", { name: "New access token" });
        assert.match(
          await tokenPanel.locator("pre code").textContent(),
          /^gpx_r_[A-Za-z0-9_-]{43}$/,
        );
        await tokenPanel
          .getByRole("button", { name: "Done, I have copied it" })
          .click();
        assert.equal(await tokenPanel.count(), 0);

        // --- its files: one uploaded from here lands in the container (its web server
        // serves it); a directory downloads as a tar
        const filesCard = c.locator(".rental-files");
        await filesCard.getByLabel("Upload into").fill("/scratch/www");
        await filesCard.getByLabel("File").setInputFiles({
          name: "notes.html",
          mimeType: "text/html",
          buffer: Buffer.from("<h1>notes from the dashboard</h1>"),
        });
        await filesCard.getByRole("button", { name: "Upload" }).click();
        await filesCard
          .getByText("notes.html is in /scratch/www of the container.")
          .waitFor();
        await filesCard
          .getByLabel("Path in the container")
          .fill("/scratch/www");
        const [download] = await Promise.all([
          c.waitForEvent("download"),
          filesCard.getByRole("button", { name: "Download as tar" }).click(),
        ]);
        assert.equal(download.suggestedFilename(), "www.tar");
        const tarText = fs.readFileSync(await download.path(), "latin1");
        assert.match(tarText, /notes from the dashboard/);
        assert.match(tarText, /hello from the container/);
        await shoot(c, "84d-rental-files");

        // --- its terminal: a shell in the container (exec, tty), typed into and read back;
        // its size follows the window's
        const termCard = c.locator(".rental-terminal");
        await termCard.getByRole("button", { name: "Open a shell" }).click();
        await termCard
          .getByText("Connected: a shell in the container.")
          .waitFor({ timeout: 20000 });
        const rows = termCard.locator(".xterm-rows");
        const screenText = async () =>
          (await rows.innerText()).replace(/\u00a0/g, " ");
        await until(
          async () => /[#$] *$/m.test(await screenText()),
          20000,
          "the shell's prompt",
        );
        await c.keyboard.type("echo hello-$((6*7))\n");
        await rows.filter({ hasText: "hello-42" }).waitFor({ timeout: 20000 });
        const size = async () => {
          await c.keyboard.type("stty size\n");
          return until(
            async () => {
              const sizes = [
                ...(await screenText()).matchAll(/^(\d+) (\d+) *$/gm),
              ];
              return sizes.length > 0 && Number(sizes[sizes.length - 1][2]);
            },
            20000,
            "stty size's answer",
          );
        };
        const wideColumns = await size();
        await shoot(c, "84e-rental-terminal");
        const laptop = c.viewportSize() ?? DESKTOP;
        await c.setViewportSize(SMALL_PHONE);
        await until(
          async () => (await size()) < wideColumns,
          20000,
          "the terminal to narrow with the window",
        );
        await c.setViewportSize(laptop);
        await termCard.getByRole("button", { name: "Disconnect" }).click();
        await termCard.getByText("Disconnected.").waitFor();

        // --- its SSH card: the commands with this gateway's port and the rental's id, the
        // host key GET /api/v1/access/ssh shows, and a word that the account has no key yet
        const ssh = await (
          await fetch(`${server.base}/api/v1/access/ssh`)
        ).json();
        assert.equal(ssh.enabled, true);
        const sshCard = c.locator(".rental-ssh");
        await sshCard.locator(".ssh-no-key").waitFor();
        assert.match(
          await sshCard.locator(".ssh-no-key").textContent(),
          /add your public key on the Account page/,
        );
        const commands = await sshCard
          .locator(".ssh-commands code")
          .allTextContents();
        assert.equal(commands[0], `ssh -p ${ssh.port} ${rid}@${ssh.host}`);
        assert.ok(
          commands.includes(
            `ssh -p ${ssh.port} -N -L 8080:localhost:8080 ${rid}@${ssh.host}`,
          ),
          commands.join("\n"),
        );
        // With port 22 declared, the image's own SSH server through the gateway.
        assert.equal(
          commands.at(-1),
          `ssh -J ${rid}@${ssh.host}:${ssh.port} -p 22 USER@localhost`,
        );
        assert.equal(
          await sshCard.locator(".ssh-host-key code").textContent(),
          ssh.host_key_fingerprint,
        );
        await sshCard.scrollIntoViewIfNeeded();
        await shoot(c, "84f-rental-ssh");

        // --- the Rentals page lists it, running; the filters
        await nav(c, "Rentals").click();
        await heading(c, "Rentals");
        const row = c.locator(`table.rentals tr[data-rental-id="${rid}"]`);
        await row.locator("[data-state=running]").waitFor();
        assert.equal(
          await row.locator("td[data-label=Rate]").textContent(),
          "0.45 USDC/h",
        );
        assert.match(
          await row.locator("td[data-label='Cost so far']").textContent(),
          /^(0\.\d\d|<0\.01) USDC$/,
        );
        await c.locator(".low-balance").waitFor();
        await shoot(c, "85-rentals-list");
        await c
          .locator(".filter-tabs")
          .getByRole("link", { name: "Ended" })
          .click();
        await c.getByText("No ended rentals.").waitFor();
        assert.equal(await row.count(), 0);
        await c
          .locator(".filter-tabs")
          .getByRole("link", { name: "Active" })
          .click();
        await row.waitFor();
        await row.getByRole("link", { name: "NVIDIA L4 × 1" }).click();
        await heading(c, "Rental: NVIDIA L4 × 1");

        // --- Stop, asked first: Ending, then Ended, stopped by the customer
        await c.getByRole("button", { name: "Stop the rental" }).click();
        const ask = c.getByRole("group", {
          name: "Confirm stopping the rental",
        });
        await ask.getByRole("button", { name: "Keep it running" }).click();
        await ask.waitFor({ state: "detached" });
        await c.getByRole("button", { name: "Stop the rental" }).click();
        await ask.getByRole("button", { name: "Stop it now" }).click();
        await c
          .locator(".rental-status dd .rental-state[data-state=ended]")
          .waitFor({ timeout: 30000 });
        assert.equal(
          await c.locator(".rental-status dd.end-reason").textContent(),
          "Stopped by you",
        );
        assert.equal(
          await c.locator(".rental-status dd.end-party").textContent(),
          "the customer",
        );
        await logView.getByText("received SIGTERM").waitFor({ timeout: 10000 });
        await until(
          async () =>
            (await docker.containers("io.gpunex.managed=true")).length === 0,
          15000,
          "the rental's container removed from the engine",
        );
        await c
          .getByText("The rental has ended: this is all of its output.")
          .waitFor();
        assert.equal(
          await c.getByRole("button", { name: "Stop the rental" }).count(),
          0,
        );
        assert.equal(await c.locator(".low-balance").count(), 0);
        const ended = await c.evaluate(
          async (id) => (await fetch(`/api/v1/rentals/${id}`)).json(),
          rid,
        );
        assert.equal(ended.state, "ended");
        assert.equal(
          await c.locator(".rental-cost dd.charged").textContent(),
          `${usdcText(ended.charged_micro)} USDC`,
        );
        assert.equal(
          await c
            .locator(".rental-cost dd.charged .amount")
            .getAttribute("title"),
          `${exactText(ended.charged_micro)} USDC`,
        );
        await shoot(c, "86-rental-stopped");
        // The balance is what the credit left after the rental's cost.
        await nav(c, "Balance").click();
        await c
          .locator(".balance-now .money-value", {
            hasText: `${usdcText(500000 - ended.charged_micro)} USDC`,
          })
          .waitFor();
        // The rental is billed every second in these tests (two transfers a tick), so its
        // transfers can fill more than the first page on a slow machine: the customer
        // pages through all of them, as the group's sum needs.
        // (A CSS locator: the button is hidden once the last page is in, and a role
        // locator would not find it then.)
        const more = c.locator("button.more-btn");
        await c.locator("table.statement tr.rental-group").waitFor();
        while (await more.isVisible()) {
          await more.click();
          await until(
            async () => !(await more.isDisabled()),
            10000,
            "the next page of the statement",
          );
        }
        await credit.waitFor();
        // The statement (issue 30 item 8): the rental's charges are one row, their sum,
        // with the balance after it; each transfer behind a toggle, with its own balance.
        const group = c.locator(
          `table.statement tr.rental-group[data-rental-id="${rid}"]`,
        );
        await group.waitFor();
        assert.equal(
          await c.locator("table.statement tr.rental-group").count(),
          1,
        );
        assert.equal(
          await group.locator("td[data-label=Amount]").textContent(),
          usdcText(-ended.charged_micro),
        );
        assert.equal(
          await group.locator("td[data-label='Balance after']").textContent(),
          usdcText(500000 - ended.charged_micro),
        );
        assert.equal(
          await credit.locator("td[data-label='Balance after']").textContent(),
          "0.50",
        );
        const items = c.locator("table.statement tr.group-item");
        const count = await items.count();
        assert.ok(count >= 2, `the rental's transfers: ${count}`);
        assert.equal(await items.first().isVisible(), false);
        const toggle = group.getByRole("button", {
          name: `Show ${count} transfers`,
        });
        assert.equal(await toggle.getAttribute("aria-expanded"), "false");
        await toggle.click();
        await items.first().waitFor();
        assert.deepEqual(
          [
            ...new Set(
              await items.evaluateAll((r) => r.map((x) => x.dataset.kind)),
            ),
          ].sort(),
          ["usage_fee", "usage_provider"],
        );
        // Each transfer's balance after runs down from the group's.
        const balances = await items
          .locator("td[data-label='Balance after']")
          .allTextContents();
        assert.equal(balances[0], usdcText(500000 - ended.charged_micro));
        // Each charge of a metering tick (a few thousandths of a USDC) to the cent, or
        // "<0.01", with the exact amount on hover.
        const amounts = await badAmounts(c);
        assert.deepEqual(amounts.bad, []);
        assert.ok(amounts.count >= count + 3, `${amounts.count} amounts`);
        assert.equal(
          await group
            .locator("td[data-label=Amount] .amount")
            .getAttribute("title"),
          `${exactText(-ended.charged_micro)} USDC`,
        );
        await shoot(c, "86b-statement-grouped");
        await group.getByRole("button", { name: "Hide transfers" }).click();
        assert.equal(await items.first().isVisible(), false);

        // --- the provider sees it on the Overview: pseudonym, state, end terms, and the
        // commission
        await logInByKeyboard(p, prov.email, PASSWORD);
        await p.goto(`${server.base}/#/provider`);
        await heading(p, "Provider Dashboard");
        await p
          .locator(".tier-card .commission")
          .getByText("Commission 20 %")
          .waitFor();
        const prow = p.locator(
          `table.provider-rentals tr[data-rental-id="${rid}"]`,
        );
        await prow.waitFor();
        assert.equal(
          await prow.locator("td[data-label=GPUs]").textContent(),
          "NVIDIA L4 × 1",
        );
        assert.equal(
          await prow.locator("td[data-label='Price per GPU']").textContent(),
          "0.45 USDC/h",
        );
        assert.notEqual(
          await prow.locator("td[data-label=Machine]").textContent(),
          "—",
        );
        const pseudonym = await prow
          .locator("td[data-label=Customer]")
          .textContent();
        assert.ok(
          pseudonym &&
            !/carla/i.test(pseudonym) &&
            !pseudonym.includes(me.id) &&
            !pseudonym.includes(email),
          pseudonym,
        );
        await prow.locator("[data-state=ended]").waitFor();
        assert.equal(
          await prow.locator("td[data-label=End]").textContent(),
          "Stopped by the customerEnded by the customer",
        );
        await prow.scrollIntoViewIfNeeded();
        await shoot(p, "87-provider-rentals");
        // Its page, for the provider: the customer by pseudonym, the output, no Stop.
        await prow.getByRole("link", { name: "NVIDIA L4 × 1" }).click();
        await heading(p, "Rental: NVIDIA L4 × 1");
        await p.locator("pre.log-view").getByText("received SIGTERM").waitFor();
        assert.equal(
          await p.locator(".rental-status dd.end-reason").textContent(),
          "Stopped by the customer",
        );
        assert.equal(
          await p.locator(".rental-status .pseudonym").textContent(),
          pseudonym,
        );
        assert.equal(
          await p.getByRole("button", { name: "Stop the rental" }).count(),
          0,
        );

        // --- a job, placed at once on the free GPU; a deadline the API refuses first
        await nav(c, "Jobs").click();
        await heading(c, "Jobs");
        await c.getByText("No jobs yet.").waitFor();
        await c.getByRole("link", { name: "Submit a job" }).click();
        await heading(c, "Submit a job");
        await c.getByLabel("NVIDIA L4 (24 GB)").check();
        await c.getByLabel("Max. price (USDC per GPU-hour)").fill("0.5x");
        await c.getByLabel("Image").fill(BUSYBOX_REF);
        await c
          .getByLabel("Command (optional)")
          .fill(`/bin/sh -c ${shellQuote(RENDER_SCRIPT)}`);
        await c.getByLabel("Place within").fill("10 s");
        await c.getByText("More requirements").click();
        await c.getByLabel("Region").fill("us-east");
        await expectLabelled(c, "the job form");
        const submitJob = c.getByRole("button", { name: "Submit the job" });
        await submitJob.click();
        const priceError = c.locator(
          '.field-error[data-path="max_price_micro"]',
        );
        await priceError.waitFor();
        // The balance must cover the first hour at the maximum price: 0.45 of 0.49….
        await c.getByLabel("Max. price (USDC per GPU-hour)").fill("0.45");
        await c
          .locator(".job-form .balance-line")
          .getByText(
            /^The first hour costs at most 0\.45 USDC; yours: 0\.\d\d USDC\.$/,
          )
          .waitFor();
        await submitJob.click();
        const deadlineError = c.locator('.field-error[data-path="deadline_s"]');
        await deadlineError.waitFor();
        assert.equal(await priceError.count(), 0);
        await shoot(c, "88-job-form-error");
        await c.getByLabel("Place within").fill("1 h");
        await submitJob.click();
        await heading(c, "Jobs");
        await c.getByText(/^Job submitted/).waitFor();
        const jobRow = c.locator("table.jobs tbody tr").first();
        await jobRow
          .locator(".job-state[data-state=placed]")
          .waitFor({ timeout: 30000 });
        await jobRow.getByRole("link", { name: "Open the rental" }).waitFor();
        await shoot(c, "89-jobs-list");
        await jobRow.getByRole("link", { name: "Open the rental" }).click();
        await heading(c, "Rental: NVIDIA L4 × 1");
        const jobRental = decodeURIComponent(
          new URL(c.url()).hash.split("/")[2],
        );
        assert.notEqual(jobRental, rid);
        await c.getByRole("button", { name: "Stop the rental" }).click();
        await c.getByRole("button", { name: "Stop it now" }).click();
        await c
          .locator(".rental-status dd .rental-state[data-state=ended]")
          .waitFor({ timeout: 30000 });

        // --- a workload that exits by itself is not "ended by the customer": the page
        // reads the same rental as if its container had exited with code 3
        const exitedJson = await c.evaluate(
          async (id) => (await fetch(`/api/v1/rentals/${id}`)).json(),
          jobRental,
        );
        Object.assign(exitedJson, {
          end_reason: "exited",
          end_party: "customer",
          exit_code: 3,
          detail: "",
        });
        await c.route(`**/api/v1/rentals/${jobRental}`, (route) =>
          route.request().method() === "GET"
            ? route.fulfill({
                contentType: "application/json",
                body: JSON.stringify(exitedJson),
              })
            : route.continue(),
        );
        await c.reload();
        await c.locator(".rental-status dd.end-reason").waitFor();
        assert.equal(
          await c.locator(".rental-status dd.end-reason").textContent(),
          "The workload ended by itself (exit code 3)",
        );
        assert.equal(
          await c.locator(".rental-status dd.end-party").textContent(),
          "the workload itself",
        );
        await c.unroute(`**/api/v1/rentals/${jobRental}`);

        // --- the job stays "placed"; the list and its page say its rental ended, and how
        await nav(c, "Jobs").click();
        await heading(c, "Jobs");
        const placedJob = c.locator("table.jobs tbody tr").first();
        await placedJob
          .locator(".job-rental .rental-state[data-state=ended]")
          .waitFor({ timeout: 15000 });
        await placedJob.locator("a.job-link").click();
        await heading(c, "Job: NVIDIA L4 × 1");
        await c
          .locator(".job-state-card .job-state[data-state=placed]")
          .waitFor();
        await c
          .locator(
            ".job-state-card .job-rental .rental-state[data-state=ended]",
          )
          .waitFor();
        assert.match(
          await c.locator(".job-state-card dd.rental-detail").textContent(),
          /stop/i,
        );
        assert.deepEqual(
          await c
            .locator(".job-ask-card dd.command ol.argv li")
            .allTextContents(),
          ["/bin/sh", "-c", RENDER_SCRIPT],
        );
        await shoot(c, "89b-job-page");

        // The ledger still balances.
        await a.getByRole("button", { name: "Check again" }).click();
        await a
          .locator(".ledger-verdict .badge", { hasText: "Balanced" })
          .waitFor();

        const lost = /ERR_CONNECTION_REFUSED|ERR_FAILED/;
        assert.deepEqual(
          cust.problems.filter((x) => !lost.test(x)),
          [],
        );
        assert.deepEqual(adm.problems, []);
        assert.deepEqual(prv.problems, []);
      } finally {
        await cust.context.close();
        await adm.context.close();
        await prv.context.close();
        await anon.context.close().catch(() => {});
      }
    },
  );
});

// ---- earnings, payouts and top-ups (issue 15), against a gpunexd of their own on the
// Solana test node (tests/solana/rpc-front.mjs) with SEPA and ACH set up, a clock the
// test moves forward (GPUNEX_TEST_CLOCK_FILE: earnings past their hold, payouts past the
// hold after a change), and earnings made by rentals on an agent whose workloads run in a
// private Docker engine (as the rentals test).

const L4_PRICE = 720_000_000; // 720 USDC per GPU-hour: 0.2 USDC a second
const HOLD_AFTER_CHANGE_S = 3600;

function payoutsConfig(front, keyPath) {
  return [
    "[solana]",
    `rpc_url = ${JSON.stringify(front.url)}`,
    `keypair = ${JSON.stringify(keyPath)}`,
    `usdc_mint = ${JSON.stringify(front.mint)}`,
    'commitment = "confirmed"',
    "rpc_timeout_ms = 5000",
    "",
    "[payouts]",
    "automatic_runs = false",
    "loop_ms = 150",
    `hold_after_change_s = ${HOLD_AFTER_CHANGE_S}`,
    "threshold_micro = 500000",
    "solana_min_micro = 500000",
    "sepa_min_micro = 500000",
    "ach_min_micro = 500000",
    'sepa_name = "GPUNEX TEST PLATFORM"',
    'sepa_iban = "DE89370400440532013000"',
    'sepa_bic = "COBADEFFXXX"',
    'ach_destination_routing = "021000021"',
    'ach_destination_name = "TEST BANK NA"',
    'ach_origin = " 021000021"',
    'ach_origin_name = "GPUNEX TEST"',
    'ach_company_name = "GPUNEX"',
    'ach_company_id = "1234567890"',
    'ach_odfi_routing = "02100002"',
  ];
}

describe("earnings, payouts and top-ups", () => {
  test(
    "a provider's earnings and payout method, an admin's payout runs, a customer's top-up",
    { timeout: 300000, skip: dockerMissing() ?? false },
    async (t) => {
      const started = Date.now();
      const front = await new SolanaFront().start();
      const docker = new TestDockerd();
      let srv = null;
      let agent = null;
      const contexts = [];
      t.after(async () => {
        for (const c of contexts) await c.close().catch(() => {});
        await agent?.stop();
        await docker.stop();
        await srv?.cleanup();
        await front.stop();
      });
      // The platform's wallet: 1 SOL and 100 USDC.
      const platform = await front.call("test_newWallet");
      await front.call("test_mintUsdc", platform.public_key, 100_000_000);
      const keyPath = path.join(front.tmp, "platform-key.json");
      fs.writeFileSync(keyPath, JSON.stringify(platform.secret_key), {
        mode: 0o600,
      });
      const clockPath = path.join(front.tmp, "clock-offset");
      let offset = 0;
      const advance = async (seconds) => {
        offset += seconds;
        fs.writeFileSync(clockPath + ".tmp", String(offset));
        fs.renameSync(clockPath + ".tmp", clockPath);
        await sleep(150); // gpunexd reads it every 50 ms
      };
      fs.writeFileSync(clockPath, "0");
      srv = new Gpunexd({
        rentals: [
          "release_interval_s = 1",
          "earnings_hold_s = 60",
          "early_fault_refund_s = 0",
        ],
        config: payoutsConfig(front, keyPath),
        env: { GPUNEX_TEST_CLOCK_FILE: clockPath },
      });
      srv.createAdmin();
      await Promise.all([
        srv.start(),
        docker.start().then(() => docker.importBusybox(BUSYBOX_REF)),
      ]);
      const admin = await srv.apiOk("POST", "/auth/login", {
        email: ADMIN.email,
        password: ADMIN.password,
      });
      const prov = await srv.approvedProvider("Paula Payee", PASSWORD, {
        region: "eu-west",
        prices: { "l4-24gb": L4_PRICE },
      });
      agent = new Agent(srv, prov.agentToken, "l4-24gb:1", {
        name: "payout-agent",
        dockerSocket: docker.socket,
      });
      const custEmail = uniqueEmail("tobias");
      await srv.apiOk("POST", "/auth/signup", {
        email: custEmail,
        password: PASSWORD,
        name: "Tobias Topup",
      });
      const cust = await srv.apiOk("POST", "/auth/login", {
        email: custEmail,
        password: PASSWORD,
      });
      await srv.apiOk(
        "POST",
        "/admin/credits",
        {
          user_id: cust.user.id,
          amount_micro: 2_000_000_000,
          reference: "test funds",
        },
        admin.token,
      );
      const offer = await until(
        async () =>
          (await srv.apiOk("GET", "/offers?region=eu-west")).items.find(
            (o) => o.gpus_available === 1,
          ),
        90000,
        "the provider's offer",
      ).catch((e) => {
        throw new Error(`${e.message}\n${agent.logs()}\n${srv.logs()}`);
      });
      // A rental of about `seconds`, run and stopped through the API; resolves once ended.
      // The marketplace learns that the previous rental's GPU is free through its offer
      // index, a moment after the rental ends: wait for it rather than race it.
      const rent = async (seconds) => {
        await until(
          async () =>
            (await srv.apiOk("GET", `/offers/${offer.id}`)).gpus_available ===
            1,
          60000,
          "the offer's GPU free",
        ).catch((e) => {
          throw new Error(`${e.message}\n${agent.logs()}\n${srv.logs()}`);
        });
        const r = await srv.apiOk(
          "POST",
          "/rentals",
          {
            offer_id: offer.id,
            gpus: 1,
            image: BUSYBOX_REF,
            command: ["/bin/sh", "-c", RENDER_SCRIPT],
          },
          cust.token,
        );
        await until(
          async () =>
            (await srv.apiOk("GET", `/rentals/${r.id}`, undefined, cust.token))
              .state === "running",
          60000,
          "the rental running",
        );
        await sleep(seconds * 1000);
        await srv.apiOk("POST", `/rentals/${r.id}/stop`, {}, cust.token);
        return until(
          async () => {
            const x = await srv.apiOk(
              "GET",
              `/rentals/${r.id}`,
              undefined,
              cust.token,
            );
            return x.state === "ended" ? x : null;
          },
          60000,
          "the rental ended",
        );
      };
      const totals = async () =>
        (
          await srv.apiOk(
            "GET",
            "/providers/me/earnings",
            undefined,
            prov.token,
          )
        ).totals;
      // Past the earnings hold (no rental runs while the clock moves).
      const release = async (seconds = 120) => {
        await advance(seconds);
        return until(
          async () => {
            const x = await totals();
            return x.pending_micro === 0 && x.available_micro > 0 ? x : null;
          },
          20000,
          "the earnings released",
        );
      };
      const rental1 = await rent(9);
      const earned1 = await release();
      assert.ok(earned1.available_micro >= 1_000_000, JSON.stringify(earned1));
      const setupMs = Date.now() - started;

      const open = async () => {
        const x = await newPage();
        contexts.push(x.context);
        return x;
      };
      const P = await open();
      const p = P.page;
      const A = await open();
      const a = A.page;
      const C = await open();
      const c = C.page;

      // --- the provider's Earnings tab
      await logIn(p, prov.email, { base: srv.base });
      await nav(p, "Provider Dashboard").click();
      await heading(p, "Provider Dashboard");
      await p
        .locator("nav.tabs")
        .getByRole("link", { name: "Earnings" })
        .click();
      await p.locator(".earnings-tiles").waitFor();
      assert.equal(
        await p.locator(".earn-available .money-value").textContent(),
        `${usdcText(earned1.available_micro)} USDC`,
      );
      assert.equal(
        await p.locator(".earn-pending .money-value").textContent(),
        "0.00 USDC",
      );
      assert.match(
        await p.locator(".earnings-period h2").textContent(),
        /^This week: /,
      );
      assert.equal(
        await p.locator(".earnings-period .money-value").textContent(),
        `${usdcText(earned1.available_micro)} USDC`,
      );
      const byModel = p.locator("table.by-model tbody tr");
      assert.equal(await byModel.count(), 1);
      assert.equal(
        await byModel.locator('td[data-label="Model"]').textContent(),
        "NVIDIA L4",
      );
      assert.equal(
        await byModel.locator("td.net").textContent(),
        usdcText(earned1.available_micro),
      );
      assert.match(
        await p.locator("table.by-gpu tbody tr td").first().textContent(),
        /^GPU 0 · /,
      );
      await p
        .locator(".earnings-chart svg.chart circle.point")
        .first()
        .waitFor();
      assert.equal(await p.locator("table.by-day tbody tr").count(), 1);
      const gpuCsv = await p
        .locator('.earnings-gpu a.csv-link[data-group="gpu"]')
        .getAttribute("href");
      assert.match(gpuCsv, /group=gpu&format=csv$/);
      const csvText = await p.evaluate(
        async (u) => (await fetch(u)).text(),
        gpuCsv,
      );
      assert.match(csvText, /^gpu,label,rentals,gpu_seconds,gross_micro/);
      assert.match(csvText, new RegExp(`,${earned1.available_micro},`));
      // The monthly statement lists the rental.
      await p.getByRole("button", { name: "Show statement" }).click();
      await p
        .locator(`.statement-lines tr[data-rental-id="${rental1.id}"]`)
        .waitFor();
      assert.match(
        await p
          .locator('.statement-view a[data-csv="statement"]')
          .getAttribute("href"),
        /\/statements\/\d{4}-\d{2}\?format=csv$/,
      );
      await expectLabelled(p, "the Earnings tab");
      await shoot(p, "90-earnings");
      // Days without earnings.
      await p.getByLabel("From", { exact: true }).fill("2025-01-01");
      await p.getByLabel("To", { exact: true }).fill("2025-01-31");
      await p.getByRole("button", { name: "Show", exact: true }).click();
      await p.getByText("Nothing earned in these days.").first().waitFor();
      assert.match(new URL(p.url()).hash, /from=2025-01-01&to=2025-01-31/);

      // --- the Payments tab: the methods with their terms, a wallet checked as typed,
      // a wrong password refused beside its field, then the Solana method saved
      await p
        .locator("nav.tabs")
        .getByRole("link", { name: "Payments" })
        .click();
      await p.locator(".method-choices").waitFor();
      for (const kind of ["solana", "sepa", "ach"])
        assert.match(
          await p
            .locator(`label.method-choice[data-kind="${kind}"]`)
            .textContent(),
          /minimum payout 0\.50 USDC · no fee/,
        );
      assert.match(
        await p.locator(".next-payout .next-status").textContent(),
        /Not paid No payout method/,
      );
      const wallet = await front.call("test_newWallet");
      const walletInput = p.getByLabel("Wallet address");
      await walletInput.fill("0OIl" + wallet.public_key.slice(4));
      await p
        .locator('[data-field="method.wallet"] + .field-error')
        .getByText(/not a base58 character/)
        .waitFor();
      assert.equal(await walletInput.getAttribute("aria-invalid"), "true");
      await walletInput.fill(wallet.public_key);
      assert.equal(
        await p.locator('[data-field="method.wallet"] + .field-error').count(),
        0,
      );
      await p.getByLabel("Your password").fill("not-my-password");
      await p.getByRole("button", { name: "Save payout method" }).click();
      await p
        .locator('[data-field="password"] + .field-error')
        .getByText("is not the account's password")
        .waitFor();
      await expectLabelled(p, "the Payments tab");
      await shoot(p, "91-payments-password-error");
      await p.getByLabel("Your password").fill(PASSWORD);
      await p.getByRole("button", { name: "Save payout method" }).click();
      await p.getByText(/^Payout method saved: USDC on Solana/).waitFor();
      const tokenAccount = (
        await p.locator(".current-method .token-account .ident").textContent()
      ).trim();
      assert.match(tokenAccount, /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
      assert.notEqual(tokenAccount, wallet.public_key);
      assert.match(
        await p.locator(".next-payout .next-status").textContent(),
        /Will be paid/,
      );
      assert.equal(await p.locator(".payout-hold").count(), 0); // a first method
      await shoot(p, "92-payments-solana");
      // A SEPA IBAN with a wrong check digit, refused as it is typed.
      const sepa = p.locator('.method-fields[data-kind="sepa"]');
      await p.locator('label.method-choice[data-kind="sepa"]').click();
      await sepa.getByLabel("Account holder").fill("Paula Payee");
      await sepa.getByLabel("IBAN").fill("DE89 3704 0044 0532 0130 01");
      const ibanError = p.locator('[data-field="method.iban"] + .field-error');
      await ibanError.getByText(/has wrong check digits/).waitFor();
      assert.equal(
        await sepa.getByLabel("IBAN").getAttribute("aria-invalid"),
        "true",
      );
      await shoot(p, "93-payments-bad-iban");
      // An ABA routing number with a wrong check digit, and one that is right.
      const ach = p.locator('.method-fields[data-kind="ach"]');
      await p.locator('label.method-choice[data-kind="ach"]').click();
      await ach.getByLabel("Routing number").fill("021000022");
      await p
        .locator('[data-field="method.routing_number"] + .field-error')
        .getByText(/wrong check digit/)
        .waitFor();
      await ach.getByLabel("Routing number").fill("021000021");
      assert.equal(
        await p
          .locator('[data-field="method.routing_number"] + .field-error')
          .count(),
        0,
      );

      // --- the admin starts a weekly run: paid on Solana, with its signature
      await logIn(a, ADMIN.email, {
        password: ADMIN.password,
        base: srv.base,
      });
      await nav(a, "Payouts").click();
      await heading(a, "Payouts");
      // Among the operator's sections, marked as the one shown.
      await a
        .locator('.admin-tabs a[aria-current="page"]', { hasText: "Payouts" })
        .waitFor();
      await a
        .locator(".wallet-key .ident", { hasText: platform.public_key })
        .waitFor();
      assert.equal(
        await a.locator(".wallet-usdc").textContent(),
        "100.00 USDC",
      );
      await expectLabelled(a, "the Payouts page");
      await a.getByRole("button", { name: "Start the run" }).click();
      await heading(a, /^Weekly payout run · /);
      await a
        .locator(".run-summary .run-state[data-state=done]")
        .waitFor({ timeout: 30000 });
      const solRow = a.locator("table.run-payouts tbody tr").first();
      await solRow.locator(".payout-state[data-state=confirmed]").waitFor();
      const signature = (
        await solRow.locator(".signature .ident").textContent()
      ).trim();
      const landed = await front.call("test_transactions");
      const payoutId = await solRow.getAttribute("data-payout-id");
      assert.ok(
        landed.some(
          (x) =>
            x.signature === signature && x.memo === `gpunex payout ${payoutId}`,
        ),
        JSON.stringify(landed),
      );
      assert.equal(
        await solRow.locator(".signature a").getAttribute("href"),
        `https://explorer.solana.com/tx/${signature}`,
      );
      // The provider's token account got the USDC (it is the one the tab showed).
      const ata = await front.call("test_mintUsdc", wallet.public_key, 0);
      assert.equal(ata.token_account, tokenAccount);
      assert.equal(
        await front.call("test_tokenBalance", tokenAccount),
        String(earned1.available_micro),
      );
      await shoot(a, "94-admin-run-solana");
      // The second rental earns while the provider moves to SEPA, monthly.
      const second = rent(9);
      second.catch(() => {}); // awaited below

      await a.getByRole("link", { name: "All runs" }).click();
      await heading(a, "Payouts");
      await a.locator("table.payout-runs tbody tr").first().waitFor();
      assert.match(
        await a.locator("table.payout-runs .run-counts").first().textContent(),
        /^1 paid$/,
      );
      await shoot(a, "95-admin-payouts");

      // --- the provider: the payout in the history, the schedule, SEPA with the hold
      await p.reload();
      const hist = p.locator(`table.payouts tr[data-payout-id="${payoutId}"]`);
      await hist.locator(".payout-state[data-state=confirmed]").waitFor();
      assert.equal(
        (await hist.locator(".signature .ident").textContent()).trim(),
        signature,
      );
      // Its attempts, read when opened.
      await hist.locator("details.attempts summary").click();
      assert.match(
        await hist
          .locator("details.attempts li[data-attempt]")
          .first()
          .textContent(),
        new RegExp(`landed${signature}`),
      );
      const linesCsv = await p.evaluate(
        async (u) => (await fetch(u)).text(),
        await hist.locator("a.csv-link").getAttribute("href"),
      );
      assert.match(linesCsv, new RegExp(rental1.id));
      await p.getByLabel("Monthly").check();
      await p.getByRole("button", { name: "Save schedule" }).click();
      await p.getByText("Schedule saved: monthly.").waitFor();
      await p.locator('label.method-choice[data-kind="sepa"]').click();
      await sepa.getByLabel("Account holder").fill("Paula Payee");
      await sepa.getByLabel("IBAN").fill("de89 3704 0044 0532 0130 00");
      await p.getByLabel("Your password").fill(PASSWORD);
      await p.getByRole("button", { name: "Save payout method" }).click();
      await p.getByText(/^Payout method saved: SEPA transfer/).waitFor();
      await p
        .locator(".payout-hold h2")
        .getByText(/^Payouts are on hold until /)
        .waitFor();
      // (The hold ends before the next monthly payout date: that one is not held.)
      assert.match(
        await p.locator(".next-payout .next-status").textContent(),
        /Not paid Below the minimum of 1 USDC/,
      );
      assert.match(
        await p.locator(".current-method").textContent(),
        /DE89 3704 0044 0532 0130 00/,
      );
      await shoot(p, "96-payments-hold");

      // --- past the hold, a monthly run pays by SEPA: the file, sent, failed, retried,
      // sent again and paid
      await second;
      await release(HOLD_AFTER_CHANGE_S + 60);
      await a.getByLabel("Schedule").selectOption("monthly");
      await a.getByLabel("EUR per USDC (optional)").fill("0.92");
      await a.getByRole("button", { name: "Start the run" }).click();
      await heading(a, /^Monthly payout run · /);
      const file = a.locator("table.bank-files tbody tr").first();
      await file.waitFor({ timeout: 30000 });
      const fileName = await file.getAttribute("data-file");
      assert.match(fileName, /-sepa\.xml$/);
      const xml = await a.evaluate(
        async (u) => (await fetch(u)).text(),
        await file.locator("a.file-link").getAttribute("href"),
      );
      assert.match(xml, /pain\.001\.001\.09/);
      const bankRow = a.locator("table.run-payouts tbody tr").first();
      await bankRow.locator(".payout-state[data-state=planned]").waitFor();
      await file.getByRole("button", { name: `Mark ${fileName} sent` }).click();
      await bankRow.locator(".payout-state[data-state=submitted]").waitFor();
      await shoot(a, "97-admin-run-bank");
      await bankRow.getByRole("button", { name: /failed$/ }).click();
      await bankRow.getByLabel("Reason").fill("AC04 account closed");
      await bankRow.getByRole("button", { name: "Record failed" }).click();
      await bankRow.locator(".payout-state[data-state=failed]").waitFor();
      assert.match(
        await bankRow.locator(".failure").textContent(),
        /AC04 account closed/,
      );
      await bankRow.getByRole("button", { name: /^Retry/ }).click();
      const file2 = a.locator("table.bank-files tbody tr[data-state=written]");
      await file2.waitFor({ timeout: 30000 });
      const file2Name = await file2.getAttribute("data-file");
      assert.notEqual(file2Name, fileName);
      await file2
        .getByRole("button", { name: `Mark ${file2Name} sent` })
        .click();
      await bankRow.locator(".payout-state[data-state=submitted]").waitFor();
      await bankRow.getByRole("button", { name: /paid$/ }).click();
      await bankRow.getByLabel("Bank reference (optional)").fill("BANKREF-77");
      await bankRow.getByRole("button", { name: "Record paid" }).click();
      await bankRow.locator(".payout-state[data-state=confirmed]").waitFor();
      await a.locator(".run-summary .run-state[data-state=done]").waitFor();
      assert.equal(
        (await bankRow.locator(".bank-reference .ident").textContent()).trim(),
        "BANKREF-77",
      );
      assert.match(
        await bankRow.locator(".payout-amount").textContent(),
        / = \d+\.\d\d EUR/,
      );
      await shoot(a, "98-admin-run-bank-paid");

      // --- the customer tops up: the link, the QR code, paid from a wallet, credited
      await logIn(c, custEmail, { base: srv.base });
      await nav(c, "Balance").click();
      await heading(c, "Balance");
      await c.getByRole("link", { name: "Top up with USDC" }).click();
      await heading(c, "Top up your balance");
      await expectLabelled(c, "the Top up page");
      await c.getByLabel("Amount (USDC)").fill("12.5");
      await c
        .getByRole("button", { name: "Create the payment request" })
        .click();
      await heading(c, "Top-up of 12.50 USDC");
      const link = c.getByRole("link", { name: "Open in a wallet" });
      const url = await link.getAttribute("href");
      assert.match(url, /^solana:/);
      assert.match(url, /amount=12\.5(&|$)/);
      const qr = c.locator(".topup-qr img");
      await until(
        () => qr.evaluate((img) => img.complete && img.naturalWidth > 0),
        10000,
        "the QR code loaded",
      );
      assert.match(await qr.getAttribute("alt"), /QR code/);
      const reference = (
        await c.locator(".topup-reference .ident").textContent()
      ).trim();
      assert.ok(url.includes(`reference=${reference}`), url);
      await c.locator('.topup-status[data-status="pending"]').waitFor();
      await shoot(c, "99-topup-pending");
      const balanceBefore = (
        await srv.apiOk("GET", "/me/balance", undefined, cust.token)
      ).balance_micro;
      const payer = await front.call("test_newWallet");
      await front.call("test_mintUsdc", payer.public_key, 20_000_000);
      const paid = await front.pay(url, payer);
      await c.locator(".topup-credited").waitFor({ timeout: 30000 });
      assert.equal(
        await c.locator(".topup-credited .credited-amount").textContent(),
        "12.50 USDC",
      );
      assert.equal(
        (await c.locator(".topup-signature .ident").textContent()).trim(),
        paid,
      );
      await shoot(c, "100-topup-credited");
      await c.getByRole("link", { name: "All top-ups" }).click();
      await c
        .locator('table.topups tr[data-status="credited"]')
        .first()
        .waitFor();
      await shoot(c, "102-topups-list");
      const after = await srv.apiOk(
        "GET",
        "/me/balance",
        undefined,
        cust.token,
      );
      assert.equal(after.balance_micro, balanceBefore + 12_500_000);
      await nav(c, "Balance").click();
      await c
        .locator(".balance-now .money-value", {
          hasText: `${usdcText(after.balance_micro)} USDC`,
        })
        .waitFor();

      assert.deepEqual(P.problems, []);
      assert.deepEqual(A.problems, []);
      assert.deepEqual(C.problems, []);
      console.log(
        `earnings/payouts/top-ups: setup ${setupMs} ms, browser ${Date.now() - started - setupMs} ms`,
      );
    },
  );

  test("without Solana or bank accounts: no top-ups, no payout methods", async (t) => {
    const x = await newPage();
    t.after(() => x.context.close());
    const page = x.page;
    // A provider: every method is shown, disabled, with why.
    const prov = await server.approvedProvider("Nico Nopay", PASSWORD);
    await logIn(page, prov.email);
    await page.goto(server.base + "/#/provider/payments");
    await page.locator(".method-choices").waitFor();
    for (const kind of ["solana", "sepa", "ach"]) {
      const choice = page.locator(`label.method-choice[data-kind="${kind}"]`);
      assert.equal(await choice.locator("input").isDisabled(), true);
      assert.match(await choice.textContent(), /Not offered: /);
    }
    await shoot(page, "103-payments-not-offered");
    await page.getByRole("button", { name: "Log out" }).click();
    await heading(page, "Log in");
    await signUp(page, "Nadia Nosol", uniqueEmail("nadia"));
    await page.goto(server.base + "/#/balance/top-up");
    await heading(page, "Top up your balance");
    await page.getByLabel("Amount (USDC)").fill("5");
    await page
      .getByRole("button", { name: "Create the payment request" })
      .click();
    await page
      .locator(".topup-not-offered")
      .getByText(/not offered/)
      .waitFor();
    await shoot(page, "101-topup-not-offered");
    assert.deepEqual(x.problems, []);
  });
});
