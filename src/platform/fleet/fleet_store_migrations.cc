// The fleet folder's part of the schema history (store/migrations.h). Append only.
#include "platform/fleet/fleet_store.h"

namespace gpunex::platform::fleet {

std::vector<store::Migration> FleetMigrations() {
  return {
      {4,
       "fleet",
       "fleet: machines, GPUs, uptime intervals, telemetry, agent commands, workloads",
       {
           R"(CREATE TABLE machines (
                id TEXT PRIMARY KEY,
                provider_id TEXT NOT NULL REFERENCES providers(user_id),
                key_hash TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                status TEXT NOT NULL,
                emulated BIGINT NOT NULL,
                agent_version TEXT NOT NULL,
                host TEXT NOT NULL,
                inventory_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_seen_at BIGINT NOT NULL,
                status_since BIGINT NOT NULL))",
           "CREATE INDEX machines_provider ON machines (provider_id)",
           "CREATE INDEX machines_status ON machines (status, last_seen_at)",
           R"(CREATE TABLE machine_gpus (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                idx BIGINT NOT NULL,
                uuid TEXT NOT NULL,
                name TEXT NOT NULL,
                catalog_id TEXT NOT NULL,
                vram_mb BIGINT NOT NULL,
                emulated BIGINT NOT NULL,
                present BIGINT NOT NULL,
                enabled BIGINT NOT NULL,
                listed BIGINT NOT NULL,
                delisted_reason TEXT,
                performance_score DOUBLE PRECISION,
                last_benchmark_at BIGINT,
                info TEXT NOT NULL,
                telemetry TEXT,
                telemetry_at BIGINT,
                created_at BIGINT NOT NULL,
                UNIQUE (machine_id, uuid)))",
           // Every online/offline period of a machine; the open one has ended_at NULL.
           // The reliability score integrates these against the availability schedule.
           R"(CREATE TABLE machine_intervals (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                state TEXT NOT NULL,
                started_at BIGINT NOT NULL,
                ended_at BIGINT,
                end_reason TEXT))",
           "CREATE INDEX machine_intervals_machine ON machine_intervals (machine_id, started_at)",
           R"(CREATE TABLE machine_events (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                at BIGINT NOT NULL,
                kind TEXT NOT NULL,
                detail TEXT NOT NULL))",
           "CREATE INDEX machine_events_machine ON machine_events (machine_id, at)",
           // Telemetry downsampled to one row per GPU and minute.
           R"(CREATE TABLE gpu_telemetry_minutes (
                gpu_id TEXT NOT NULL REFERENCES machine_gpus(id),
                minute BIGINT NOT NULL,
                samples BIGINT NOT NULL,
                utilization_sum BIGINT NOT NULL,
                temperature_max BIGINT NOT NULL,
                power_sum DOUBLE PRECISION NOT NULL,
                memory_used_max BIGINT NOT NULL,
                throttled_samples BIGINT NOT NULL,
                PRIMARY KEY (gpu_id, minute)))",
           R"(CREATE TABLE agent_commands (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                state TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                sent_at BIGINT,
                acked_at BIGINT,
                done_at BIGINT,
                ok BIGINT,
                result TEXT))",
           "CREATE INDEX agent_commands_machine ON agent_commands (machine_id, state, id)",
           "CREATE INDEX agent_commands_state ON agent_commands (state, machine_id)",
           R"(CREATE TABLE workloads (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                provider_id TEXT NOT NULL,
                created_by TEXT NOT NULL,
                purpose TEXT NOT NULL,
                spec TEXT NOT NULL,
                gpu_ids TEXT NOT NULL,
                state TEXT NOT NULL,
                exit_code BIGINT,
                end_reason TEXT,
                end_party TEXT,
                container_id TEXT,
                created_at BIGINT NOT NULL,
                started_at BIGINT,
                ended_at BIGINT,
                updated_at BIGINT NOT NULL))",
           "CREATE INDEX workloads_machine ON workloads (machine_id, state)",
           R"(CREATE TABLE workload_logs (
                workload_id TEXT NOT NULL REFERENCES workloads(id),
                stream TEXT NOT NULL,
                seq BIGINT NOT NULL,
                at BIGINT NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (workload_id, stream, seq)))",
       },
       {}},
      {5,
       "fleet",
       "when a GPU whose benchmark could not run is due again",
       {"ALTER TABLE machine_gpus ADD COLUMN benchmark_due_at BIGINT"},
       {}},
      // The listing is decided in one place (listing/listing.h) from facts; machine_gpus
      // keeps the facts the benchmarks report and the decision with its note. The old
      // `listed` flag and `delisted_reason` sentence give way to them. Fleet decides every
      // GPU's listing when it starts (Fleet::RefreshAllListings), so the states are set
      // by the code of the release that runs.
      {7,
       "fleet",
       "listing facts and the listing decision per GPU",
       {
           "ALTER TABLE machine_gpus ADD COLUMN benchmark_verdict TEXT NOT NULL DEFAULT 'passed'",
           "ALTER TABLE machine_gpus ADD COLUMN benchmark_note TEXT",
           "ALTER TABLE machine_gpus ADD COLUMN benchmarking BIGINT NOT NULL DEFAULT 0",
           "ALTER TABLE machine_gpus ADD COLUMN listing_state TEXT NOT NULL DEFAULT "
           "'machine_offline'",
           "ALTER TABLE machine_gpus ADD COLUMN listing_note TEXT",
           "ALTER TABLE machine_gpus ADD COLUMN listing_since BIGINT NOT NULL DEFAULT 0",
           "UPDATE machine_gpus SET benchmark_verdict = 'awaiting_first' "
           "WHERE delisted_reason = 'awaiting its first benchmark'",
           "UPDATE machine_gpus SET benchmark_verdict = 'failed', benchmark_note = delisted_reason "
           "WHERE delisted_reason LIKE 'benchmark: %'",
           // GPUs a running benchmark is measuring (benchmarks' tables, read once here).
           "UPDATE machine_gpus SET benchmarking = 1 WHERE id IN (SELECT bg.gpu_id "
           "FROM benchmark_gpus bg JOIN benchmark_runs r ON r.id = bg.run_id "
           "WHERE r.state = 'running')",
           "ALTER TABLE machine_gpus DROP COLUMN listed",
           "ALTER TABLE machine_gpus DROP COLUMN delisted_reason",
           "CREATE INDEX machine_gpus_listing ON machine_gpus (listing_state)",
       },
       {}},
      // After version 7's benchmarks part moved them into gpu_benchmark_status.
      {8,
       "fleet",
       "benchmark figures leave machine_gpus",
       {
           "ALTER TABLE machine_gpus DROP COLUMN performance_score",
           "ALTER TABLE machine_gpus DROP COLUMN last_benchmark_at",
           "ALTER TABLE machine_gpus DROP COLUMN benchmark_due_at",
       },
       {}},
      // Availability (availability/) reports whether a machine is inside its schedule or in
      // maintenance, as the benchmarks report their verdicts; the reliability score reads
      // telemetry under load and workload endings by time.
      {10,
       "fleet",
       "availability facts per machine; telemetry under load; workloads by end time",
       {
           "ALTER TABLE machines ADD COLUMN inside_schedule BIGINT NOT NULL DEFAULT 1",
           "ALTER TABLE machines ADD COLUMN schedule_opens_at BIGINT",
           "ALTER TABLE machines ADD COLUMN in_maintenance BIGINT NOT NULL DEFAULT 0",
           "ALTER TABLE gpu_telemetry_minutes ADD COLUMN loaded_samples BIGINT NOT NULL DEFAULT 0",
           "ALTER TABLE gpu_telemetry_minutes ADD COLUMN loaded_throttled_samples BIGINT NOT NULL "
           "DEFAULT 0",
           "CREATE INDEX gpu_telemetry_minutes_minute ON gpu_telemetry_minutes (minute)",
           "CREATE INDEX workloads_ended ON workloads (ended_at)",
           "CREATE INDEX machine_intervals_open ON machine_intervals (ended_at)",
       },
       {}},
      // pricing/ reports whether each GPU's model has a price (a listing fact), and every
      // change that can alter a machine's offers stamps offers_changed_at, which the
      // marketplace's offer index (market/) polls through its index.
      {11,
       "fleet",
       "price facts per GPU; when a machine's offers last changed",
       {
           "ALTER TABLE machine_gpus ADD COLUMN priced BIGINT NOT NULL DEFAULT 0",
           "ALTER TABLE machines ADD COLUMN offers_changed_at BIGINT NOT NULL DEFAULT 0",
           "CREATE INDEX machines_offers_changed ON machines (offers_changed_at)",
       },
       {}},
      // Every workload ending records its cause (endings.h), from which its party follows
      // and the sentence its customer reads; end_reason keeps the agent's own words.
      {17,
       "fleet",
       "the cause of each workload ending",
       {"ALTER TABLE workloads ADD COLUMN end_cause TEXT"},
       {}},
  };
}

}  // namespace gpunex::platform::fleet
