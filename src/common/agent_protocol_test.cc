#include "common/agent_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace gpunex::protocol {
namespace {

Hello SampleHello() {
  Hello h;
  h.agent_version = "0.1.0";
  h.machine_key = std::string(43, 'k');
  h.emulated = true;
  h.host = {"box",
            "AMD EPYC",
            "Debian 12",
            "6.1",
            "20.10.24",
            16,
            65536,
            1000000,
            500000,
            NetworkIsolation{kNotIsolated, {kReachedWorkload, kReachedHost}, "reached both"}};
  Gpu g;
  g.uuid = "GPU-12345678-aaaa-bbbb-cccc-1234567890ab";
  g.name = "NVIDIA H100 80GB HBM3 (emulated)";
  g.catalog_id = "h100-sxm-80gb";
  g.vram_mb = 81920;
  g.emulated = true;
  h.gpus.push_back(g);
  h.containers.push_back({"abc", "wl_1", "running"});
  return h;
}

TEST(AgentProtocol, RoundTripsEveryMessage) {
  std::vector<AgentMessage> agent = {
      SampleHello(),
      Heartbeat{7, {GpuSample{"GPU-12345678-aaaa", 10, 100, 40, 75.5, 1400, {"sw_thermal"}}}},
      Ack{"cmd_1"},
      Result{"cmd_1", false, "no such image", {{"k", 1}}},
      WorkloadEvent{"wl_1", "exited", 3, "", "abc", ""},
      WorkloadEvent{"wl_1", "failed", 137, "out of memory", "abc", kCauseOomKilled},
      Logs{"wl_1", "stderr", 2, "line\n"},
      Ping{42},
      NetworkIsolation{kIsolated, {}, "reached neither"},
      NetworkIsolation{kNotIsolated, {kReachedHost}, "reached the host at 172.17.0.1:41000"}};
  for (const auto& m : agent) {
    std::string text = Serialize(m);
    auto back = ParseAgentMessage(text);
    ASSERT_TRUE(back.ok()) << text << " " << back.status().ToString();
    EXPECT_EQ(Serialize(*back), text);
  }
  std::vector<PlatformMessage> platform = {
      Welcome{"mch_1", 10, {"wl_1"}}, Command{"cmd_2", kStopWorkload, ToJson(StopWorkload{"wl_1"})},
      Command{"cmd_3", kRunBenchmark, {{"benchmark_id", "bm_1"}}},
      Error{"unauthenticated", "token revoked"}, Pong{42}};
  for (const auto& m : platform) {
    std::string text = Serialize(m);
    auto back = ParsePlatformMessage(text);
    ASSERT_TRUE(back.ok()) << text << " " << back.status().ToString();
    EXPECT_EQ(Serialize(*back), text);
  }
}

TEST(AgentProtocol, RefusesMalformedMessagesNamingTheField) {
  struct Case {
    std::string text;
    std::string field;
  } cases[] = {
      {"not json", "body"},
      {"[]", "message"},
      {R"({"type": "launch_missiles"})", "type"},
      {R"({"type": "ack"})", "command_id"},
      {R"({"type": "ack", "command_id": "c", "extra": 1})", "extra"},
      {R"({"type": "heartbeat", "seq": -1, "gpus": []})", "seq"},
      {R"({"type": "heartbeat", "seq": 1, "gpus": [{"uuid": "GPU-x", "utilization_pct": 500,
          "memory_used_mb": 1, "temperature_c": 1, "sm_clock_mhz": 1}]})",
       "gpus[0].utilization_pct"},
      {R"({"type": "workload_event", "workload_id": "w", "state": "exploded"})", "state"},
      {R"({"type": "workload_event", "workload_id": "w", "state": "failed", "cause": "x"})",
       "cause"},
      {R"({"type": "logs", "workload_id": "w", "stream": "stdin", "seq": 1, "data": ""})",
       "stream"},
      {R"({"type": "ping", "id": -3})", "id"},
      {R"({"type": "ping", "id": 1, "at": 5})", "at"},
      {R"({"type": "network_isolation", "state": "fine", "reached": []})", "state"},
      {R"({"type": "network_isolation", "reached": []})", "state"},
      {R"({"type": "network_isolation", "state": "not_isolated", "reached": []})", "reached"},
      {R"({"type": "network_isolation", "state": "isolated", "reached": ["host"]})", "reached"},
      {R"({"type": "network_isolation", "state": "not_isolated", "reached": ["host", "host"]})",
       "reached"},
      {R"({"type": "network_isolation", "state": "not_isolated", "reached": ["internet"]})",
       "reached"},
      {R"({"type": "network_isolation", "state": "isolated", "reached": [], "fix": "x"})", "fix"},
      {R"({"type": "network_isolation", "state": "isolated", "detail": "a\nb"})", "detail"},
  };
  for (const auto& c : cases) {
    auto m = ParseAgentMessage(c.text);
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_TRUE(m.status().fields().count(c.field)) << c.text << " → " << m.status().ToString();
  }
  std::string hello = Serialize(SampleHello());
  hello.replace(hello.find("\"protocol\":1"), 12, "\"protocol\":9");
  auto m = ParseAgentMessage(hello);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().fields().count("protocol"));
  EXPECT_FALSE(ParseAgentMessage(std::string(kMaxMessageBytes + 1, ' ')).ok());
  // The report inside hello, by its path; and an older agent's hello without one.
  hello = Serialize(SampleHello());
  hello.replace(hello.find("\"reached\":["), 11, "\"reached\":[\"moon\",");
  m = ParseAgentMessage(hello);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().fields().count("host.network_isolation.reached")) << m.status().ToString();
  Hello old = SampleHello();
  old.host.network_isolation.reset();
  m = ParseAgentMessage(Serialize(old));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE(std::get<Hello>(*m).host.network_isolation);
  NetworkIsolation long_detail{kIsolated, {}, std::string(kMaxIsolationDetail + 1, 'x')};
  m = ParseAgentMessage(Serialize(long_detail));
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().fields().count("detail"));
  EXPECT_FALSE(ParsePlatformMessage(
                   R"({"type": "command", "command_id": "c", "kind": "rm -rf", "payload": {}})")
                   .ok());
}

