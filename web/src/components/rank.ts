// Why an offer ranks where it does: the default ranking's factors (SPEC 13a, MKT-4),
//   rank = R/100 · (value / median value)^0.5 · tier · commitment,
//   value = performance score / price in USDC per GPU-hour,
// each with the figures it comes from. Shared by the Marketplace and the Pricing tab.
import type * as api from "../api";
import { type Child, h } from "../dom";
import { tierName } from "../format";
import { amount } from "../money";

function f(x: number, digits: number): string {
  return Number.isFinite(x) ? x.toFixed(digits) : "—";
}

function commitmentText(months: number): string {
  return months > 0 ? `${months}-month commitment` : "no commitment";
}

// `among` says which offers the median is over ("the offers this search matched").
export function rankFactors(e: api.RankExplain, o: api.Offer, among: string): HTMLElement {
  const row = (name: string, value: string, how: Child) =>
    h(
      "div",
      { class: "factor" },
      h("dt", null, name),
      h("dd", null, h("strong", { class: "factor-value" }, value), h("span", { class: "small muted" }, how)),
    );
  return h(
    "div",
    { class: "rank-factors" },
    h(
      "p",
      { class: "formula" },
      h("code", null, "rank = R/100 · (value / median value)^0.5 · tier · commitment"),
      h(
        "code",
        { class: "plugged" },
        `= ${f(e.reliability, 4)} · ${f(e.value_factor, 4)} · ${f(e.tier_factor, 2)} · ${f(e.commit_factor, 2)} = ${f(e.rank, 4)}`,
      ),
    ),
    h(
      "dl",
      { class: "factors" },
      row("Reliability", f(e.reliability, 4), `R/100, from the reliability score ${f(o.reliability_score, 2)}`),
      row("Value", f(e.value, 2), [
        `performance per USDC: ${f(o.performance_score, 2)} / `,
        amount(o.price_micro, { unit: "USDC/h" }),
      ]),
      row("Median value", f(e.median_value, 2), `of ${among}`),
      row("Value factor", f(e.value_factor, 4), `(${f(e.value, 2)} / ${f(e.median_value, 2)})^0.5`),
      row("Tier", f(e.tier_factor, 2), `${tierName(o.tier)} (Enterprise 1.10, Community 1.00)`),
      row(
        "Commitment",
        f(e.commit_factor, 2),
        `${commitmentText(o.commitment_months)} (1.00, 1.02, 1.04, 1.08 for none, 3, 6, 12 months)`,
      ),
    ),
    h("p", { class: "small muted" }, "Ties go to the higher 30-day uptime, then the older listing."),
  );
}
