// The landing page (#/) for visitors: what gpunex is, for whom, and the ways in (the
// Marketplace without an account, log-in, sign-up). A signed-in user goes to Roles.
import { navigate, session, type View } from "../app";
import { append, h } from "../dom";

function point(title: string, text: string): HTMLElement {
  return h("li", { class: "card landing-point" }, h("h3", null, title), h("p", null, text));
}

export function landingPage(v: View): void {
  if (session.user) {
    navigate("/roles");
    return;
  }
  append(
    v.main,
    h(
      "section",
      { class: "landing-hero", "aria-labelledby": "landing-title" },
      h("h1", { id: "landing-title" }, "GPUs by the hour, from providers you can check"),
      h(
        "p",
        { class: "lead" },
        "gpunex is a GPU compute marketplace. Customers rent NVIDIA GPUs for training, inference and rendering and pay per GPU-hour in USDC. Providers connect their machines with a small agent and earn from every hour rented.",
      ),
      h(
        "div",
        { class: "actions" },
        h("a", { class: "btn btn-primary", href: "#/marketplace" }, "Browse the marketplace"),
        h("a", { class: "btn btn-secondary", href: "#/signup" }, "Sign up"),
        h("a", { class: "btn btn-secondary", href: "#/login" }, "Log in"),
      ),
      h("p", { class: "muted small" }, "No account is needed to look at the offers."),
    ),
    h(
      "section",
      { "aria-labelledby": "landing-customers" },
      h("h2", { id: "landing-customers" }, "For customers"),
      h(
        "ul",
        { class: "landing-points" },
        point(
          "Measured, not promised",
          "Every GPU is benchmarked by the platform; each offer shows its performance score, its reliability and its price.",
        ),
        point(
          "Isolated containers",
          "Your workload runs in a container of its own on the GPUs you rent, with its output followed live.",
        ),
        point(
          "Pay for what runs",
          "Top up a balance, rent now or let a job wait for the best matching offer; you pay for the time your rental runs.",
        ),
      ),
    ),
    h(
      "section",
      { "aria-labelledby": "landing-providers" },
      h("h2", { id: "landing-providers" }, "For providers"),
      h(
        "ul",
        { class: "landing-points" },
        point(
          "Apply, then connect",
          "Describe your GPUs; once a reviewer approves you, one install command connects each machine, even behind NAT.",
        ),
        point(
          "Your prices, your hours",
          "Set a price per GPU model, a weekly schedule and maintenance windows; the Provider Dashboard shows the rank of each offer.",
        ),
        point(
          "Paid out weekly or monthly",
          "Earnings per GPU and per day, paid to a Solana wallet or a bank account after a short hold.",
        ),
      ),
    ),
  );
}