TEST(AgentProtocol, AWorkloadEventWithoutACauseIsAnOlderAgentsAndParses) {
  auto m = ParseAgentMessage(
      R"({"type": "workload_event", "workload_id": "w", "state": "failed", "exit_code": null,
          "reason": "out of memory", "container_id": "c"})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& e = std::get<WorkloadEvent>(*m);
  EXPECT_EQ(e.cause, "");
  EXPECT_EQ(e.reason, "out of memory");
  // And without one, none is written.
  EXPECT_THAT(Serialize(e), ::testing::Not(::testing::HasSubstr("cause")));
  for (const char* c :
       {kCauseExited, kCauseOomKilled, kCauseTimeout, kCauseStopped, kCauseAgentShutdown,
        kCauseContainerGone, kCauseEngineError, kCausePolicyRefused, kCauseBadCommand,
        kCauseImageNotFound, kCauseImageRefused, kCauseRegistryUnreachable}) {
    EXPECT_TRUE(IsWorkloadCause(c)) << c;
  }
  EXPECT_FALSE(IsWorkloadCause("hardware_failure"));
}

// ---------------------------------------------------------------------------------------
// Command payloads.

using ::testing::HasSubstr;

constexpr char kGpu0[] = "GPU-0d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";
constexpr char kGpu1[] = "GPU-1d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";

json::object ValidStart() {
  return json::object{{"workload_id", "wl_01JD3ABC"},
                      {"image", "pytorch/pytorch:2.3.0"},
                      {"command", json::array{"python", "-c", "print(1)\nprint(2)"}},
                      {"env", json::object{{"EPOCHS", "3"}, {"_X1", ""}}},
                      {"gpu_uuids", json::array{kGpu0, kGpu1}},
                      {"memory_mb", 16384},
                      {"cpus", 8.5},
                      {"pids_limit", 4096},
                      {"scratch_mb", 102400},
                      {"timeout_s", 3600}};
}

// The field errors of parsing `payload` with `parse`, or {} when it parses.
template <typename Parse>
FieldErrors ErrorsOf(Parse parse, const json::object& payload) {
  auto parsed = parse(payload);
  if (parsed.ok()) return {};
  EXPECT_EQ(parsed.status().code(), StatusCode::kValidationFailed);
  return parsed.status().fields();
}

std::string Describe(const FieldErrors& errors) {
  return Status(StatusCode::kValidationFailed, "", errors).ToString().substr(0, 300);
}

// ToJson, through the wire's text, then the parser: the same value.
template <typename T, typename Parse>
void ExpectRoundTrip(const T& value, Parse parse) {
  const std::string text = ToJsonText(ToJson(value));
  auto v = ParseJson(text);
  ASSERT_TRUE(v.ok() && v->is_object()) << text;
  auto back = parse(v->get_object());
  ASSERT_TRUE(back.ok()) << text << " " << back.status().ToString();
  EXPECT_TRUE(*back == value) << text;
  EXPECT_EQ(ToJsonText(ToJson(*back)), text);
}

TEST(CommandKinds, AreTheWireNames) {
  EXPECT_STREQ(kStartWorkload, "start_workload");
  EXPECT_STREQ(kStopWorkload, "stop_workload");
  EXPECT_STREQ(kRunBenchmark, "run_benchmark");
  for (const char* k : {kStartWorkload, kStopWorkload, kRunBenchmark})
    EXPECT_TRUE(IsCommandKind(k));
  EXPECT_FALSE(IsCommandKind("Start_workload"));
  EXPECT_FALSE(IsCommandKind(""));
}

TEST(StartWorkload, ParsesAValidPayload) {
  auto s = ParseStartWorkload(ValidStart());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->workload_id, "wl_01JD3ABC");
  EXPECT_EQ(s->image, "pytorch/pytorch:2.3.0");
  EXPECT_EQ(s->command, (std::vector<std::string>{"python", "-c", "print(1)\nprint(2)"}));
  ASSERT_EQ(s->env.size(), 2u);
  EXPECT_EQ(s->env[0], (std::pair<std::string, std::string>{"EPOCHS", "3"}));
  EXPECT_EQ(s->env[1], (std::pair<std::string, std::string>{"_X1", ""}));
  EXPECT_EQ(s->gpu_uuids, (std::vector<std::string>{kGpu0, kGpu1}));
  EXPECT_EQ(s->memory_mb, 16384);
  EXPECT_DOUBLE_EQ(s->cpus, 8.5);
  EXPECT_EQ(s->pids_limit, 4096);
  EXPECT_EQ(s->scratch_mb, 102400);
  EXPECT_EQ(s->timeout_s, 3600);
}

TEST(StartWorkload, ParsesWhatThePlatformSends) {
  // As platform/fleet/workloads.cc writes it: every field, cpus as a double.
  auto v = ParseJson(R"({"workload_id":"wl_01JD3ABCDEFGHJKMNPQRSTVWXY","image":"busybox",)"
                     R"("command":[],"env":{},"gpu_uuids":[],"memory_mb":4096,"cpus":2.0,)"
                     R"("pids_limit":1024,"scratch_mb":4096,"timeout_s":0})");
  ASSERT_TRUE(v.ok());
  auto s = ParseStartWorkload(v->get_object());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->image, "busybox");
  EXPECT_DOUBLE_EQ(s->cpus, 2);
  EXPECT_EQ(ToJson(*s).size(), v->get_object().size());
}

