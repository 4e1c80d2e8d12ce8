#include "platform/store/migrations.h"

#include <string>
#include <vector>

#include "common/time.h"

namespace gpunex::platform::store {
namespace {

struct Migration {
  int version;
  const char* name;
  // Statements in the portable subset (db.h), run in order.
  std::vector<const char*> statements;
};

// Append only: never edit a migration that has shipped; add a new one.
const std::vector<Migration>& AllMigrations() {
  static const std::vector<Migration> migrations = {
      {1,
       "accounts",
       {
           R"(CREATE TABLE users (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                password_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                disabled BIGINT NOT NULL DEFAULT 0))",
           R"(CREATE TABLE user_roles (
                user_id TEXT NOT NULL REFERENCES users(id),
                role TEXT NOT NULL,
                granted_at BIGINT NOT NULL,
                granted_by TEXT,
                PRIMARY KEY (user_id, role)))",
           R"(CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                token_hash TEXT NOT NULL UNIQUE,
                csrf_token TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                revoked_at BIGINT,
                ip TEXT NOT NULL DEFAULT '',
                user_agent TEXT NOT NULL DEFAULT ''))",
           "CREATE INDEX sessions_user ON sessions (user_id)",
           R"(CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                token_prefix TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT,
                revoked_at BIGINT))",
           "CREATE INDEX api_keys_user ON api_keys (user_id)",
           R"(CREATE TABLE login_failures (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL,
                ip TEXT NOT NULL,
                at BIGINT NOT NULL))",
           "CREATE INDEX login_failures_email ON login_failures (email, at)",
           "CREATE INDEX login_failures_ip ON login_failures (ip, at)",
           R"(CREATE TABLE audit_events (
                id TEXT PRIMARY KEY,
                at BIGINT NOT NULL,
                actor_user_id TEXT,
                action TEXT NOT NULL,
                subject TEXT NOT NULL DEFAULT '',
                ip TEXT NOT NULL DEFAULT '',
                detail TEXT NOT NULL DEFAULT '{}'))",
           "CREATE INDEX audit_events_at ON audit_events (at)",
       }},
      {2,
       "provider applications, providers, agent tokens, gpu catalog",
       {
           R"(CREATE TABLE gpu_models (
                id TEXT PRIMARY KEY,
                nvml_name TEXT NOT NULL,
                vram_gb BIGINT NOT NULL,
                fp32_tflops DOUBLE PRECISION NOT NULL,
                fp16_tflops DOUBLE PRECISION NOT NULL,
                fp16_tensor_tflops DOUBLE PRECISION NOT NULL,
                tf32_tensor_tflops DOUBLE PRECISION NOT NULL,
                mem_bw_gbps DOUBLE PRECISION NOT NULL,
                default_price_micro BIGINT NOT NULL,
                source TEXT NOT NULL,
                created_at BIGINT NOT NULL))",
           R"(CREATE TABLE provider_applications (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                status TEXT NOT NULL,
                body TEXT NOT NULL,
                suggested_tier TEXT NOT NULL,
                tier TEXT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                first_submitted_at BIGINT,
                submitted_at BIGINT,
                decided_at BIGINT,
                decided_by TEXT))",
           "CREATE INDEX provider_applications_user ON provider_applications (user_id)",
           "CREATE INDEX provider_applications_status ON provider_applications (status, submitted_at)",
           R"(CREATE TABLE application_events (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES provider_applications(id),
                at BIGINT NOT NULL,
                actor_user_id TEXT NOT NULL,
                action TEXT NOT NULL,
                from_status TEXT NOT NULL,
                to_status TEXT NOT NULL,
                message TEXT,
                tier TEXT))",
           "CREATE INDEX application_events_app ON application_events (application_id, at)",
           R"(CREATE TABLE providers (
                user_id TEXT PRIMARY KEY REFERENCES users(id),
                tier TEXT NOT NULL,
                status TEXT NOT NULL,
                application_id TEXT NOT NULL,
                approved_at BIGINT NOT NULL,
                approved_by TEXT NOT NULL))",
           R"(CREATE TABLE agent_tokens (
                id TEXT PRIMARY KEY,
                provider_id TEXT NOT NULL REFERENCES providers(user_id),
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                token_prefix TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT,
                revoked_at BIGINT,
                replaced_by TEXT))",
           "CREATE INDEX agent_tokens_provider ON agent_tokens (provider_id)",
       }},
      {3,
       "notifications and email outbox",
       {
           R"(CREATE TABLE notifications (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                at BIGINT NOT NULL,
                kind TEXT NOT NULL,
                title TEXT NOT NULL,
                body TEXT NOT NULL,
                link TEXT,
                read_at BIGINT))",
           "CREATE INDEX notifications_user ON notifications (user_id, id)",
           R"(CREATE TABLE email_outbox (
                id TEXT PRIMARY KEY,
                created_at BIGINT NOT NULL,
                to_addr TEXT NOT NULL,
                subject TEXT NOT NULL,
                body TEXT,
                body_sha256 TEXT NOT NULL,
                message_id TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                lease_until BIGINT,
                last_error TEXT,
                sent_at BIGINT))",
           "CREATE INDEX email_outbox_due ON email_outbox (status, next_attempt_at)",
       }},
      {4,
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
       }},
      {5,
       "benchmarks: runs with their machine figures, per-GPU results, re-run due times",
       {
           // reason: first_connect | hardware_change | periodic | retry | requested.
           // state: running | passed | failed | error.
           R"(CREATE TABLE benchmark_runs (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                reason TEXT NOT NULL,
                state TEXT NOT NULL,
                requested_by TEXT,
                command_id TEXT NOT NULL,
                machine_phases BIGINT NOT NULL,
                emulated BIGINT NOT NULL,
                network TEXT,
                storage TEXT,
                failures TEXT NOT NULL,
                error TEXT,
                created_at BIGINT NOT NULL,
                finished_at BIGINT))",
           "CREATE INDEX benchmark_runs_machine ON benchmark_runs (machine_id, id)",
           "CREATE INDEX benchmark_runs_state ON benchmark_runs (state, created_at)",
           // One active run per machine, whichever instance schedules it.
           "CREATE UNIQUE INDEX benchmark_runs_active ON benchmark_runs (machine_id) WHERE state = 'running'",
           // state: running | passed | failed | error. figures: as gpunex-gpubench reported them.
           R"(CREATE TABLE benchmark_gpus (
                run_id TEXT NOT NULL REFERENCES benchmark_runs(id),
                gpu_id TEXT NOT NULL REFERENCES machine_gpus(id),
                uuid TEXT NOT NULL,
                catalog_id TEXT NOT NULL,
                state TEXT NOT NULL,
                figures TEXT,
                score DOUBLE PRECISION,
                failures TEXT NOT NULL,
                error TEXT,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (run_id, gpu_id)))",
           "CREATE INDEX benchmark_gpus_gpu ON benchmark_gpus (gpu_id, created_at)",
           // When a GPU whose benchmark could not run is due again.
           "ALTER TABLE machine_gpus ADD COLUMN benchmark_due_at BIGINT",
       }},
  };
  return migrations;
}

