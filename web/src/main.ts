// The gpunex dashboard: boots the session from the cookie (GET /me), registers the pages
// and renders the one the URL names.
import * as api from "./api";
import { mountShell, render, route, session, signedIn, signedOut } from "./app";
import { accountPage } from "./pages/account";
import { adminBillingPage } from "./pages/admin";
import {
  adminMachinesPage,
  adminProvidersPage,
  adminRentalPage,
  adminRentalsPage,
  adminUserPage,
  adminUsersPage,
} from "./pages/admin_console";
import { applicationPage, applyPage } from "./pages/application";
import { loginPage, signupPage } from "./pages/auth";
import { balancePage } from "./pages/balance";
import { jobPage, jobsPage, newJobPage } from "./pages/jobs";
import { landingPage } from "./pages/landing";
import { marketplacePage, rentPage } from "./pages/marketplace";
import { notificationsPage } from "./pages/notifications";
import { adminPayoutRunPage, adminPayoutsPage } from "./pages/payouts";
import { providerPage } from "./pages/provider/dashboard";
import { rentalPage, rentalsPage } from "./pages/rentals";
import { reviewDetailPage, reviewQueuePage } from "./pages/review";
import { rolesPage } from "./pages/roles";
import { topupDetailPage, topupPage } from "./pages/topup";
import { verifyEmailPage } from "./pages/verify";
import "./styles.css";

route("/", "GPU compute marketplace", landingPage, false);
route("/login", "Log in", loginPage, false);
route("/signup", "Sign up", signupPage, false);
route("/verify-email", "Confirm your email address", verifyEmailPage, false);
route("/roles", "Roles", rolesPage);
route("/apply", "Apply to provide GPUs", applyPage);
route("/applications/:id", "Provider application", applicationPage);
route("/review", "Review queue", reviewQueuePage);
route("/review/:id", "Review an application", reviewDetailPage);
route("/provider", "Provider Dashboard", providerPage);
route("/provider/:tab", "Provider Dashboard", providerPage);
route("/notifications", "Notifications", notificationsPage);
route("/marketplace", "Marketplace", marketplacePage, false);
route("/account", "Account security", accountPage);
route("/rent/:id", "Rent GPUs", rentPage);
route("/rentals", "Rentals", rentalsPage);
route("/rentals/:id", "Rental", rentalPage);
route("/jobs", "Jobs", jobsPage);
route("/jobs/new", "Submit a job", newJobPage);
route("/jobs/:id", "Job", jobPage);
route("/balance", "Balance", balancePage);
route("/balance/top-up", "Top up", topupPage);
route("/balance/top-ups/:id", "Top-up", topupDetailPage);
route("/admin", "Users", adminUsersPage);
route("/admin/users", "Users", adminUsersPage);
route("/admin/users/:id", "User", adminUserPage);
route("/admin/providers", "Providers", adminProvidersPage);
route("/admin/machines", "Machines", adminMachinesPage);
route("/admin/rentals", "All rentals", adminRentalsPage);
route("/admin/rentals/:id", "Rental (admin)", adminRentalPage);
route("/admin/billing", "Credits and ledger", adminBillingPage);
route("/admin/payouts", "Payouts", adminPayoutsPage);
route("/admin/payouts/:id", "Payout run", adminPayoutRunPage);

async function boot(): Promise<void> {
  // A path-style link (/provider, served the dashboard by the server's fallback) becomes
  // the hash route the dashboard uses (#/provider).
  if (location.pathname !== "/" && !location.hash) {
    history.replaceState(null, "", "/#" + location.pathname + location.search);
  }
  mountShell(document.getElementById("app")!);
  api.setUnauthenticatedHandler(() => {
    if (session.user) signedOut("Your session has ended. Please log in again.");
  });
  try {
    const me = await api.get<api.User>("/me", { quiet401: true });
    signedIn(me, me.csrf_token ?? "");
  } catch (e) {
    if (!(e instanceof api.ApiError && e.status === 401)) {
      // The server is unreachable or failing: say so on the log-in page.
      location.hash = "#/login?m=" + encodeURIComponent(e instanceof Error ? e.message : String(e));
    }
  }
  await render();
}

void boot();
