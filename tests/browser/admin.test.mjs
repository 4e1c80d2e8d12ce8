// The operator's pages in a real browser against a real gpunexd (issue 30 item 9): the
// admin finds a user by part of their email, opens them (roles, balance, rentals), reads
// the providers with their machines and every machine with its status; lists every
// rental by state, opens an ended one and refunds part of its charge: too much and no
// reason are refused by name and change nothing, the refund asks first, then shows where
// the money came from; the customer's statement and rental show it and the ledger still
// balances. Screenshots of every page at laptop and phone width.
//
// The refund needs a rental that ran and was charged: a private Docker engine with a
// busybox image (harness.mjs TestDockerd; that test skips with the reason without root,
// dockerd or busybox-static).
//
// Run: ctest -R browser_admin (see harness.mjs for the environment).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ADMIN,
  Agent,
  badAmounts,
  DESKTOP,
  dockerMissing,
  Gpunexd,
  launchBrowser,
  shoot,
  sleep,
  TestDockerd,
  uniqueEmail,
  unlabelled,
  until,
  watch,
} from "./harness.mjs";

const PASSWORD = "correct-horse-battery";
const BUSYBOX_REF = "gpunex-test/busybox:1";

let server;
let browser;
let adminToken;

before(async () => {
  server = new Gpunexd();
  server.createAdmin();
  await server.start();
  browser = await launchBrowser();
  adminToken = (
    await server.apiOk("POST", "/auth/login", {
      email: ADMIN.email,
      password: ADMIN.password,
    })
  ).token;
});

after(async () => {
  await browser?.close();
  await server?.cleanup();
});

