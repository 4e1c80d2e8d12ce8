// The application shell: the signed-in user, the hash router (#/roles, #/applications/ID,
// ... as the platform's emails link them), the header with its navigation, and the life
// cycle of a page (its requests and timers end when the page is left).
import * as api from "./api";
import { append, h, replace } from "./dom";
import { errorBanner, isAbort } from "./errors";
import { notFoundPage } from "./pages/notfound";
import { verifyReminder } from "./pages/verify";

export const session: { user: api.User | null } = { user: null };

export function hasRole(role: api.Role): boolean {
  return session.user?.roles.includes(role) ?? false;
}

// What a page gets to render into.
export interface View {
  readonly main: HTMLElement;
  readonly params: Record<string, string>;
  readonly query: URLSearchParams;
  readonly signal: AbortSignal; // aborted when the page is left
  // Runs `fn` when the page is left (timers, listeners).
  onLeave(fn: () => void): void;
  // Repeats `fn` every `ms` while the page is shown; a run starts only after the last ended.
  every(ms: number, fn: () => Promise<void> | void): void;
}

export type PageFn = (view: View) => void | Promise<void>;

interface Route {
  pattern: string; // "/review/:id"
  title: string;
  page: PageFn;
  auth: boolean; // needs a signed-in user
}

const routes: Route[] = [];

export function route(pattern: string, title: string, page: PageFn, auth = true): void {
  routes.push({ pattern, title, page, auth });
}

export function navigate(path: string): void {
  if (location.hash === "#" + path) void render();
  else location.hash = path;
}