TEST(StartWorkload, OptionalFieldsDefault) {
  json::object p = ValidStart();
  for (const char* f : {"command", "env", "gpu_uuids", "timeout_s"}) p.erase(f);
  auto s = ParseStartWorkload(p);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->command.empty());
  EXPECT_TRUE(s->env.empty());
  EXPECT_TRUE(s->gpu_uuids.empty());
  EXPECT_EQ(s->timeout_s, 0);
}

TEST(StartWorkload, RoundTrips) {
  auto s = ParseStartWorkload(ValidStart());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ExpectRoundTrip(*s, ParseStartWorkload);
  StartWorkload minimal{"w", "busybox", {}, {}, {}, 64, 0.1, 16, 16, 0, {}};
  ExpectRoundTrip(minimal, ParseStartWorkload);
  StartWorkload emulated = *s;
  emulated.gpu_uuids = {"GPU-emu-08f275f0-3ffa-8fa4-e341-ef38567b523a"};
  emulated.env = {{"Z", "last"}, {"A", "first"}};  // the order is kept
  ExpectRoundTrip(emulated, ParseStartWorkload);
}

TEST(StartWorkload, CarriesDeclaredPortsAndLeavesThemOutWhenNone) {
  json::object p = ValidStart();
  p["ports"] =
      json::array{json::object{{"port", 8888}, {"protocol", "http"}},
                  json::object{{"port", 22}, {"protocol", "tcp"}}, json::object{{"port", 9000}}};
  auto s = ParseStartWorkload(p);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->ports, (std::vector<WorkloadPort>{{8888, PortProtocol::kHttp, false},
                                                 {22, PortProtocol::kTcp, false},
                                                 {9000, PortProtocol::kHttp, false}}));
  ExpectRoundTrip(*s, ParseStartWorkload);
  // None: no "ports" member, so that an agent older than ports takes the command.
  s->ports.clear();
  EXPECT_FALSE(ToJson(*s).contains("ports"));
}

// Registry credentials (issue 25): read with the command, never written by ToJson (the
// platform stores commands without them and adds them as it sends), bad ones named by
// field and never echoed.
TEST(StartWorkload, TakesRegistryCredentialsThatToJsonNeverWrites) {
  json::object p = ValidStart();
  p["registry_auth"] = json::object{{"username", "robot"}, {"password", "hunter2-long"}};
  auto s = ParseStartWorkload(p);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->registry_auth, (RegistryCredentials{"robot", "hunter2-long"}));
  EXPECT_FALSE(ToJson(*s).contains("registry_auth"));
  EXPECT_EQ(RegistryCredentialsJson(*s->registry_auth),
            (json::object{{"username", "robot"}, {"password", "hunter2-long"}}));
  Wipe(*s->registry_auth);
  EXPECT_EQ(s->registry_auth, (RegistryCredentials{}));

  const auto errors = [](json::value auth) {
    json::object p = ValidStart();
    p["registry_auth"] = std::move(auth);
    return ErrorsOf(ParseStartWorkload, p);
  };
  EXPECT_EQ(errors(json::object{{"username", "robot"}}),
            (FieldErrors{{"registry_auth.password", "is required"}}));
  EXPECT_EQ(errors(json::object{{"username", ""}, {"password", "x"}}),
            (FieldErrors{{"registry_auth.username", "is required"}}));
  EXPECT_EQ(errors(json::object{{"username", "u"}, {"password", std::string(4097, 'p')}}),
            (FieldErrors{{"registry_auth.password", "must be at most 4096 characters"}}));
  EXPECT_EQ(errors(json::object{{"username", "u"}, {"password", "a\nb"}}),
            (FieldErrors{{"registry_auth.password", "must be text without control characters"}}));
  EXPECT_EQ(errors(json::object{{"username", "u"}, {"password", "p"}, {"server", "x"}}),
            (FieldErrors{{"registry_auth.server", "is not a known field"}}));
  EXPECT_EQ(errors(json::value("robot:secret")),
            (FieldErrors{{"registry_auth", "must be an object"}}));
}

TEST(StartWorkload, BadPortsNameTheirElement) {
  const auto errors = [](json::array ports) {
    json::object p = ValidStart();
    p["ports"] = std::move(ports);
    return ErrorsOf(ParseStartWorkload, p);
  };
  EXPECT_EQ(errors({json::object{{"port", 0}}}),
            (FieldErrors{{"ports[0].port", "must be at least 1"}}));
  EXPECT_EQ(errors({json::object{{"port", 65536}}}),
            (FieldErrors{{"ports[0].port", "must be at most 65535"}}));
  // Ports are reached inside the container, never published on the host: a Docker-style
  // binding is refused.
  EXPECT_EQ(errors({json::value("22:22")}).count("ports[0]"), 1u);
  EXPECT_EQ(errors({json::object{{"port", 80}}, json::object{{"port", 80}}}),
            (FieldErrors{{"ports[1].port", "is declared twice"}}));
  EXPECT_EQ(errors({json::object{{"port", 80}, {"protocol", "udp"}}}),
            (FieldErrors{{"ports[0].protocol", "must be \"http\" or \"tcp\""}}));
  EXPECT_EQ(errors({json::object{{"port", 80}, {"public", true}}}),
            (FieldErrors{{"ports[0].public", "is not a known field"}}));
  EXPECT_EQ(errors({json::value(80)}),
            (FieldErrors{{"ports[0]",
                          "must be an object such as {\"port\": 8080, \"protocol\": \"http\"}"}}));
  json::array many;
  for (int i = 1; i <= 17; ++i) many.emplace_back(json::object{{"port", i}});
  EXPECT_EQ(errors(many), (FieldErrors{{"ports", "must have at most 16 items"}}));
}

