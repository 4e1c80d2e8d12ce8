#include "platform/benchmarks/benchmarks_module.h"

#include "platform/api/api.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/benchmarks/benchmarks_store.h"
#include "platform/benchmarks/score.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::benchmarks {

namespace {

// [benchmarks] with its thresholds and per-model overrides, as the options of Benchmarks.
StatusOr<std::any> Parse(ConfigTable& t, const EnvGetter&) {
  BenchmarksOptions o;
  GPUNEX_RETURN_IF_ERROR(t.Bool("enabled", &o.enabled));
  GPUNEX_RETURN_IF_ERROR(t.Int("interval_s", &o.interval_s, 1, 365ll * 24 * 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("retry_after_s", &o.retry_after_s, 1, 30ll * 24 * 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("run_timeout_s", &o.run_timeout_s, 10, 24 * 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("spot_check_mean_s", &o.spot_check_mean_s, 0, 365ll * 24 * 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("sustain_s", &o.sustain_s, 0, 600));
  GPUNEX_RETURN_IF_ERROR(t.Int("storage_file_mb", &o.storage_file_mb, 1, 64 * 1024));
  int64_t storage_seconds = 8;
  GPUNEX_RETURN_IF_ERROR(t.Int("storage_seconds", &storage_seconds, 1, 120));
  o.storage_seconds = static_cast<double>(storage_seconds);
  GPUNEX_RETURN_IF_ERROR(t.Int("network_mb", &o.network_mb, 1, 1024));
  GPUNEX_RETURN_IF_ERROR(t.Int("pings", &o.pings, 1, 1000));
  GPUNEX_RETURN_IF_ERROR(t.Int("tick_ms", &o.tick_ms, 50, 3600 * 1000));
  // A table of threshold names to numbers, applied over `base`.
  auto thresholds = [](ConfigTable& table, Thresholds* base) -> Status {
    std::map<std::string, double> overrides;
    for (const std::string& k : table.Keys()) {
      GPUNEX_RETURN_IF_ERROR(table.Number(k, &overrides[k]));
    }
    return ApplyThresholdOverrides(overrides, table.path(), base);
  };
  GPUNEX_ASSIGN_OR_RETURN(ConfigTable general, t.Table("thresholds"));
  GPUNEX_RETURN_IF_ERROR(thresholds(general, &o.thresholds));
  GPUNEX_ASSIGN_OR_RETURN(ConfigTable models, t.Table("models"));
  for (const std::string& model : models.Keys()) {
    auto table = models.Table(model);
    if (!table.ok()) return FieldError(models.Name(model), "must be a table of thresholds");
    Thresholds own = o.thresholds;
    GPUNEX_RETURN_IF_ERROR(thresholds(*table, &own));
    o.by_model[model] = own;
  }
  return std::any(o);
}

constexpr std::string_view kExample =
    R"([benchmarks]                     # BEN-1..6; formulas in docs/performance-score.md
enabled = true                   # false: GPUs are listed without benchmarks
interval_s = 604800              # periodic re-run (weekly)
retry_after_s = 3600             # a GPU whose benchmark could not run is tried again after this
spot_check_mean_s = 259200       # spot checks at random times, every 3 days on average (0: none)
run_timeout_s = 1800             # a run without a result by then ends in error
sustain_s = 60                   # the GPU sustained-load phase
storage_file_mb = 1024           # storage test file in the agent's work area
storage_seconds = 8              # per storage phase
network_mb = 256                 # per direction, against this platform
pings = 20                       # round trips over the agent channel
tick_ms = 5000                   # how often the scheduler looks for due GPUs
)";

Status Build(ModuleEnv& env) {
  BenchmarksOptions o = env.config.Section<BenchmarksOptions>("benchmarks");
  fleet::Fleet& fleet = env.services.Get<fleet::Fleet>();
  // Without benchmarks, GPUs are listed at once.
  fleet.set_list_after_benchmark(o.enabled);
  const notify::NoticeSettings& notices = env.services.Get<notify::NoticeSettings>();
  o.mail_domain = notices.mail_domain;
  o.public_url = notices.public_url;
  o.wake_outbox = notices.wake_outbox;
  o.clock = &env.clock;
  env.services.Own(std::make_unique<Benchmarks>(env.db, fleet, o));
  return Status::Ok();
}

}  // namespace

Module BenchmarksModule() {
  return Module{
      .name = "benchmarks",
      .migrations = BenchmarksMigrations,
      .config =
          ConfigSection{.name = "benchmarks", .parse = Parse, .example = std::string(kExample)},
      .build = Build,
      .routes = api::RegisterBenchmarkRoutes,
      .schedule =
          [](Services& s, const Config& c, Background& background) {
            if (c.Section<BenchmarksOptions>("benchmarks").enabled) {
              s.Get<Benchmarks>().ScheduleOn(background);
            }
          },
  };
}

}  // namespace gpunex::platform::benchmarks