export function currentPath(): string {
  const raw = location.hash.replace(/^#/, "") || "/";
  return raw.split("?")[0] || "/";
}

function match(pattern: string, path: string): Record<string, string> | null {
  const ps = pattern.split("/").filter(Boolean);
  const xs = path.split("/").filter(Boolean);
  if (ps.length !== xs.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    if (ps[i].startsWith(":")) params[ps[i].slice(1)] = decodeURIComponent(xs[i]);
    else if (ps[i] !== xs[i]) return null;
  }
  return params;
}

// ---- the shell

const header = h("header", { class: "topbar" });
// Under the header: what waits for the user (the confirmation of their email address).
const reminder = h("div", { class: "shell-reminder" });
const mainEl = h("main", { id: "main", tabindex: "-1" });
let unreadBadge: HTMLElement | null = null;
let leaving: (() => void) | null = null;

export function mountShell(root: HTMLElement): void {
  replace(
    root,
    h("a", { class: "skip-link", href: "#main", onclick: skipToMain }, "Skip to content"),
    header,
    reminder,
    mainEl,
  );
  window.addEventListener("hashchange", () => void render());
  window.setInterval(() => void refreshUnread(), 20000);
}

function skipToMain(ev: Event): void {
  ev.preventDefault();
  mainEl.focus();
}

function navLink(path: string, text: string, extra?: HTMLElement | null): HTMLElement {
  const current = currentPath() === path || currentPath().startsWith(path + "/");
  return h(
    "li",
    null,
    h(
      "a",
      { href: "#" + path, "aria-current": current ? "page" : null, class: current ? "active" : null },
      text,
      extra,
    ),
  );
}

function renderHeader(): void {
  const brand = h("a", { class: "brand", href: session.user ? "#/roles" : "#/" }, "gpunex");
  const links: HTMLElement[] = [];
  const user = session.user;
  if (user) {
    links.push(navLink("/roles", "Roles"), navLink("/marketplace", "Marketplace"));
    // Admins see every rental on the Rentals page; jobs and a balance are a customer's.
    if (hasRole("customer") || hasRole("admin")) links.push(navLink("/rentals", "Rentals"));
    if (hasRole("customer")) links.push(navLink("/jobs", "Jobs"), navLink("/balance", "Balance"));
    if (hasRole("provider")) links.push(navLink("/provider", "Provider Dashboard"));
    if (hasRole("admin"))
      links.push(
        navLink("/review", "Review queue"),
        navLink("/admin", "Admin"),
        navLink("/admin/billing", "Credits & ledger"),
        navLink("/admin/payouts", "Payouts"),
      );
    unreadBadge = h("span", { class: "count", hidden: true });
    links.push(navLink("/notifications", "Notifications", unreadBadge));
  } else {
    links.push(navLink("/marketplace", "Marketplace"), navLink("/login", "Log in"), navLink("/signup", "Sign up"));
  }
  const account = user
    ? h(
        "div",
        { class: "account" },
        // The user menu: the name opens Account security (password, sessions, API keys).
        h(
          "a",
          {
            class: currentPath() === "/account" ? "who active" : "who",
            href: "#/account",
            title: `${user.email}: account security`,
            "aria-current": currentPath() === "/account" ? "page" : null,
          },
          user.name || user.email,
        ),
        h("button", { type: "button", class: "btn btn-link", onclick: () => void logout() }, "Log out"),
      )
    : null;
  replace(header, brand, h("nav", { "aria-label": "Main" }, h("ul", null, links)), account);
  // The verification page says it all itself.
  replace(reminder, user && currentPath() !== "/verify-email" ? verifyReminder(user) : null);
  if (user) void refreshUnread();
}

export async function refreshUnread(): Promise<void> {
  if (!session.user || !unreadBadge) return;
  const badge = unreadBadge;
  try {
    const page = await api.get<api.NotificationPage>("/notifications?unread=true&limit=1");
    badge.textContent = String(page.unread_count);
    badge.hidden = page.unread_count === 0;
    badge.setAttribute("aria-label", `${page.unread_count} unread`);
  } catch {
    badge.hidden = true; // the badge is a hint; the page itself reports errors
  }
}

async function logout(): Promise<void> {
  try {
    await api.post("/auth/logout");
  } catch (e) {
    // The session may have ended already; leave the app either way.
    if (!(e instanceof api.ApiError && e.status === 401)) {
      replace(mainEl, errorBanner(e, "Log out failed"));
      return;
    }
  }
  signedOut();
}

// Re-reads the user (roles change when an application is approved) and updates the
// header when they did.
export async function refreshMe(signal?: AbortSignal): Promise<api.User | null> {
  if (!session.user) return null;
  const me = await api.get<api.User>("/me", { signal });
  const changed =
    me.roles.join() !== session.user?.roles.join() ||
    me.name !== session.user?.name ||
    me.email_verified !== session.user?.email_verified;
  session.user = me;
  if (me.csrf_token) api.setCsrfToken(me.csrf_token);
  if (changed) renderHeader();
  return me;
}

export function signedIn(user: api.User, csrf: string): void {
  session.user = user;
  api.setCsrfToken(csrf);
}

export function signedOut(message?: string): void {
  session.user = null;
  api.setCsrfToken("");
  sessionStorage.removeItem("gpunex.return");
  navigate("/login" + (message ? "?m=" + encodeURIComponent(message) : ""));
}

export async function render(): Promise<void> {
  leaving?.();
  leaving = null;
  const path = currentPath();
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  let found: { r: Route; params: Record<string, string> } | null = null;
  for (const r of routes) {
    const params = match(r.pattern, path);
    if (params) {
      found = { r, params };
      break;
    }
  }
  if (!found) {
    // An address no page has: said so, not another page shown in its place.
    found = {
      r: { pattern: path, title: "Page not found", page: (v) => notFoundPage(v, path), auth: false },
      params: {},
    };
  }
  if (found.r.auth && !session.user) {
    // The whole route, query included (#/provider/benchmark?machine=ID from an email).
    sessionStorage.setItem("gpunex.return", location.hash.replace(/^#/, "") || path);
    navigate("/login");
    return;
  }
  renderHeader();
  if (found.r.auth) refreshMe().catch(() => {}); // a 401 here signs out through the handler
  document.title = `${found.r.title} · gpunex`;

  const controller = new AbortController();
  const cleanups: Array<() => void> = [];
  leaving = () => {
    controller.abort();
    cleanups.forEach((fn) => fn());
  };
  const page = h("div", { class: "page" });
  replace(mainEl, page);
  const view: View = {
    main: page,
    params: found.params,
    query,
    signal: controller.signal,
    onLeave: (fn) => cleanups.push(fn),
    every: (ms, fn) => {
      let timer = 0;
      const tick = async () => {
        try {
          await fn();
        } finally {
          if (!controller.signal.aborted) timer = window.setTimeout(tick, ms);
        }
      };
      timer = window.setTimeout(tick, ms);
      cleanups.push(() => window.clearTimeout(timer));
    },
  };
  // A page still empty after a moment is waiting for its first answer: it says so until
  // it has rendered (or failed).
  const loading = h(
    "p",
    { class: "page-loading", role: "status" },
    h("span", { class: "spinner", "aria-hidden": "true" }),
    "Loading…",
  );
  const loadingTimer = window.setTimeout(() => {
    if (!page.firstChild) page.appendChild(loading);
  }, 150);
  try {
    await found.r.page(view);
  } catch (e) {
    if (!isAbort(e) && !controller.signal.aborted) append(page, errorBanner(e));
  } finally {
    window.clearTimeout(loadingTimer);
    loading.remove();
  }
  // Move focus to the page's heading so keyboard and screen-reader users start there.
  if (!controller.signal.aborted && !page.contains(document.activeElement)) {
    const h1 = page.querySelector<HTMLElement>("h1");
    if (h1) {
      h1.tabIndex = -1;
      h1.focus({ preventScroll: true });
    }
  }
}

// The page to go to after log-in: the one that asked for it, else the review queue for
// reviewers and the Roles page for everyone else.
export function afterLoginPath(): string {
  const back = sessionStorage.getItem("gpunex.return");
  sessionStorage.removeItem("gpunex.return");
  if (back && back !== "/login" && back !== "/signup") return back;
  return hasRole("admin") ? "/review" : "/roles";
}

// A message for the next page shown ("Draft saved"), after a navigation.
let flashText: string | null = null;
export function flash(text: string): void {
  flashText = text;
}
export function takeFlash(): string | null {
  const t = flashText;
  flashText = null;
  return t;
}

// A page heading with an optional line under it.
export function pageHeader(title: string, sub?: string | Node | null, actions?: Node | null): HTMLElement {
  return h(
    "div",
    { class: "page-header" },
    h("div", null, h("h1", null, title), sub ? h("p", { class: "sub" }, sub) : null),
    actions ?? null,
  );
}