// The API's reading of the same array takes "public" too.
TEST(ReadPorts, TakesPublicWhereAsked) {
  FieldErrors errors;
  json::object body{{"ports", json::array{json::object{{"port", 8080}, {"public", true}},
                                          json::object{{"port", 8081}, {"protocol", "tcp"}}}}};
  JsonReader r(body, "", &errors);
  auto ports = ReadPorts(r, "ports", /*with_public=*/true);
  EXPECT_TRUE(errors.empty()) << Describe(errors);
  EXPECT_EQ(ports, (std::vector<WorkloadPort>{{8080, PortProtocol::kHttp, true},
                                              {8081, PortProtocol::kTcp, false}}));
  EXPECT_EQ(
      ToJsonText(PortsJson(ports, true)),
      R"([{"port":8080,"protocol":"http","public":true},{"port":8081,"protocol":"tcp","public":false}])");
}

TEST(StartWorkload, AcceptsEmulatedGpuUuidsOnlyInTheirOwnForm) {
  json::object p = ValidStart();
  p["gpu_uuids"] = json::array{"GPU-emu-08f275f0-3ffa-8fa4-e341-ef38567b523a"};
  auto s = ParseStartWorkload(p);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gpu_uuids[0], "GPU-emu-08f275f0-3ffa-8fa4-e341-ef38567b523a");
  for (const char* bad :
       {"GPU-emu-", "GPU-emu-08f275f0", "GPU-emu-08f275f0-3ffa-8fa4-e341-ef38567b523z",
        "GPU-emu-emu-08f275f0-3ffa-8fa4-e341-ef38567b"}) {
    p["gpu_uuids"] = json::array{bad};
    EXPECT_FALSE(ParseStartWorkload(p).ok()) << bad;
  }
}

TEST(StartWorkload, RefusesEveryFieldThatWouldWidenThePolicy) {
  const std::vector<std::pair<std::string, json::value>> attempts = {
      {"binds", json::array{"/:/host"}},
      {"privileged", true},
      {"cap_add", json::array{"SYS_ADMIN"}},
      {"cap_drop", json::array{}},
      {"devices", json::array{"/dev/nvidia0"}},
      {"device_requests", json::array{}},
      {"network_mode", "host"},
      {"volumes", json::object{{"/data", json::object{}}}},
      {"mounts", json::array{}},
      {"security_opt", json::array{"seccomp=unconfined"}},
      {"user", "root"},
      {"pid_mode", "host"},
      {"ipc_mode", "host"},
      {"userns_mode", "host"},
      {"uts_mode", "host"},
      {"runtime", "runc"},
      {"sysctls", json::object{}},
      {"port_bindings", json::object{{"22/tcp", json::array{}}}},
      {"exposed_ports", json::object{{"22/tcp", json::object{}}}},
      {"publish_all_ports", true},
      {"readonly_rootfs", false},
      {"cgroup_parent", "/"},
      {"entrypoint", json::array{"/bin/sh"}},
      {"labels", json::object{{"io.gpunex.managed", "false"}}},
      {"host_config", json::object{{"Privileged", true}}},
  };
  for (const auto& [field, value] : attempts) {
    json::object p = ValidStart();
    p[field] = value;
    FieldErrors errors = ErrorsOf(ParseStartWorkload, p);
    ASSERT_EQ(errors.size(), 1u) << field;
    ASSERT_TRUE(errors.contains(field)) << field;
    EXPECT_THAT(errors[field], HasSubstr("not allowed")) << field;
  }
  json::object p = ValidStart();
  p["Privileged"] = true;  // any other spelling is refused as unknown
  EXPECT_THAT(ErrorsOf(ParseStartWorkload, p)["Privileged"], HasSubstr("not a known field"));
}