StatusOr<int> VersionIn(Tx& tx) {
  auto rows = tx.Query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  if (!rows.ok()) return rows.status();
  return static_cast<int>(rows->at(0).Int(0));
}

}  // namespace

int LatestSchemaVersion() { return AllMigrations().back().version; }

StatusOr<int> CurrentSchemaVersion(Database& db) {
  int version = 0;
  Status st = db.Read([&](Tx& tx) -> Status {
    auto v = VersionIn(tx);
    if (!v.ok()) return v.status();
    version = *v;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return version;
}

Status Migrate(Database& db) {
  GPUNEX_RETURN_IF_ERROR(db.Transact([](Tx& tx) -> Status {
    auto r = tx.Exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, "
        "name TEXT NOT NULL, applied_at BIGINT NOT NULL)");
    return r.status();
  }));
  for (const Migration& m : AllMigrations()) {
    GPUNEX_RETURN_IF_ERROR(db.Transact([&](Tx& tx) -> Status {
      if (tx.Backend() == "postgresql") {
        // Serialises concurrent migrators; released at commit.
        auto l = tx.Query("SELECT pg_advisory_xact_lock(7403001)");
        if (!l.ok()) return l.status();
      }
      GPUNEX_ASSIGN_OR_RETURN(int current, VersionIn(tx));
      if (current > LatestSchemaVersion()) {
        return FailedPrecondition("the database schema is version " + std::to_string(current) +
                                  ", newer than this gpunexd knows (" +
                                  std::to_string(LatestSchemaVersion()) + ")");
      }
      if (current >= m.version) return Status::Ok();
      for (const char* sql : m.statements) {
        auto r = tx.Exec(sql);
        if (!r.ok()) {
          return Internal("migration " + std::to_string(m.version) + " failed: " +
                          r.status().message());
        }
      }
      auto r = tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                       {int64_t{m.version}, std::string(m.name), NowMicros()});
      return r.status();
    }));
  }
  return Status::Ok();
}

}  // namespace gpunex::platform::store
