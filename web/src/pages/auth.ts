// Sign-up and log-in. The session is the HttpOnly cookie log-in sets; the CSRF token
// from the answer goes with every request that changes something.
import * as api from "../api";
import { afterLoginPath, navigate, pageHeader, session, signedIn, type View } from "../app";
import { append, busy, field, h } from "../dom";
import { clearFieldErrors, noticeBanner, StatusSlot } from "../errors";

async function logIn(email: string, password: string): Promise<void> {
  const ans = await api.post<api.LoginAnswer>("/auth/login", { email, password }, { quiet401: true });
  signedIn(ans.user, ans.csrf_token);
}

function input(type: string, name: string, autocomplete: string, field_: string): HTMLInputElement {
  return h("input", { type, name, autocomplete, required: true, "data-field": field_ });
}

export function loginPage(v: View): void {
  if (session.user) {
    navigate("/roles");
    return;
  }
  const email = input("email", "email", "username", "email");
  const password = input("password", "password", "current-password", "password");
  const status = new StatusSlot();
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Log in");
  const form = h(
    "form",
    { class: "card narrow", novalidate: true, "aria-labelledby": "login-title" },
    status.el,
    field("Email", email),
    field("Password", password),
    h("div", { class: "actions" }, submit),
    h("p", { class: "muted" }, "No account yet? ", h("a", { href: "#/signup" }, "Sign up")),
  );
  const browse = h(
    "section",
    { class: "card narrow market-teaser", "aria-labelledby": "teaser-title" },
    h("h2", { id: "teaser-title" }, "Looking for GPUs?"),
    h(
      "p",
      null,
      "See every offer with its measured performance, reliability and price per GPU-hour. No account needed to look.",
    ),
    h("a", { class: "btn btn-secondary", href: "#/marketplace" }, "Browse the marketplace"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      status.clear();
      clearFieldErrors(form);
      try {
        await logIn(email.value.trim(), password.value);
        navigate(afterLoginPath());
      } catch (e) {
        if (!status.formError(form, e, "Log-in failed")) password.focus();
      }
    });
  });
  const message = v.query.get("m");
  const header = pageHeader("Log in", "Providers, customers and reviewers all log in here.");
  header.querySelector("h1")?.setAttribute("id", "login-title");
  append(
    v.main,
    header,
    message ? h("div", { class: "banner banner-info", role: "status" }, message) : null,
    form,
    browse,
  );
  email.focus();
}

export function signupPage(v: View): void {
  if (session.user) {
    navigate("/roles");
    return;
  }
  const name = input("text", "name", "name", "name");
  const email = input("email", "email", "email", "email");
  const password = input("password", "password", "new-password", "password");
  password.minLength = 10;
  const status = new StatusSlot();
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Create account");
  const form = h(
    "form",
    { class: "card narrow", novalidate: true, "aria-labelledby": "signup-title" },
    status.el,
    field("Your name", name),
    field("Email", email),
    field("Password", password, {
      hint: "At least 10 characters, not made of your name or email, and not one of the common passwords.",
    }),
    h("div", { class: "actions" }, submit),
    h("p", { class: "muted" }, "Already registered? ", h("a", { href: "#/login" }, "Log in")),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      status.clear();
      clearFieldErrors(form);
      try {
        await api.post("/auth/signup", {
          name: name.value.trim(),
          email: email.value.trim(),
          password: password.value,
        });
      } catch (e) {
        status.formError(form, e, "Sign-up failed");
        return;
      }
      try {
        await logIn(email.value.trim(), password.value);
        // Back to the page that asked for an account (an offer's Rent), else Roles.
        navigate(afterLoginPath());
      } catch {
        // Sign-up answers alike whether or not the address had an account (its owner is
        // emailed instead), so this says the same either way.
        status.el.replaceChildren(
          noticeBanner(
            `Check your email: if ${email.value.trim()} is new to gpunex, your account is ready and the ` +
              "link that confirms the address is there; if it had an account already, we emailed its owner. " +
              "Log in with that account's password.",
            "info",
          ),
        );
      }
    });
  });
  const header = pageHeader("Create your gpunex account", "Rent GPUs as a customer, or apply to provide your own.");
  header.querySelector("h1")?.setAttribute("id", "signup-title");
  append(v.main, header, form);
  name.focus();
}