TEST(StartWorkload, RefusesEachBoundNamingTheField) {
  struct Case {
    std::string field;
    json::value value;
    std::string error_path;
  };
  json::array many_args;
  for (int i = 0; i < 65; ++i) many_args.emplace_back("a");
  json::object many_env;
  for (int i = 0; i < 129; ++i) many_env["V" + std::to_string(i)] = "x";
  json::array many_gpus;
  for (int i = 0; i < 17; ++i) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08d-1b2c-4d5e-8f90-a1b2c3d4e5f6", i);
    many_gpus.emplace_back(uuid);
  }
  std::vector<Case> cases;
  auto add = [&cases](std::string field, json::value value, std::string path) {
    cases.push_back(Case{std::move(field), std::move(value), std::move(path)});
  };
  add("workload_id", "", "workload_id");
  add("workload_id", "-leading-dash", "workload_id");
  add("workload_id", "has/slash", "workload_id");
  add("workload_id", json::value_from(std::string(65, 'a')), "workload_id");
  add("image", "UPPER:case", "image");
  add("image", json::value_from("a:" + std::string(254, 'b')), "image");
  add("image", 7, "image");
  add("command", many_args, "command");
  add("command", json::array{std::string(4097, 'x')}, "command[0]");
  add("command", json::array{"ok", 3}, "command[1]");
  add("command", json::array{std::string("nul\0byte", 8)}, "command[0]");
  add("command", "python", "command");
  add("env", many_env, "env");
  add("env", json::object{{"1ABC", "x"}}, "env.1ABC");
  add("env", json::object{{"A-B", "x"}}, "env.A-B");
  add("env", json::object{{std::string(129, 'A'), "x"}}, "env." + std::string(129, 'A'));
  add("env", json::object{{"NVIDIA_VISIBLE_DEVICES", "all"}}, "env.NVIDIA_VISIBLE_DEVICES");
  add("env", json::object{{"NVIDIA_DRIVER_CAPABILITIES", "all"}}, "env.NVIDIA_DRIVER_CAPABILITIES");
  add("env", json::object{{"BIG", std::string(32 * 1024 + 1, 'x')}}, "env.BIG");
  add("env", json::object{{"NUM", 3}}, "env.NUM");
  add("env", json::object{{"NUL", nullptr}}, "env.NUL");
  add("env", json::array{"A=1"}, "env");
  add("gpu_uuids", many_gpus, "gpu_uuids");
  add("gpu_uuids", json::array{"GPU-xyz"}, "gpu_uuids[0]");
  add("gpu_uuids", json::array{"MIG-0d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6"}, "gpu_uuids[0]");
  add("gpu_uuids", json::array{kGpu0, kGpu0}, "gpu_uuids[1]");
  add("memory_mb", 63, "memory_mb");
  add("memory_mb", 1048577, "memory_mb");
  add("cpus", 0.05, "cpus");
  add("cpus", 0, "cpus");
  add("cpus", 256.5, "cpus");
  add("cpus", "8", "cpus");
  add("pids_limit", 15, "pids_limit");
  add("pids_limit", 32769, "pids_limit");
  add("scratch_mb", 15, "scratch_mb");
  add("scratch_mb", 1048577, "scratch_mb");
  add("timeout_s", -1, "timeout_s");
  add("timeout_s", 30 * 86400 + 1, "timeout_s");
  add("timeout_s", 1.5, "timeout_s");
  for (const auto& c : cases) {
    json::object p = ValidStart();
    p[c.field] = c.value;
    FieldErrors errors = ErrorsOf(ParseStartWorkload, p);
    EXPECT_TRUE(errors.contains(c.error_path))
        << c.field << " = " << json::serialize(c.value).substr(0, 80) << " gave "
        << Describe(errors);
  }
  // Bounds are inclusive.
  json::object p = ValidStart();
  p["memory_mb"] = kMaxMemoryMb;
  p["cpus"] = kMaxCpus;
  p["pids_limit"] = kMaxPids;
  p["scratch_mb"] = kMaxScratchMb;
  p["timeout_s"] = kMaxTimeoutS;
  p["command"] = json::array{std::string(kMaxCommandArgLength, 'x')};
  p["env"] = json::object{{"BIG", std::string(kMaxEnvValueLength, 'x')}};
  EXPECT_TRUE(ErrorsOf(ParseStartWorkload, p).empty()) << Describe(ErrorsOf(ParseStartWorkload, p));
  p["memory_mb"] = kMinMemoryMb;
  p["cpus"] = kMinCpus;
  p["pids_limit"] = kMinPids;
  p["scratch_mb"] = kMinScratchMb;
  p["timeout_s"] = 0;
  EXPECT_TRUE(ErrorsOf(ParseStartWorkload, p).empty()) << Describe(ErrorsOf(ParseStartWorkload, p));
}

TEST(StartWorkload, RequiresItsFields) {
  FieldErrors errors = ErrorsOf(ParseStartWorkload, json::object{});
  for (const char* f : {"workload_id", "image", "memory_mb", "cpus", "pids_limit", "scratch_mb"}) {
    EXPECT_TRUE(errors.contains(f)) << f;
  }
  EXPECT_EQ(errors.size(), 6u) << Describe(errors);
}

TEST(StartWorkload, FieldSyntax) {
  EXPECT_TRUE(IsWorkloadId("wl_01J.x-y"));
  EXPECT_TRUE(IsWorkloadId(std::string(kMaxWorkloadIdLength, 'a')));
  EXPECT_FALSE(IsWorkloadId(std::string(kMaxWorkloadIdLength + 1, 'a')));
  EXPECT_FALSE(IsWorkloadId("_x"));
  EXPECT_FALSE(IsWorkloadId(""));
  EXPECT_TRUE(IsEnvName("_A1"));
  EXPECT_FALSE(IsEnvName("1A"));
  EXPECT_TRUE(IsReservedEnvName("NVIDIA_VISIBLE_DEVICES"));
  EXPECT_FALSE(IsReservedEnvName("NVIDIA"));
  EXPECT_TRUE(IsGpuUuid(kGpu0));
  EXPECT_TRUE(IsGpuUuid("GPU-0D6F2A4E-1B2C-4D5E-8F90-A1B2C3D4E5F6"));
  EXPECT_FALSE(IsGpuUuid("GPU-0d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f"));
  EXPECT_FALSE(IsGpuUuid("GPU-0d6f2a4e1b2c-4d5e-8f90-a1b2c3d4e5f6a"));
}

TEST(StopWorkload, ParsesRoundTripsAndRefuses) {
  auto s = ParseStopWorkload(json::object{{"workload_id", "wl_1"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->workload_id, "wl_1");
  ExpectRoundTrip(StopWorkload{"wl_01JD3ABC"}, ParseStopWorkload);
  EXPECT_TRUE(ErrorsOf(ParseStopWorkload, json::object{}).contains("workload_id"));
  EXPECT_TRUE(ErrorsOf(ParseStopWorkload, {{"workload_id", "../etc"}}).contains("workload_id"));
  EXPECT_TRUE(ErrorsOf(ParseStopWorkload, {{"workload_id", 7}}).contains("workload_id"));
  EXPECT_TRUE(
      ErrorsOf(ParseStopWorkload, {{"workload_id", std::string(65, 'a')}}).contains("workload_id"));
  FieldErrors unknown = ErrorsOf(ParseStopWorkload, {{"workload_id", "w"}, {"force", true}});
  EXPECT_EQ(unknown.size(), 1u);
  EXPECT_TRUE(unknown.contains("force"));
}

json::object ValidRunBenchmark() {
  auto v =
      ParseJson(R"({"benchmark_id": "bmk_1", "gpus": [{"uuid": "GPU-1", "catalog_id": "l4-24gb"}],
    "machine_phases": true, "sustain_s": 30, "storage": {"file_mb": 64, "seconds_per_phase": 1.5},
    "network": {"mb": 8, "pings": 5}})");
  EXPECT_TRUE(v.ok());
  return v->get_object();
}

TEST(RunBenchmark, ParsesThePlatformsPayload) {
  auto r = ParseRunBenchmark(ValidRunBenchmark());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->benchmark_id, "bmk_1");
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->gpus[0].uuid, "GPU-1");
  EXPECT_EQ(r->gpus[0].catalog_id, "l4-24gb");
  EXPECT_TRUE(r->machine_phases);
  EXPECT_EQ(r->sustain_s, 30);
  EXPECT_EQ(r->storage_file_mb, 64);
  EXPECT_DOUBLE_EQ(r->storage_seconds, 1.5);
  EXPECT_EQ(r->network_mb, 8);
  EXPECT_EQ(r->pings, 5);
  EXPECT_EQ(ToJsonText(ToJson(*r)), ToJsonText(ValidRunBenchmark()));
}

