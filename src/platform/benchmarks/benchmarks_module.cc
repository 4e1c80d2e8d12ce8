#include "platform/benchmarks/benchmarks_module.h"

#include "platform/api/api.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/benchmarks/benchmarks_store.h"
#include "platform/benchmarks/score.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::benchmarks {

namespace {

StatusOr<BenchmarksOptions> OptionsFrom(const Config& c) {
  BenchmarksOptions o;
  o.enabled = c.benchmarks_enabled;
  o.interval_s = c.benchmark_interval_s;
  o.retry_after_s = c.benchmark_retry_after_s;
  o.spot_check_mean_s = c.benchmark_spot_check_mean_s;
  o.run_timeout_s = c.benchmark_run_timeout_s;
  o.sustain_s = c.benchmark_sustain_s;
  o.storage_file_mb = c.benchmark_storage_file_mb;
  o.storage_seconds = static_cast<double>(c.benchmark_storage_seconds);
  o.network_mb = c.benchmark_network_mb;
  o.pings = c.benchmark_pings;
  o.tick_ms = c.benchmark_tick_ms;
  GPUNEX_RETURN_IF_ERROR(
      ApplyThresholdOverrides(c.benchmark_thresholds, "benchmarks.thresholds", &o.thresholds));
  for (const auto& [model, overrides] : c.benchmark_model_thresholds) {
    Thresholds t = o.thresholds;
    GPUNEX_RETURN_IF_ERROR(ApplyThresholdOverrides(overrides, "benchmarks.models." + model, &t));
    o.by_model[model] = t;
  }
  return o;
}

Status Build(ModuleEnv& env) {
  GPUNEX_ASSIGN_OR_RETURN(BenchmarksOptions o, OptionsFrom(env.config));
  const notify::NoticeSettings& notices = env.services.Get<notify::NoticeSettings>();
  o.mail_domain = notices.mail_domain;
  o.public_url = notices.public_url;
  o.wake_outbox = notices.wake_outbox;
  o.clock = &env.clock;
  env.services.Own(std::make_unique<Benchmarks>(env.db, env.services.Get<fleet::Fleet>(), o));
  return Status::Ok();
}

}  // namespace

Module BenchmarksModule() {
  return Module{
      .name = "benchmarks",
      .migrations = BenchmarksMigrations,
      .build = Build,
      .routes = api::RegisterBenchmarkRoutes,
      .schedule =
          [](Services& s, const Config& c, Background& background) {
            if (c.benchmarks_enabled) s.Get<Benchmarks>().ScheduleOn(background);
          },
  };
}

}  // namespace gpunex::platform::benchmarks
