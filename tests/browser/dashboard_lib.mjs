// What the dashboard's two walks share: dashboard.test.mjs (the provider's side, account
// security, XSS) and dashboard_money.test.mjs (rentals, balances, the ledger, earnings,
// payouts and top-ups), which ctest runs side by side. Each file calls useSuiteServer()
// once: its own gpunexd (a throw-away data directory with its first admin, harness.mjs
// Gpunexd) and browser, started before its first test and stopped after its last; the
// helpers here drive the pages of that `server` through that `browser`.
import assert from "node:assert/strict";
import { after, before } from "node:test";
import {
  ADMIN,
  DESKTOP,
  Gpunexd,
  launchBrowser,
  unlabelled,
  watch,
} from "./harness.mjs";

export const PASSWORD = "correct-horse-battery";

// The suite's gpunexd (a live binding: useSuiteServer's hook sets it) and browser.
export let server;
let browser;

export function useSuiteServer() {
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
}

export async function newPage(opts = {}) {
  const context = await browser.newContext({ viewport: DESKTOP, ...opts });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const problems = watch(page);
  return { context, page, problems };
}

export async function expectLabelled(page, where) {
  assert.deepEqual(
    await unlabelled(page),
    [],
    `form controls without a label on ${where}`,
  );
}

export async function heading(page, text) {
  await page.getByRole("heading", { level: 1, name: text }).waitFor();
}

export async function signUp(page, name, email) {
  await page.goto(server.base + "/#/login");
  await heading(page, "Log in");
  await page.getByRole("link", { name: "Sign up" }).first().click();
  await heading(page, "Create your gpunex account");
  await expectLabelled(page, "sign-up");
  await page.getByLabel("Your name").fill(name);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Create account" }).click();
  await heading(page, "Your roles");
}

// Logs in with the form, on the suite's server unless `base` names another.
export async function logIn(
  page,
  email,
  { password = PASSWORD, base = server.base } = {},
) {
  await page.goto(base + "/#/login");
  await heading(page, "Log in");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
  // Reviewers land on the review queue, everyone else on Roles.
  await heading(page, email === ADMIN.email ? "Review queue" : "Your roles");
}

// Logs in with the keyboard only: the e-mail field has the focus, Tab, Enter.
export async function logInByKeyboard(page, email, password) {
  await page.goto(server.base + "/#/login");
  await heading(page, "Log in");
  await page.keyboard.type(email);
  await page.keyboard.press("Tab");
  await page.keyboard.type(password);
  await page.keyboard.press("Enter");
  // Reviewers land on the review queue, everyone else on Roles.
  await heading(page, email === ADMIN.email ? "Review queue" : "Your roles");
}

// A link of the header's navigation.
export function nav(page, name) {
  return page.locator("header nav").getByRole("link", { name });
}