TEST(RunBenchmark, OptionalFieldsDefault) {
  auto r = ParseRunBenchmark({{"benchmark_id", "b"}, {"gpus", json::array{}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  RunBenchmark defaults;
  defaults.benchmark_id = "b";
  EXPECT_TRUE(*r == defaults);
  auto partial = ParseRunBenchmark({{"benchmark_id", "b"},
                                    {"gpus", json::array{}},
                                    {"storage", json::object{}},
                                    {"network", {{"pings", 3}}}});
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_EQ(partial->storage_file_mb, defaults.storage_file_mb);
  EXPECT_EQ(partial->network_mb, defaults.network_mb);
  EXPECT_EQ(partial->pings, 3);
}

TEST(RunBenchmark, RoundTrips) {
  auto r = ParseRunBenchmark(ValidRunBenchmark());
  ASSERT_TRUE(r.ok());
  ExpectRoundTrip(*r, ParseRunBenchmark);
  RunBenchmark b;
  b.benchmark_id = "bmk_2";
  b.gpus = {{"GPU-a", ""}, {"GPU-b", "h100-sxm-80gb"}};
  b.storage_seconds = 0.25;
  ExpectRoundTrip(b, ParseRunBenchmark);
}

TEST(RunBenchmark, RefusesEachBoundAndUnknownFieldsNamingTheField) {
  struct Case {
    std::string_view path;  // where the bad value goes, and the error expected
    json::value value;
  };
  json::array many_gpus;
  for (int i = 0; i <= static_cast<int>(kMaxGpus); ++i)
    many_gpus.push_back(json::object{{"uuid", "GPU-1"}});
  const Case cases[] = {
      {"benchmark_id", ""},
      {"benchmark_id", json::value_from(std::string(65, 'b'))},
      {"gpus", many_gpus},
      {"gpus", "GPU-1"},
      {"gpus[0]", "GPU-1"},
      {"gpus[0].uuid", 3},
      {"gpus[0].uuid", ""},
      {"gpus[0].catalog_id", json::value_from(std::string(65, 'c'))},
      {"gpus[0].vendor", "nvidia"},
      {"machine_phases", "yes"},
      {"sustain_s", -1},
      {"sustain_s", kMaxBenchmarkSustainS + 1},
      {"storage.file_mb", 0},
      {"storage.file_mb", kMaxBenchmarkFileMb + 1},
      {"storage.seconds_per_phase", 0},
      {"storage.seconds_per_phase", kMaxBenchmarkSecondsPerPhase + 0.5},
      {"storage.queue_depth", 32},
      {"network.mb", 0},
      {"network.mb", kMaxBenchmarkNetworkMb + 1},
      {"network.pings", 0},
      {"network.pings", kMaxBenchmarkPings + 1},
      {"network.proxy", "http://x"},
      {"rm", true},
  };
  for (const auto& c : cases) {
    json::object p = ValidRunBenchmark();
    // Set the value at the dotted path (one level of object or the first GPU).
    std::string_view path = c.path;
    if (path.starts_with("gpus[0].")) {
      p["gpus"].as_array()[0].as_object()[path.substr(8)] = c.value;
    } else if (path == "gpus[0]") {
      p["gpus"].as_array()[0] = c.value;
    } else if (size_t dot = path.find('.'); dot != std::string_view::npos) {
      p[path.substr(0, dot)].as_object()[path.substr(dot + 1)] = c.value;
    } else {
      p[path] = c.value;
    }
    FieldErrors errors = ErrorsOf(ParseRunBenchmark, p);
    EXPECT_TRUE(errors.contains(std::string(c.path))) << c.path << " gave " << Describe(errors);
  }
  // Bounds are inclusive.
  json::object p = ValidRunBenchmark();
  p["sustain_s"] = kMaxBenchmarkSustainS;
  p["storage"] = {{"file_mb", kMaxBenchmarkFileMb},
                  {"seconds_per_phase", kMaxBenchmarkSecondsPerPhase}};
  p["network"] = {{"mb", kMaxBenchmarkNetworkMb}, {"pings", kMaxBenchmarkPings}};
  EXPECT_TRUE(ErrorsOf(ParseRunBenchmark, p).empty()) << Describe(ErrorsOf(ParseRunBenchmark, p));
  FieldErrors missing = ErrorsOf(ParseRunBenchmark, json::object{});
  EXPECT_TRUE(missing.contains("benchmark_id"));
  EXPECT_TRUE(missing.contains("gpus"));
}

// The result data as gpunex-agent 0.1.0 writes it (agent.cc before the typed form).
json::object AgentBenchmarkData() {
  auto v = ParseJson(R"({"benchmark_id":"bmk_1","emulated":false,"gpus":[
      {"uuid":"GPU-a","ok":true,"result":{"tool":"gpunex-gpubench","emulated":false,"compute":{"fp32_tflops":30.1}}},
      {"uuid":"GPU-b","ok":false,"error":"INTERNAL: gpunex-gpubench did not finish:\nexit code 1"}],
    "network":{"rtt_p50_ms":12.5,"rtt_p99_ms":40,"download_mbit_s":940.2,"upload_mbit_s":0},
    "storage_error":"FAILED_PRECONDITION: the disk would get too full"})");
  EXPECT_TRUE(v.ok());
  return v->get_object();
}

TEST(BenchmarkResult, ParsesWhatTheAgentSends) {
  auto r = ParseBenchmarkResult(AgentBenchmarkData());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->benchmark_id, "bmk_1");
  EXPECT_FALSE(r->emulated);
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[0].uuid, "GPU-a");
  EXPECT_TRUE(r->gpus[0].ok);
  ASSERT_TRUE(r->gpus[0].result.has_value());
  EXPECT_EQ(r->gpus[0].result->at("tool"), "gpunex-gpubench");
  EXPECT_EQ(r->gpus[0].error, "");
  EXPECT_FALSE(r->gpus[1].ok);
  EXPECT_FALSE(r->gpus[1].result.has_value());
  EXPECT_THAT(r->gpus[1].error, HasSubstr("exit code 1"));
  ASSERT_TRUE(r->network.has_value());
  EXPECT_DOUBLE_EQ(r->network->rtt_p50_ms, 12.5);
  EXPECT_DOUBLE_EQ(r->network->rtt_p99_ms, 40);
  EXPECT_DOUBLE_EQ(r->network->download_mbit_s, 940.2);
  EXPECT_EQ(r->network_error, "");
  EXPECT_FALSE(r->storage.has_value());
  EXPECT_THAT(r->storage_error, HasSubstr("too full"));
  EXPECT_EQ(ToJsonText(ToJson(*r)), ToJsonText(AgentBenchmarkData()));

  // Without machine phases, and with storage figures.
  auto bare =
      ParseBenchmarkResult({{"benchmark_id", "b"}, {"emulated", true}, {"gpus", json::array{}}});
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_FALSE(bare->network || bare->storage);
  json::object with_storage = AgentBenchmarkData();
  with_storage.erase("storage_error");
  with_storage["storage"] = {{"seq_read_mb_s", 2000},    {"seq_write_mb_s", 1500.5},
                             {"rand_read_iops", 250000}, {"rand_read_p50_us", 90},
                             {"rand_read_p99_us", 400},  {"direct_io", false}};
  auto s = ParseBenchmarkResult(with_storage);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s->storage.has_value());
  EXPECT_DOUBLE_EQ(s->storage->seq_write_mb_s, 1500.5);
  EXPECT_DOUBLE_EQ(s->storage->rand_read_iops, 250000);
  EXPECT_FALSE(s->storage->direct_io);
  with_storage["storage"].as_object().erase("direct_io");  // optional: true when left out
  EXPECT_TRUE(ParseBenchmarkResult(with_storage)->storage->direct_io);
}