async function adminPage() {
  const context = await browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const problems = watch(page);
  await page.goto(server.base + "/#/login");
  await page.getByLabel("Email").fill(ADMIN.email);
  await page.getByLabel("Password").fill(ADMIN.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page
    .locator("header nav")
    .getByRole("link", { name: "Admin" })
    .waitFor();
  return { context, page, problems };
}

async function heading(page, text) {
  await page.getByRole("heading", { level: 1, name: text }).waitFor();
}

async function customer(name) {
  const email = uniqueEmail(name.split(" ")[0].toLowerCase());
  const user = await server.apiOk("POST", "/auth/signup", {
    email,
    password: PASSWORD,
    name,
  });
  await server.confirmEmail(email);
  const login = await server.apiOk("POST", "/auth/login", {
    email,
    password: PASSWORD,
  });
  return { email, id: user.user.id, token: login.token };
}

describe("admin pages", () => {
  test(
    "users, one user, providers and machines",
    { timeout: 150000 },
    async () => {
      const prov = await server.approvedProvider("Petra Provider", PASSWORD, {
        region: "eu-south",
        prices: { "l4-24gb": 450000 },
      });
      // A machine (no Docker Engine: it joins and reports, which is all these pages read).
      const agent = new Agent(server, prov.agentToken, "l4-24gb:2", {
        name: "admin-agent",
      });
      const cust = await customer("Ulla Umlaut");
      await server.apiOk(
        "POST",
        "/admin/credits",
        { email: cust.email, amount_micro: 12_500_000, reference: "wire 42" },
        adminToken,
      );
      const { context, page: a, problems } = await adminPage();
      try {
        await until(
          async () =>
            (await server.apiOk("GET", "/machines", undefined, adminToken))
              .items.length === 1,
          60000,
          "the agent's machine",
        ).catch((e) => {
          throw new Error(`${e.message}\n${agent.logs()}\n${server.logs()}`);
        });

        // --- users: a search by part of the email, then the user
        await a
          .locator("header nav")
          .getByRole("link", { name: "Admin" })
          .click();
        await heading(a, "Users");
        assert.deepEqual(await unlabelled(a), []);
        await a.getByLabel("Find a user").fill("ulla");
        await a.getByRole("button", { name: "Find" }).click();
        const row = a.locator("table.admin-users tbody tr");
        await row.first().waitFor();
        assert.equal(await row.count(), 1);
        assert.match(await row.first().innerText(), /Ulla Umlaut/);
        await shoot(a, "admin-01-users-search");
        // Too short a search is refused by name.
        await a.getByLabel("Find a user").fill("u");
        await a.getByRole("button", { name: "Find" }).click();
        await a
          .getByText(/must be 2 to 254 characters/)
          .first()
          .waitFor();
        await a.getByLabel("Find a user").fill("umlaut");
        await a.getByRole("button", { name: "Find" }).click();
        await a.getByRole("link", { name: "Ulla Umlaut" }).click();
        await heading(a, "Ulla Umlaut");
        const facts = a.locator(".admin-user");
        assert.match(await facts.innerText(), /12\.50 USDC/);
        assert.match(await facts.innerText(), /customer/);
        assert.match(await facts.innerText(), /Not a provider/);
        assert.match(await a.locator("main").innerText(), /No rentals\./);
        await shoot(a, "admin-02-user");
        // Credit this user: the credit form has their email already.
        await a.getByRole("link", { name: "Credit this user…" }).click();
        await heading(a, "Credits and ledger");
        assert.equal(
          await a.getByLabel("User id or email").inputValue(),
          cust.email,
        );

        // --- providers, with their machines
        await a.getByRole("link", { name: "Providers" }).click();
        await heading(a, "Providers");
        const pr = a.locator("table.admin-providers tbody tr");
        await pr.first().waitFor();
        const text = await a.locator("table.admin-providers").innerText();
        assert.match(text, /Petra Provider/);
        assert.match(text, /Community/);
        assert.match(text, /1 of 1 online/);
        assert.match(text, /20 %/); // the Community commission
        await shoot(a, "admin-03-providers");

        // --- machines, all and by status; from the provider's row its own
        await a.getByRole("link", { name: "1 of 1 online" }).click();
        await heading(a, "Machines");
        const mrow = a.locator("table.admin-machines tbody tr");
        await mrow.first().waitFor();
        assert.equal(await mrow.count(), 1);
        assert.match(await mrow.first().innerText(), /Online/);
        assert.match(await mrow.first().innerText(), /Petra Provider/);
        await a
          .locator(".admin-tabs")
          .getByRole("link", { name: "Machines" })
          .click();
        await a.getByRole("link", { name: "Offline", exact: true }).click();
        await a.getByText("No machine matches.").waitFor();
        await a.getByRole("link", { name: "Online", exact: true }).click();
        await mrow.first().waitFor();
        await shoot(a, "admin-04-machines");
        // The provider's own page from the machine's row.
        await mrow.first().locator("td[data-label=Provider] a").click();
        await heading(a, "Petra Provider");
        assert.match(
          await a.locator(".admin-user").innerText(),
          /Community, active/,
        );
        assert.match(await a.locator(".admin-user").innerText(), /provider/);
        await shoot(a, "admin-05-provider-user");
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
        await agent.stop();
      }
    },
  );

  test(
    "every rental by state, and a refund of part of one",
    { timeout: 300000, skip: dockerMissing() ?? false },
    async (t) => {
      const docker = new TestDockerd();
      let agent = null;
      t.after(async () => {
        await agent?.stop();
        await docker.stop();
      });
      await docker.start();
      await docker.importBusybox(BUSYBOX_REF);
      const prov = await server.approvedProvider("Rolf Racks", PASSWORD, {
        region: "us-west",
        prices: { "l4-24gb": 3_600_000 }, // 1,000 micro-USDC a second
      });
      agent = new Agent(server, prov.agentToken, "l4-24gb:1", {
        name: "refund-agent",
        dockerSocket: docker.socket,
      });
      const offer = await until(
        async () =>
          (await server.apiOk("GET", "/offers?region=us-west")).items.find(
            (o) => o.gpus_available === 1,
          ),
        90000,
        "the provider's offer",
      ).catch((e) => {
        throw new Error(`${e.message}\n${agent.logs()}\n${server.logs()}`);
      });
      const cust = await customer("Rita Refund");
      await server.apiOk(
        "POST",
        "/admin/credits",
        { email: cust.email, amount_micro: 20_000_000, reference: "wire 7" },
        adminToken,
      );
      const made = await server.apiOk(
        "POST",
        "/rentals",
        {
          offer_id: offer.id,
          gpus: 1,
          image: BUSYBOX_REF,
          command: ["/bin/sleep", "600"],
        },
        cust.token,
      );
      const get = async () =>
        server.apiOk("GET", `/rentals/${made.id}`, undefined, cust.token);
      await until(
        async () => (await get()).state === "running",
        60000,
        "the rental running",
      ).catch((e) => {
        throw new Error(`${e.message}\n${agent.logs()}\n${server.logs()}`);
      });
      await sleep(4000);
      await server.apiOk("POST", `/rentals/${made.id}/stop`, {}, cust.token);
      const ended = await until(
        async () => {
          const r = await get();
          return r.state === "ended" ? r : null;
        },
        60000,
        "the rental ended",
      );
      const charged = ended.charged_micro;
      assert.ok(charged >= 2000, `charged ${charged}`);
      const balance = async () =>
        (await server.apiOk("GET", "/me/balance", undefined, cust.token))
          .balance_micro;
      const paid = await balance();
      assert.equal(paid, 20_000_000 - charged);

      const { context, page: a, problems } = await adminPage();
      try {
        // --- every rental, by state
        await a.goto(server.base + "/#/admin/rentals");
        await heading(a, "Rentals");
        const rows = a.locator("table.admin-rentals tbody tr");
        await rows.first().waitFor();
        assert.match(await rows.first().innerText(), /Ended/);
        await a
          .locator(".rental-states")
          .getByRole("link", { name: "Running" })
          .click();
        await a.getByText("No rental in this state.").waitFor();
        await a
          .locator(".rental-states")
          .getByRole("link", { name: "Ended" })
          .click();
        await a.locator(`tr[data-rental-id="${made.id}"]`).waitFor();
        await shoot(a, "admin-06-rentals-ended");

        // --- the rental, and its refund form
        await a.locator(`tr[data-rental-id="${made.id}"] a`).first().click();
        await a.locator(".refund-form").waitFor();
        assert.deepEqual(await unlabelled(a), []);
        const card = a.locator(".admin-rental");
        assert.match(await card.innerText(), /Ended/);
        assert.match(await card.innerText(), /Rolf Racks/);
        await shoot(a, "admin-07-rental-refund-form");
        const amount = a.getByLabel("Amount (USDC)");
        const reason = a.getByLabel("Reason");
        // Too much and no reason: both named at once, nothing sent.
        await amount.fill(((charged + 1000) / 1e6).toFixed(6));
        await a.getByRole("button", { name: "Refund…" }).click();
        const summary = a.locator(".status-slot").first();
        await summary.getByText(/left to refund/).waitFor();
        assert.match(await summary.innerText(), /Reason/i);
        await shoot(a, "admin-08-refund-errors");
        assert.equal(await balance(), paid);
        // Half of it, asked first.
        const half = Math.floor(charged / 2);
        await amount.fill((half / 1e6).toFixed(6));
        await reason.fill("the image pull was slow");
        await a.getByRole("button", { name: "Refund…" }).click();
        const yes = a.getByRole("button", { name: /^Refund (\d|<)/ });
        await yes.waitFor();
        await shoot(a, "admin-09-refund-confirm");
        await yes.click();
        await a.locator(".refund-done").waitFor();
        assert.match(
          await a.locator(".refund-done").innerText(),
          /from the platform.*from the provider's pending earnings/,
        );
        assert.equal(await balance(), paid + half);
        assert.equal(
          (await get()).refunded_micro,
          half,
          "the rental shows the refund",
        );
        // Amounts two decimals (issue 30 item 12); the exact amount on hover.
        assert.equal(
          await a.locator(".refund-done .amount").first().getAttribute("title"),
          `${(half / 1e6).toFixed(6).replace(/0{1,4}$/, "")} USDC`,
        );
        const amounts = await badAmounts(a);
        assert.deepEqual(amounts.bad, []);
        assert.ok(amounts.count >= 4, `${amounts.count} amounts`);
        await shoot(a, "admin-10-refund-done");
        // What is left now is the most the server takes: one micro more is refused there.
        const over = await server.api(
          "POST",
          `/admin/rentals/${made.id}/refund`,
          { amount_micro: charged - half + 1, reason: "too much" },
          adminToken,
        );
        assert.equal(over.status, 422);
        assert.ok(over.body.error.fields.amount_micro);
        // The rest, with "All of it".
        await a.getByRole("button", { name: "All of it" }).click();
        await reason.fill("the rest, goodwill");
        await a.getByRole("button", { name: "Refund…" }).click();
        // (Refund 0.01 USDC, or Refund <0.01 USDC for less than half a cent.)
        await a.getByRole("button", { name: /^Refund (\d|<)/ }).click();
        await a.getByText("Nothing is left to refund.").waitFor();
        assert.equal(await balance(), 20_000_000);
        await shoot(a, "admin-11-refunded-in-full");

        // The customer's statement names the refunds with their reason.
        const st = await server.apiOk(
          "GET",
          "/me/statement",
          undefined,
          cust.token,
        );
        const refunds = st.items.filter((e) => e.kind.startsWith("refund_"));
        assert.equal(
          refunds.reduce((n, e) => n + e.amount_micro, 0),
          charged,
        );
        assert.ok(
          refunds.some(
            (e) => e.reference === "refund: the image pull was slow",
          ),
        );
        const check = await server.apiOk(
          "GET",
          "/admin/ledger/check",
          undefined,
          adminToken,
        );
        assert.equal(check.ok, true);
        assert.equal(check.sum_micro, 0);

        // The customer's page, from the rental's, lists it with what was refunded.
        await a.locator(".admin-rental").locator("dd a").first().click();
        await heading(a, "Rita Refund");
        const mine = a.locator(
          `table.user-rentals tr[data-rental-id="${made.id}"]`,
        );
        await mine.waitFor();
        assert.match(await mine.innerText(), /Ended/);
        await shoot(a, "admin-12-customer-rentals");
        // The provider's page lists it among the rentals on their machines.
        await a.goto(server.base + `/#/admin/rentals/${made.id}`);
        await a.getByRole("link", { name: "Rolf Racks" }).click();
        await heading(a, "Rolf Racks");
        await a
          .locator(`table.provider-rentals tr[data-rental-id="${made.id}"]`)
          .waitFor();
        await shoot(a, "admin-13-provider-rentals");
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    },
  );
});
