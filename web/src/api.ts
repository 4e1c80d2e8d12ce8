// The REST API client (/api/v1, see docs/api.md). The session is the HttpOnly cookie
// that log-in sets; requests that change state carry the session's CSRF token in the
// header the log-in answer names (X-CSRF-Token). Every failure becomes an ApiError with
// a sentence a person can read.

export class ApiError extends Error {
  constructor(
    readonly status: number, // 0: the server could not be reached
    readonly code: string,
    message: string,
    readonly fields: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

let csrfToken = "";
let onUnauthenticated: (() => void) | null = null;

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

// Called when a request made with a session gets 401 (the session ended).
export function setUnauthenticatedHandler(fn: () => void): void {
  onUnauthenticated = fn;
}

export interface RequestOptions {
  signal?: AbortSignal;
  // Do not call the unauthenticated handler on 401 (log-in, /me at start).
  quiet401?: boolean;
  // Extra request headers (Idempotency-Key).
  headers?: Record<string, string>;
}

// A fresh Idempotency-Key: a random (version 4) UUID. crypto.randomUUID() exists only in
// secure contexts; a platform served over plain HTTP on a LAN address still gets one.
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export async function request<T>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...opts.headers };
  // A Blob goes as it is (a tar of files for a rental), anything else as JSON.
  const raw = body instanceof Blob;
  if (body !== undefined) headers["Content-Type"] = raw ? body.type || "application/octet-stream" : "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  let resp: Response;
  try {
    resp = await fetch("/api/v1" + path, {
      method,
      headers,
      body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
      signal: opts.signal,
    });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError(0, "network", "Cannot reach the gpunex server. Check your connection and try again.");
  }
  if (resp.status === 204) return undefined as T;
  const text = await resp.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!resp.ok) {
    const err = (data as { error?: { code?: string; message?: string; fields?: Record<string, string> } } | null)
      ?.error;
    let message = err?.message || `The server answered ${resp.status} ${resp.statusText}`.trim();
    if (resp.status === 429) {
      const after = resp.headers.get("Retry-After");
      const s = Number(after);
      if (after && Number.isFinite(s))
        message +=
          s < 60 ? ` (try again in ${Math.max(1, Math.ceil(s))} s)` : ` (try again in ${Math.ceil(s / 60)} min)`;
    }
    if (resp.status >= 500 && !err?.message) message = "The server had a problem. Try again in a moment.";
    const apiErr = new ApiError(resp.status, err?.code ?? `http_${resp.status}`, message, err?.fields ?? {});
    if (resp.status === 401 && !opts.quiet401 && onUnauthenticated) onUnauthenticated();
    throw apiErr;
  }
  return data as T;
}

export const get = <T>(path: string, opts?: RequestOptions) => request<T>("GET", path, undefined, opts);
export const post = <T>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("POST", path, body, opts);
export const put = <T>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("PUT", path, body, opts);
export const patch = <T>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("PATCH", path, body, opts);
export const del = <T>(path: string, opts?: RequestOptions) => request<T>("DELETE", path, undefined, opts);

// ---- shapes (the fields the dashboard reads)

export type Role = "customer" | "provider" | "admin";

export interface User {
  id: string;
  email: string;
  name: string;
  roles: Role[];
  created_at: string;
  csrf_token?: string;
  email_verified?: boolean; // GET /me only
}

export interface LoginAnswer {
  token: string;
  csrf_token: string;
  csrf_header: string;
  user: User;
}

export interface GpuModel {
  id: string;
  name: string;
  vram_gb: number;
  default_price_micro: number; // the catalog's default hourly price per GPU
  source: string;
}

export interface Window {
  days: string[];
  start: string;
  end: string;
}

export type Availability = { kind: "always" } | { kind: "schedule"; timezone: string; windows: Window[] };

export interface GpuEntry {
  model: string | null;
  model_other: string | null;
  quantity: number | null;
  system_ram_gb: number | null;
  upload_gbps: number | null;
  download_gbps: number | null;
  availability: Availability | null;
  location: { city: string | null; country: string | null; region: string | null } | null;
}