TEST(BenchmarkResult, RoundTrips) {
  auto r = ParseBenchmarkResult(AgentBenchmarkData());
  ASSERT_TRUE(r.ok());
  ExpectRoundTrip(*r, ParseBenchmarkResult);
  BenchmarkResult b;
  b.benchmark_id = "bmk_2";
  b.emulated = true;
  // (The gpubench JSON passes through as JSON: a whole double such as 0.0 comes back as
  // the integer 0, equal in value but not in kind, so this one has none.)
  b.gpus.push_back({"GPU-emu-1", true, "", json::object{{"emulated", true}, {"duration_s", 1.5}}});
  b.gpus.push_back({"GPU-emu-2", false, "NOT_FOUND: no reference figures", std::nullopt});
  b.network_error = "UNAVAILABLE: no pong within 5 s";
  b.storage = BenchmarkStorage{1.5, 2.25, 300, 12.125, 99, false};
  ExpectRoundTrip(b, ParseBenchmarkResult);
  b.network = BenchmarkNetwork{0, 0.5, kMaxBenchmarkFigure, 1};
  b.network_error = "";
  b.storage.reset();
  ExpectRoundTrip(b, ParseBenchmarkResult);
}

TEST(BenchmarkResult, RefusesEachBoundAndUnknownFieldsNamingTheField) {
  struct Case {
    std::string_view path;
    json::value value;
  };
  json::array many_gpus;
  for (int i = 0; i <= static_cast<int>(kMaxGpus); ++i) {
    many_gpus.push_back(json::object{{"uuid", "GPU-1"}, {"ok", false}});
  }
  const std::string long_error(kMaxBenchmarkErrorLength + 1, 'e');
  const json::object storage{{"seq_read_mb_s", 1},
                             {"seq_write_mb_s", 1},
                             {"rand_read_iops", 1},
                             {"rand_read_p50_us", 1},
                             {"rand_read_p99_us", 1}};
  const Case cases[] = {
      {"benchmark_id", nullptr},
      {"benchmark_id", json::value_from(std::string(65, 'b'))},
      {"emulated", "no"},
      {"emulated", nullptr},
      {"gpus", many_gpus},
      {"gpus", json::object{}},
      {"gpus[0]", 1},
      {"gpus[0].uuid", nullptr},
      {"gpus[0].ok", "true"},
      {"gpus[0].ok", nullptr},
      {"gpus[0].error", json::value_from(long_error)},
      {"gpus[0].error", json::value_from(std::string("nul\0", 4))},
      {"gpus[0].result", "{}"},
      {"gpus[0].score", 1},
      {"network", "fast"},
      {"network.rtt_p50_ms", -0.5},
      {"network.rtt_p99_ms", "1"},
      {"network.download_mbit_s", kMaxBenchmarkFigure * 2},
      {"network.upload_mbit_s", nullptr},
      {"network.jitter_ms", 1},
      {"network_error", json::value_from(long_error)},
      {"network_error", 5},
      {"storage.seq_read_mb_s", -1},
      {"storage.rand_read_iops", kMaxBenchmarkFigure + 1},
      {"storage.rand_read_p99_us", nullptr},
      {"storage.direct_io", 1},
      {"storage.io_uring", true},
      {"storage_error", json::value_from(long_error)},
      {"extra", true},
  };
  for (const auto& c : cases) {
    json::object d = AgentBenchmarkData();
    d["storage"] = storage;
    d.erase("storage_error");
    std::string_view path = c.path;
    if (path.starts_with("gpus[0].")) {
      d["gpus"].as_array()[0].as_object()[path.substr(8)] = c.value;
    } else if (path == "gpus[0]") {
      d["gpus"].as_array()[0] = c.value;
    } else if (size_t dot = path.find('.'); dot != std::string_view::npos) {
      d[path.substr(0, dot)].as_object()[path.substr(dot + 1)] = c.value;
    } else {
      d[path] = c.value;
    }
    FieldErrors errors = ErrorsOf(ParseBenchmarkResult, d);
    EXPECT_TRUE(errors.contains(std::string(c.path))) << c.path << " gave " << Describe(errors);
  }
  // Bounds are inclusive, errors may span lines.
  json::object d = AgentBenchmarkData();
  d["network"].as_object()["download_mbit_s"] = kMaxBenchmarkFigure;
  d["network"].as_object()["upload_mbit_s"] = 0;
  d["storage_error"] = std::string(kMaxBenchmarkErrorLength - 1, 'e') + "\n";
  EXPECT_TRUE(ErrorsOf(ParseBenchmarkResult, d).empty())
      << Describe(ErrorsOf(ParseBenchmarkResult, d));
}

