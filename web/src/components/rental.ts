// How a rental reads wherever it is shown (the customer's Rentals pages, the provider's
// Overview, jobs): its state as a badge, how it ended and who ended it, its rate, and the
// warning of a balance about to run out.
import type * as api from "../api";
import { gpuModels } from "../catalog";
import { type Child, h } from "../dom";
import { duration } from "../format";
import { amount } from "../money";

const kStateNames: Record<api.RentalState, string> = {
  pending: "Pending",
  starting: "Starting",
  running: "Running",
  ending: "Ending",
  ended: "Ended",
};

const kStateBadges: Record<api.RentalState, string> = {
  pending: "badge-warn",
  starting: "badge-warn",
  running: "badge-ok",
  ending: "badge-warn",
  ended: "badge-off",
};

export function isActive(r: api.Rental): boolean {
  return r.state !== "ended";
}

export function rentalStateBadge(state: api.RentalState): HTMLElement {
  return h(
    "span",
    { class: `badge rental-state state-${state} ${kStateBadges[state] ?? ""}`, "data-state": state },
    kStateNames[state] ?? state,
  );
}

// Who reads the sentence: the customer ("Stopped by you"), or anyone else, the machine's
// provider or an admin ("Stopped by the customer").
export type Viewer = "customer" | "other";

// Why a rental ended, as a sentence; null while it has not ended.
export function endReasonText(r: api.Rental, viewer: Viewer): string | null {
  if (!r.end_reason) return null;
  const you = viewer === "customer";
  switch (r.end_reason) {
    case "stopped":
      return you ? "Stopped by you" : "Stopped by the customer";
    case "exited":
      return r.exit_code === null
        ? "The workload ended by itself"
        : `The workload ended by itself (exit code ${r.exit_code})`;
    case "out_of_memory":
      return "The workload used more memory than its limit";
    case "start_failed":
      return "The workload could not start";
    case "max_duration":
      return "Reached its maximum duration";
    case "max_cost":
      return "Reached its maximum cost";
    case "agent_lost":
      return you ? "The provider's machine lost its connection" : "The machine lost its connection";
    case "gpu_lost":
      return "A GPU disappeared from the machine";
    case "hardware_failure":
      return you ? "Hardware failure on the provider's machine" : "Hardware failure on the machine";
    case "machine_shutdown":
      return you ? "The provider shut the machine down" : "The machine was shut down";
    case "container_removed":
      return you ? "The container was removed on the provider's machine" : "The container was removed on the machine";
    case "balance_exhausted":
      return "The customer's balance ran out";
    case "operator":
      return "Stopped by a platform operator";
    default:
      return r.end_reason;
  }
}

const kPartyNames: Record<api.EndParty, string> = {
  customer: "the customer",
  provider: "the provider",
  platform: "the platform",
};

// "Ended by the provider": the party the ending is put down to (it counts against a
// provider's reliability only when it is the provider). Ends on the customer's side that
// nobody chose say what did it: a workload that exited is not "ended by the customer".
export function endPartyText(r: api.Rental): string | null {
  if (!r.end_party) return null;
  if (r.end_party === "customer") {
    if (r.end_reason === "exited" || r.end_reason === "out_of_memory") return "Ended by the workload itself";
    if (r.end_reason === "max_duration" || r.end_reason === "max_cost") return "Ended by the rental's own limit";
  }
  return `Ended by ${kPartyNames[r.end_party] ?? r.end_party}`;
}

// The reason and the party, for one table cell.
export function endTerms(r: api.Rental, viewer: Viewer): HTMLElement | string {
  const reason = endReasonText(r, viewer);
  if (!reason) return "—";
  const party = endPartyText(r);
  return h(
    "span",
    { class: "end-terms" },
    h("span", { class: "end-reason" }, reason),
    party ? h("span", { class: "small muted end-party" }, party) : null,
  );
}

// "0.90 USDC/h" and, for several GPUs, how it is made up.
export function rateText(r: api.Rental): Child {
  return r.gpus > 1
    ? [
        amount(r.cost_per_hour_micro, { unit: "USDC/h" }),
        ` (${r.gpus} × `,
        amount(r.price_micro, { unit: "USDC/h" }),
        ")",
      ]
    : amount(r.price_micro, { unit: "USDC/h" });
}

// GPU model names by catalog id, for rentals (which carry the id only).
const modelNames = new Map<string, string>();

// Reads the catalog's names once per page load; a failure leaves the ids to show.
export async function loadModelNames(signal: AbortSignal): Promise<void> {
  if (modelNames.size) return;
  try {
    for (const m of await gpuModels(signal)) modelNames.set(m.id, m.name);
  } catch {
    // the ids stand in
  }
}

export function modelName(id: string): string {
  return modelNames.get(id) ?? id;
}

// "NVIDIA L4 × 2".
export function gpusText(r: { gpu_model: string; gpu_name?: string; gpus: number }): string {
  return `${r.gpu_name ?? modelName(r.gpu_model)} × ${r.gpus}`;
}

// The warning shown while the balance covers less than the platform's low-balance time
// of the running rentals (api.Balance.low).
export function lowBalanceBanner(b: api.Balance): HTMLElement | null {
  if (!b.low) return null;
  return h(
    "section",
    { class: "banner banner-warn low-balance", role: "status", "aria-label": "Low balance" },
    h("h2", null, "Your balance is low"),
    h(
      "p",
      null,
      amount(b.balance_micro),
      b.seconds_left === null
        ? " left."
        : [
            ` left: about ${duration(b.seconds_left)} of your running rentals at `,
            amount(b.running_cost_per_hour_micro, { unit: "USDC/h" }),
            ".",
          ],
      " Rentals end when it runs out. Ask an operator to credit your account (",
      h("a", { href: "#/balance" }, "Balance"),
      ").",
    ),
  );
}