export interface ApplicationBody {
  contact: { full_name: string | null; email: string | null; company: string | null };
  gpus: GpuEntry[];
  infrastructure: { ups: boolean | null; commitment_months: number | null; maintenance_notes: string | null };
}

export type AppStatus = "draft" | "submitted" | "needs_info" | "approved" | "rejected";

export interface HistoryEvent {
  at: string;
  actor_id: string;
  actor_name: string | null;
  action: string;
  from_status: string;
  to_status: string;
  message: string | null;
  tier: string | null;
}

export interface Application extends ApplicationBody {
  id: string;
  user_id: string;
  status: AppStatus;
  suggested_tier: "community" | "enterprise";
  suggested_tier_reasons: string[];
  tier: string | null;
  created_at: string;
  updated_at: string;
  submitted_at: string | null;
  decided_at: string | null;
  age_business_days: number | null;
  overdue: boolean;
  total_gpus: number;
  has_unlisted_models: boolean;
  history?: HistoryEvent[];
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface Provider {
  user_id: string;
  tier: "community" | "enterprise";
  status: string;
  application_id: string;
  approved_at: string;
  // The platform's share of each rental on the provider's machines, in basis points
  // (2000: 20 %).
  commission_bps?: number;
}

export interface AgentToken {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  active: boolean;
}

export interface CreatedToken extends AgentToken {
  token: string;
  install_command: string;
}

// ---- account security (docs/security.md): API keys and sessions

// What an API key may do: `read` GET requests, `write` every other method, `provider` and
// `admin` the routes of those roles (only for a user who has the role).
export type Scope = "read" | "write" | "provider" | "admin";

export interface ApiKey {
  id: string;
  name: string;
  prefix: string; // the key's first characters, to tell keys apart
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  scopes: Scope[];
}

export interface CreatedApiKey extends ApiKey {
  key: string; // the secret, in this answer only
}

// A logged-in browser or client (newest first in GET /me/sessions).
export interface SessionInfo {
  id: string;
  created_at: string;
  last_seen_at: string; // to the minute
  expires_at: string;
  ip: string;
  user_agent: string;
  current: boolean; // the session making the request
}

export interface Telemetry {
  utilization_pct: number;
  memory_used_mb: number;
  temperature_c: number;
  power_w: number;
  sm_clock_mhz: number;
  throttle_reasons: string[];
}

export type ListingState =
  | "listed"
  | "rented"
  | "benchmarking"
  | "disabled_by_provider"
  | "missing_from_machine"
  | "machine_offline"
  | "awaiting_first_benchmark"
  | "failed_benchmark"
  | "outside_schedule"
  | "in_maintenance"
  | "unverified_model"
  | "no_price_set"
  | "network_not_isolated"
  | "engine_down";

export interface MachineGpu {
  id: string;
  index: number;
  uuid: string;
  name: string;
  catalog_id: string;
  vram_mb: number;
  emulated: boolean;
  enabled: boolean;
  // On the marketplace: listed, rented or being benchmarked (listing_state says which).
  listed: boolean;
  present: boolean;
  // The one listing decision of the platform: a code to switch on and a sentence to show.
  listing_state: ListingState;
  listing_note: string | null;
  listed_since: string;
  delisted_reason: string | null;
  performance_score: number | null;
  last_benchmark_at: string | null;
  telemetry: Telemetry | null;
  telemetry_at: string | null;
}

export interface Machine {
  id: string;
  name: string;
  status: "online" | "offline";
  emulated: boolean;
  agent_version: string;
  host: {
    hostname?: string;
    cpu_model?: string;
    cpu_cores?: number;
    ram_mb?: number;
    os?: string;
    // What the agent's network isolation check found (docs/trust.md); absent from agents
    // older than the check.
    network_isolation?: NetworkIsolation;
  } | null;
  last_seen: string;
  status_since: string;
  gpus: MachineGpu[];
}

// Whether a workload on the machine can reach another workload or the host's services.
export interface NetworkIsolation {
  state: "isolated" | "not_isolated" | "unverified" | "checking" | "no_engine";
  reached: ("workload" | "host")[];
  detail: string;
}

export interface Notification {
  id: string;
  at: string;
  kind: string;
  title: string;
  body: string;
  read: boolean;
  link: string | null;
}

export interface NotificationPage extends Page<Notification> {
  unread_count: number;
}

// ---- benchmarks (GET /machines/{id}/benchmarks; docs/performance-score.md)

export interface BenchmarkFailure {
  metric: string; // "bf16_tensor_tflops", "pcie_width", "network.download_mbit_s", ...
  measured: number;
  required: number;
  guidance: string;
}

export interface GpuFigures {
  emulated: boolean;
  compute: {
    fp32_tflops: number;
    fp16_tflops: number;
    fp16_tensor_tflops: number;
    bf16_tensor_tflops: number;
    tf32_tensor_tflops: number;
  };
  memory: { read_gbps: number; write_gbps: number; copy_gbps: number; triad_gbps: number };
  sustained: {
    seconds: number;
    mean_tflops: number;
    min_over_median: number;
    cv: number;
    thermal_throttle_fraction: number;
    power_throttle_fraction: number;
    max_temperature_c: number;
    mean_power_w: number;
  };
  device: { pcie_width: number; pcie_gen: number };
  sanity: { ok: boolean; failures: string[] };
}

export interface GpuReference {
  fp32_tflops: number;
  fp16_tflops: number;
  fp16_tensor_tflops: number;
  bf16_tensor_tflops: number;
  tf32_tensor_tflops: number;
  memory_gbps: number;
}

// Absolute minimums for the GPU's model; the figure keys are absent for a model without
// reference figures ("other").
export interface GpuThresholds {
  fp32_tflops?: number;
  fp16_tflops?: number;
  fp16_tensor_tflops?: number;
  bf16_tensor_tflops?: number;
  tf32_tensor_tflops?: number;
  memory_triad_gbps?: number;
  min_over_median: number;
  max_thermal_throttle_fraction: number;
}

export type BenchmarkState = "running" | "passed" | "failed" | "error";

export interface BenchmarkGpu {
  gpu_id: string;
  uuid: string;
  index: number;
  name: string;
  catalog_id: string;
  state: BenchmarkState;
  figures: GpuFigures | null;
  performance_score: number | null;
  failures: BenchmarkFailure[];
  error: string | null;
  reference: GpuReference | null;
  thresholds: GpuThresholds;
}

export interface NetworkFigures {
  rtt_p50_ms: number;
  rtt_p99_ms: number;
  download_mbit_s: number;
  upload_mbit_s: number;
}

export interface StorageFigures {
  seq_read_mb_s: number;
  seq_write_mb_s: number;
  rand_read_iops: number;
  rand_read_p50_us: number;
  rand_read_p99_us: number;
  direct_io: boolean;
}

export interface BenchmarkRun {
  id: string;
  reason: "first_connect" | "hardware_change" | "periodic" | "retry" | "requested" | "new_gpu" | string;
  state: BenchmarkState;
  requested: boolean;
  machine_phases: boolean;
  emulated: boolean;
  network: NetworkFigures | null;
  storage: StorageFigures | null;
  machine_failures: BenchmarkFailure[];
  error: string | null;
  created_at: string;
  finished_at: string | null;
  gpus: BenchmarkGpu[];
}

// ---- availability, maintenance and reliability (docs/reliability-score.md)

// The schedule of a machine: the shape of an application's availability. A window whose
// end is earlier than its start runs past midnight into the next day.
export type Schedule = Availability;

export interface Interval {
  start: string;
  end: string;
}

export interface MachineAvailability {
  machine_id: string;
  schedule: Schedule;
  source: "application" | "provider";
  updated_at: string;
  inside_schedule: boolean;
  in_maintenance: boolean;
  next_change_at: string | null; // when inside_schedule flips next; null: never
  upcoming: Interval[]; // scheduled UTC intervals of the next 7 days
}

export type MaintenanceCategory = "power" | "internet" | "disk" | "gpu" | "software" | "other";
export type MaintenanceState = "upcoming" | "active" | "ended" | "cancelled";

export interface MaintenanceWindow {
  id: string;
  machine_id: string;
  start: string;
  end: string;
  category: MaintenanceCategory;
  reason: string;
  declared_at: string;
  planned: boolean; // declared at least 24 h before its start
  state: MaintenanceState;
  cancelled_at: string | null;
}

export interface ReliabilityComponents {
  uptime: number; // 0..1
  completion: number;
  benchmark: number;
}

export interface ReliabilityEvent {
  at: string;
  kind: "outage" | "job_ended" | "benchmark_degraded" | "throttling" | string;
  description: string;
  duration_s: number | null;
  weight: number;
  impact: number; // points of the score, negative when it lowered it
  machine_id: string;
  gpu_id: string | null;
}

export interface ReliabilityDay {
  day: string; // "2026-11-30"
  score: number;
  status: "new" | "scored";
}

export interface Reliability {
  machine_id?: string;
  score: number; // 0..100
  status: "new" | "scored";
  components: ReliabilityComponents;
  uptime_24h: number | null; // null: no scheduled time in that window
  uptime_7d: number | null;
  uptime_30d: number | null;
  scheduled_hours: number;
  outages: { count: number; total_s: number };
  threshold: number;
  computed_at: string;
  events: ReliabilityEvent[]; // newest first
  events_next_cursor: string | null;
  history: ReliabilityDay[]; // oldest first; the last is today, live
  advice: string[];
}

export interface MachineReliabilitySummary {
  machine_id: string;
  name: string;
  gpus: number;
  score: number;
  status: "new" | "scored";
  components: ReliabilityComponents;
  uptime_30d: number | null;
}

export interface ProviderReliability extends Reliability {
  machines: MachineReliabilitySummary[];
}

// ---- prices and the marketplace. Money is integer micro-USDC (`*_micro`: 450000 is
// 0.45 USDC per GPU-hour), converted to and from text by money.ts, never through a float.

export interface Price {
  gpu_model: string; // a catalog id
  price_micro: number; // per GPU-hour
  price_usdc: string; // "0.450000"
  updated_at: string;
}

export interface PriceItem {
  gpu_model: string;
  price_micro: number;
}

export interface PriceChange {
  id: string;
  machine_id: string | null; // an override's machine; null: the provider's price
  gpu_model: string;
  old_price_micro: number | null; // null: there was none
  new_price_micro: number | null; // null: removed
  changed_by: string; // a user id
  at: string;
}

export interface MachinePrices {
  machine_id: string;
  items: Price[]; // the machine's overrides
  // Per model of the machine's GPUs: the override, else the provider's price; a model
  // without either is left out.
  effective: PriceItem[];
}

// The factors of the default ranking (docs: SPEC 13a):
// rank = reliability · value_factor · tier_factor · commit_factor,
// value_factor = (value / median_value)^0.5, value = performance / price in USDC.
export interface RankExplain {
  reliability: number; // R / 100
  value: number;
  median_value: number;
  value_factor: number;
  tier_factor: number;
  commit_factor: number;
  rank: number;
}

export interface Offer {
  id: string;
  machine_id?: string; // only for the offer's provider and admins
  gpu_model: string;
  gpu_name: string;
  gpus_available: number;
  gpus_total: number;
  vram_gb: number;
  performance_score: number; // the lowest of its GPUs'
  gpu_performance_scores: number[];
  reliability_score: number;
  reliability_status: "new" | "scored";
  uptime_30d: number | null;
  price_micro: number;
  price_usdc: string;
  country: string;
  region: string; // "" when the provider named none
  city: string;
  tier: "community" | "enterprise" | string;
  // Measured by the machine's newest benchmark; null: not measured.
  down_mbps: number | null;
  up_mbps: number | null;
  latency_ms: number | null;
  cuda_version: string;
  driver_version: string;
  ram_gb_per_gpu: number;
  cpu_cores_per_gpu: number;
  // The whole machine, as its agent reports it.
  host?: { cpu_model: string; cpu_cores: number; ram_gb: number; disk_total_gb: number; disk_free_gb: number };
  commitment_months: number;
  listed_since: string;
  emulated: boolean;
  provider: { pseudonym: string };
}

export interface SearchHit extends Offer {
  position: number;
  explain?: RankExplain; // with explain=true
}

export interface OfferPage extends Page<SearchHit> {
  matched: number;
  median_value: number;
  sort: string;
}

export interface OwnOffer extends Offer {
  rank: {
    position: number | null; // null: not in search results now (no GPU free)
    of: number;
    summary: string; // "3rd of 41 NVIDIA L4 offers in eu-south"
    explain: RankExplain;
    // The highest price at which it would rank one place higher; null when first or
    // when no price would do.
    price_for_next_place_micro: number | null;
    advice: string[];
  };
}

export interface MarketWindow {
  listed_gpu_hours: number;
  rented_gpu_hours: number;
  rentals: number;
}

export interface Recommendation {
  gpu_model: string;
  region: string | null;
  price_micro: number;
  price_usdc: string;
  utilization: number | null; // null: nothing was listed
  median_price_micro: number | null; // null: no rentals
  sample_rentals: number;
  basis: "region" | "global" | "catalog";
  catalog_price_micro: number;
  note: string;
  utilization_factor?: number | null; // what the median was multiplied by; null: catalog
  reason?: string | null; // why below, at or above the median; null: catalog
  region_window: MarketWindow;
  global_window: MarketWindow;
}

export interface MarketStats {
  gpu_model: string | null;
  region: string | null;
  offers: number;
  listed_gpus: number;
  available_gpus: number;
  rented_gpus: number;
  price_p25_micro: number | null;
  price_median_micro: number | null;
  price_p75_micro: number | null;
}

// ---- rentals, balances and the ledger (issue 14). Money is integer micro-USDC.

export type RentalState = "pending" | "starting" | "running" | "ending" | "ended";
export type EndParty = "customer" | "provider" | "platform";

export interface Rental {
  id: string;
  offer_id: string;
  machine_id?: string | null; // only for the machine's provider and admins
  workload_id?: string; // ditto: its end_reason has the agent's own words on the end
  gpu_model: string; // a catalog id
  gpu_name?: string; // not sent: the catalog names it
  gpus: number;
  price_micro: number; // per GPU-hour
  fee_bps: number;
  state: RentalState;
  // customer: stopped, exited, out_of_memory, start_failed, max_duration, max_cost;
  // provider: agent_lost, gpu_lost, hardware_failure, machine_shutdown, container_removed,
  // start_failed; platform: balance_exhausted, operator (docs/billing.md, "Who ended it").
  end_reason: string | null;
  end_party: EndParty | null;
  exit_code: number | null;
  detail: string | null;
  started_at: string | null;
  running_at: string | null;
  billing_ended_at?: string | null;
  ended_at: string | null;
  billed_seconds: number;
  charged_micro: number; // the cost so far
  fee_micro: number;
  provider_micro: number;
  refunded_micro: number;
  max_cost_micro: number | null;
  max_duration_s: number | null;
  image: string;
  command: string[];
  region: string;
  country: string;
  customer?: string | null; // the customer's pseudonym, shown to its provider and admins
  cost_per_hour_micro: number; // gpus × price_micro
  job_id?: string | null; // the job that placed it
  ports?: RentalPort[]; // the container's ports its customer may reach (docs/access.md)
}

// A declared port; connect_path, url and path_url are shown to the customer only (url and
// path_url for HTTP ports, while the platform has an access listener).
export interface RentalPort {
  port: number;
  protocol: "http" | "tcp";
  public: boolean;
  connect_path?: string;
  url?: string;
  path_url?: string;
}

export interface PortSpec {
  port: number;
  protocol?: "http" | "tcp";
  public?: boolean;
}

// POST /rentals/{id}/access-tokens: the token is shown once.
export interface AccessToken {
  id: string;
  rental_id: string;
  token?: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  links?: Array<{ port: number; url: string; path_url: string }>;
}

export interface CreateRental {
  offer_id: string;
  gpus: number;
  image: string;
  command?: string[];
  env?: Record<string, string>;
  ports?: PortSpec[];
  // For a private registry: sent once, never stored or shown (docs/access.md).
  registry_auth?: { username: string; password: string };
  max_duration_s?: number;
  max_cost_micro?: number;
}

export interface RentalLog {
  stream: "stdout" | "stderr";
  seq: number;
  at: string;
  data: string;
}

export interface Balance {
  balance_micro: number;
  running_cost_per_hour_micro: number;
  seconds_left: number | null; // null when nothing runs
  low: boolean; // covers less than 70 minutes of the running rentals
  running_rentals: number;
}

// A line of the statement; amount_micro is signed: + into the balance, − out of it.
export interface StatementItem {
  id: string;
  at: string;
  kind: "operator_credit" | "usage_provider" | "usage_fee" | "refund" | string;
  amount_micro: number;
  balance_after_micro: number; // the balance once this and every older transfer moved
  rental_id: string | null;
  reference: string | null;
}

export interface Transfer {
  id: string;
  kind: string;
  amount_micro: number;
  reference: string | null;
  at: string;
  rental_id: string | null;
}

export interface CreditAnswer {
  transfer: Transfer;
  balance_micro: number;
}

export type JobState = "queued" | "placed" | "unplaceable" | "cancelled";

export interface Job {
  id: string;
  state: JobState;
  rental_id: string | null;
  // Where the rental it placed stands ("placed" stays the job's own state).
  rental_state?: RentalState | null;
  rental_end_reason?: string | null;
  rental_exit_code?: number | null;
  rental_detail?: string | null;
  offer_id: string | null;
  created_at: string;
  deadline_at: string | null;
  placed_at: string | null;
  detail: string | null;
  gpu_models?: string[];
  gpu_model?: string;
  gpus: number;
  max_price_micro: number;
  image: string;
  command?: string[];
  region?: string | null;
  country?: string | null;
  min_reliability?: number | null;
  min_performance?: number | null;
  min_vram_gb?: number | null;
  max_duration_s?: number | null;
  max_cost_micro?: number | null;
  ended_at?: string | null;
}

export interface LedgerMismatch {
  account: string;
  stored_micro: number;
  computed_micro: number;
}

export interface LedgerCheck {
  ok: boolean;
  accounts: number;
  transfers: number;
  sum_micro: number;
  mismatches: LedgerMismatch[];
}

// ---- earnings and payouts (issue 15; docs/payouts.md). Money is integer micro-USDC;
// dates are UTC days ("2026-12-07").

export type PayoutSchedule = "weekly" | "monthly";
export type MethodKind = "solana" | "sepa" | "ach";

export interface EarningsTotals {
  pending_micro: number; // inside the hold after the usage
  available_micro: number; // to be paid out by the next payout
  in_payment_micro: number;
  paid_micro: number;
  period_micro: number; // earned in the current week or month
}

export interface EarningsRow {
  key: string; // "<machine_id>/<gpu_id>", a model, or a day
  label: string;
  rentals: number;
  gpu_seconds: number;
  gross_micro: number;
  commission_micro: number;
  refunds_micro: number;
  net_micro: number; // what the provider earned: gross − commission − refunds
  machine_id?: string;
  gpu_id?: string;
  gpu_model?: string;
  day?: string;
}

export interface Earnings {
  totals: EarningsTotals;
  period: { schedule: PayoutSchedule; from: string; to: string }; // to: exclusive
  from: string;
  to: string;
  group: "gpu" | "model" | "day";
  rows: EarningsRow[];
}

export interface MonthlyStatement {
  month: string; // "2026-11"
  rentals: number;
  gpu_seconds: number;
  gross_micro: number;
  commission_micro: number;
  refunds_micro: number;
  net_micro: number;
  paid_micro: number;
  lines: {
    rental_id: string;
    gpu_model: string;
    gpus: number;
    gpu_seconds: number;
    gross_micro: number;
    commission_micro: number;
    refunds_micro: number;
    net_micro: number;
  }[];
  payouts: Payout[];
}

export type PayoutMethod =
  | { kind: "solana"; wallet: string; token_account?: string }
  | { kind: "sepa"; holder: string; iban: string; iban_print?: string; bic: string | null; country?: string }
  | {
      kind: "ach";
      holder: string;
      routing_number: string;
      account_number_last4?: string;
      account_number?: string; // only sent, never answered
      account_type: "checking" | "savings";
    };

// What a method costs and needs, shown before the provider chooses it.
export interface MethodTerms {
  kind: MethodKind;
  label: string;
  currency: "USDC" | "EUR" | "USD";
  minimum_micro: number;
  fee_micro: number;
  note: string;
  offered: boolean; // false: this platform is not set up for it
}

export interface NextPayout {
  date: string;
  schedule: PayoutSchedule;
  estimate_micro: number;
  eligible: boolean;
  reason: string; // why not, when not eligible
}

export interface PayoutSettings {
  schedule: PayoutSchedule;
  threshold_micro: number;
  method: PayoutMethod | null;
  token_account: string | null; // Solana: the wallet's USDC token account
  changed_at: string | null;
  hold_until: string | null; // payouts to the new details wait until then
  methods: MethodTerms[];
  monthly_minimum_micro?: number; // the monthly schedule's minimum
  earnings_hold_s?: number; // how long earnings stay pending after the usage
  next_payout: NextPayout;
}

export interface PayoutSettingsUpdate {
  schedule?: PayoutSchedule;
  threshold_micro?: number;
  method?: PayoutMethod;
  password?: string;
}

export type PayoutState = "planned" | "waiting_funds" | "submitted" | "confirmed" | "failed";

export interface PayoutAttempt {
  n: number;
  at: string;
  state: "signed" | "sent" | "landed" | "failed" | "expired" | string;
  signature: string | null;
  error: string | null;
}

export interface Payout {
  id: string;
  run_id: string;
  schedule: PayoutSchedule;
  as_of: string;
  state: PayoutState;
  amount_micro: number;
  fee_micro: number;
  net_micro?: number;
  method: PayoutMethod | null;
  currency: "USDC" | "EUR" | "USD";
  amount_minor: number | null; // EUR or USD cents
  fx_rate: string | null; // EUR per USDC
  signature: string | null;
  bank_reference: string | null;
  failure: string | null;
  file?: string | null;
  created_at: string;
  submitted_at: string | null;
  confirmed_at: string | null;
  failed_at: string | null;
  attempts: PayoutAttempt[];
  provider_id?: string; // in an admin's run
  provider_name?: string;
  lines?: { rental_id: string; gpu_model: string; net_micro: number }[];
}

export interface BankFile {
  name: string;
  kind: "pain.001" | "nacha";
  currency: "EUR" | "USD";
  lines: number;
  total_minor: number;
  sha256: string;
  state: "written" | "sent";
  created_at: string;
  sent_at: string | null;
}

export interface PayoutRun {
  id: string;
  schedule: PayoutSchedule;
  as_of: string;
  state: "planning" | "running" | "waiting" | "done";
  eur_rate: string | null;
  created_at: string;
  finished_at: string | null;
  // Payouts by state, and the providers not paid by reason (carried_over, held, no_method).
  counts: Record<string, number>;
  total_micro: number;
  files: BankFile[];
  payouts?: Payout[];
}

export interface PayoutWallet {
  configured: boolean;
  public_key: string;
  token_account: string;
  mint?: string;
  usdc_micro: number;
  sol_lamports: number;
  needed_micro: number;
  needed_lamports?: number;
  short: boolean;
  error?: string | null;
}

// ---- top-ups (Solana Pay)

export interface Topup {
  id: string;
  amount_micro: number;
  url: string; // solana:<recipient>?amount=...
  reference: string;
  recipient: string;
  mint: string;
  status: "pending" | "credited" | "expired";
  signature: string | null;
  credited_micro: number | null;
  detail?: string;
  created_at: string;
  expires_at: string;
  credited_at: string | null;
}
