// The Provider Dashboard's tabs. Each tab is a module that exports a ProviderTab; the
// dashboard shows them in the order of `providerTabs` at #/provider/<id>. A tab appears
// when its feature lands (no empty placeholders): to add one, write its module and list it
// below.
import type * as api from "../../api";
import type { View } from "../../app";
import { availabilityTab } from "./availability";
import { benchmarkTab } from "./benchmark";
import { earningsTab } from "./earnings";
import { overviewTab } from "./overview";
import { paymentsTab } from "./payments";
import { performanceTab } from "./performance";
import { pricingTab } from "./pricing";

export interface ProviderTab {
  id: string; // the URL segment: #/provider/<id>
  label: string;
  // Renders into `panel`. `view` ends with the tab (its signal aborts, its timers stop).
  render(view: View, panel: HTMLElement, provider: api.Provider): void | Promise<void>;
}

export const providerTabs: ProviderTab[] = [
  overviewTab,
  benchmarkTab,
  pricingTab,
  availabilityTab,
  performanceTab,
  earningsTab,
  paymentsTab,
];