TEST(AgentProtocol, SanitizesLogText) {
  EXPECT_EQ(SanitizeLogText("ok\n"), "ok\n");
  EXPECT_EQ(SanitizeLogText("a\x01"
                            "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(SanitizeLogText("\xC3"), "\xEF\xBF\xBD");
  // Whitespace of every kind passes as it is; blank output stays blank.
  for (std::string_view blank : {"\n", "\n\n\n", "   ", "\t\r\n", "\v\f", " \t \n", ""}) {
    size_t replaced = 0;
    EXPECT_EQ(SanitizeLogText(blank, &replaced), blank);
    EXPECT_EQ(replaced, 0u);
  }
  // Each byte of invalid UTF-8, NUL and the other control characters: replaced, counted.
  size_t replaced = 0;
  const std::string raw =
      std::string("h\xC3(\xFF\xFE") + '\0' + "\x1b[1m\xE2\x82\n\xF0\x9F\x98\x80";
  EXPECT_EQ(SanitizeLogText(raw, &replaced),
            "h\xEF\xBF\xBD(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD[1m"
            "\xEF\xBF\xBD\xEF\xBF\xBD\n\xF0\x9F\x98\x80");
  EXPECT_EQ(replaced, 7u);
}

// Issue 24: a log chunk is output, and output is bytes: the platform takes any text (blank
// lines, whitespace only, control characters, empty), bounded only by its size.
TEST(AgentProtocol, LogDataIsAnyTextWithinItsSize) {
  for (const std::string& data :
       std::vector<std::string>{"\n", "\n\n", "   ", "\t", "\v\f\r\n", "", "\x01\x1b[0m",
                                std::string(1, '\0'), std::string(kMaxLogChunk, ' ')}) {
    const std::string text = Serialize(Logs{"wl_1", "stdout", 3, data});
    auto m = ParseAgentMessage(text);
    ASSERT_TRUE(m.ok()) << text << " " << m.status().ToString();
    ASSERT_TRUE(std::holds_alternative<Logs>(*m));
    EXPECT_EQ(std::get<Logs>(*m).data, data);
  }
  for (const std::string& text : std::vector<std::string>{
           std::string(R"({"type": "logs", "workload_id": "w", "stream": "stdout", "seq": 1})"),
           std::string(R"({"type": "logs", "workload_id": "w", "stream": "stdout", "seq": 1, )"
                       R"("data": 5})"),
           Serialize(Logs{"w", "stdout", 1, std::string(kMaxLogChunk + 1, 'x')})}) {
    auto m = ParseAgentMessage(text);
    ASSERT_FALSE(m.ok()) << text.substr(0, 100);
    EXPECT_TRUE(m.status().fields().count("data")) << m.status().ToString();
  }
}

// Pieces of a long output are cut between UTF-8 sequences: each is valid UTF-8 (a text
// frame that is not ends the WebSocket) and together they are the output.
TEST(AgentProtocol, SplitLogTextNeverCutsASequence) {
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += i % 3 == 0 ? "\xF0\x9F\x98\x80" : i % 3 == 1 ? "\xC3\xA9" : "a\n";
  for (size_t max : {4u, 5u, 7u, 1000u, 32768u}) {
    auto pieces = SplitLogText(text, max);
    std::string joined;
    for (const auto& p : pieces) {
      EXPECT_LE(p.size(), max);
      EXPECT_FALSE(p.empty());
      EXPECT_TRUE(IsCleanText(p, true)) << max;
      joined += p;
    }
    EXPECT_EQ(joined, text) << max;
  }
  EXPECT_TRUE(SplitLogText("", 10).empty());
  EXPECT_EQ(SplitLogText("\n", 10), std::vector<std::string>{"\n"});
}

}  // namespace
}  // namespace gpunex::protocol
