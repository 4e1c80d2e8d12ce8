#include "common/agent_protocol.h"

#include <gtest/gtest.h>

namespace gpunex::protocol {
namespace {

Hello SampleHello() {
  Hello h;
  h.agent_version = "0.1.0";
  h.machine_key = std::string(43, 'k');
  h.emulated = true;
  h.host = {"box", "AMD EPYC", "Debian 12", "6.1", "20.10.24", 16, 65536, 1000000, 500000};
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
      WorkloadEvent{"wl_1", "exited", 3, "", "abc"},
      Logs{"wl_1", "stderr", 2, "line\n"},
      Ping{42}};
  for (const auto& m : agent) {
    std::string text = Serialize(m);
    auto back = ParseAgentMessage(text);
    ASSERT_TRUE(back.ok()) << text << " " << back.status().ToString();
    EXPECT_EQ(Serialize(*back), text);
  }
  std::vector<PlatformMessage> platform = {Welcome{"mch_1", 10, {"wl_1"}},
                                           Command{"cmd_2", "stop_workload", {{"workload_id", "wl_1"}}},
                                           Command{"cmd_3", "run_benchmark", {{"benchmark_id", "bm_1"}}},
                                           Error{"unauthenticated", "token revoked"},
                                           Pong{42}};
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
          "memory_used_mb": 1, "temperature_c": 1, "sm_clock_mhz": 1}]})", "gpus[0].utilization_pct"},
      {R"({"type": "workload_event", "workload_id": "w", "state": "exploded"})", "state"},
      {R"({"type": "logs", "workload_id": "w", "stream": "stdin", "seq": 1, "data": ""})", "stream"},
      {R"({"type": "ping", "id": -3})", "id"},
      {R"({"type": "ping", "id": 1, "at": 5})", "at"},
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
  EXPECT_FALSE(ParsePlatformMessage(R"({"type": "command", "command_id": "c", "kind": "rm -rf", "payload": {}})").ok());
}

TEST(AgentProtocol, SanitizesLogText) {
  EXPECT_EQ(SanitizeLogText("ok\n"), "ok\n");
  EXPECT_EQ(SanitizeLogText("a\x01" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(SanitizeLogText("\xC3"), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace gpunex::protocol
