#include "agent/host/host_facts.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace gpunex::agent {
namespace {

const std::string kTestdata = GPUNEX_HOST_TESTDATA;

TEST(HostFacts, ReadsFixtureHost) {
  auto facts = CollectHostFacts(kTestdata, kTestdata + "/ubuntu/proc", kTestdata + "/ubuntu/etc");
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->hostname, "gpu-host-01");
  EXPECT_EQ(facts->cpu_model, "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(facts->cpu_cores, 4);
  EXPECT_EQ(facts->ram_mb, 64300);  // 65843264 kB
  EXPECT_EQ(facts->os, "Ubuntu 22.04.4 LTS");
  EXPECT_EQ(facts->kernel, "6.5.0-35-generic");
  EXPECT_GT(facts->disk_total_mb, 0);
  EXPECT_GE(facts->disk_free_mb, 0);
  EXPECT_LE(facts->disk_free_mb, facts->disk_total_mb);
  EXPECT_EQ(facts->docker_version, "");
}

TEST(HostFacts, FallsBackToUsrLibOsReleaseAndToleratesMissingFacts) {
  // usrlib/etc does not exist: os-release is found beside it, in usr/lib.
  auto facts = CollectHostFacts(kTestdata, kTestdata + "/usrlib/proc", kTestdata + "/usrlib/etc/");
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->os, "Fedora Linux 40");
  EXPECT_EQ(facts->cpu_cores, 2);
  EXPECT_EQ(facts->cpu_model, "");  // arm64 kernels name no model
  EXPECT_EQ(facts->ram_mb, 2048);
  EXPECT_EQ(facts->hostname, "");
  EXPECT_EQ(facts->kernel, "");

  json::object o = ToJson(*facts);
  EXPECT_EQ(o.at("cpu_model"), nullptr);
  EXPECT_EQ(o.at("hostname"), nullptr);
  EXPECT_EQ(o.at("docker_version"), nullptr);
  EXPECT_EQ(o.at("cpu_cores"), 2);
}

TEST(HostFacts, MissingOsReleaseLeavesOsEmpty) {
  auto facts = CollectHostFacts(kTestdata, kTestdata + "/ubuntu/proc", kTestdata + "/nowhere/etc");
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->os, "");
}

TEST(HostFacts, FailsWithoutProc) {
  auto facts = CollectHostFacts(kTestdata, kTestdata + "/nowhere/proc", kTestdata + "/ubuntu/etc");
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(facts.status().message().find("cpuinfo"), std::string::npos);
}

TEST(HostFacts, FailsWithoutMemTotal) {
  auto facts = CollectHostFacts(kTestdata, kTestdata + "/broken/proc", kTestdata + "/ubuntu/etc");
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(facts.status().message().find("MemTotal"), std::string::npos);
}

TEST(HostFacts, MissingWorkDirIsNotFound) {
  auto facts = CollectHostFacts(kTestdata + "/no-such-work-dir", kTestdata + "/ubuntu/proc",
                                kTestdata + "/ubuntu/etc");
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kNotFound);
  EXPECT_NE(facts.status().message().find("no-such-work-dir"), std::string::npos);
}

TEST(HostFacts, ReadsThisMachine) {
  auto facts = CollectHostFacts(std::filesystem::temp_directory_path().string());
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_GT(facts->cpu_cores, 0);
  EXPECT_GT(facts->ram_mb, 0);
  EXPECT_GT(facts->disk_total_mb, 0);
  EXPECT_FALSE(facts->kernel.empty());
  EXPECT_FALSE(facts->hostname.empty());
}

TEST(HostFacts, Json) {
  HostFacts f;
  f.hostname = "gpu-host-01";
  f.cpu_model = "AMD EPYC 9654 96-Core Processor";
  f.cpu_cores = 192;
  f.ram_mb = 1031800;
  f.disk_total_mb = 3815447;
  f.disk_free_mb = 3000000;
  f.os = "Ubuntu 22.04.4 LTS";
  f.kernel = "6.5.0-35-generic";
  f.docker_version = "26.1.3";
  EXPECT_EQ(ToJsonText(ToJson(f)),
            R"({"hostname":"gpu-host-01","cpu_model":"AMD EPYC 9654 96-Core Processor",)"
            R"("cpu_cores":192,"ram_mb":1031800,"disk_total_mb":3815447,)"
            R"("disk_free_mb":3000000,"os":"Ubuntu 22.04.4 LTS","kernel":"6.5.0-35-generic",)"
            R"("docker_version":"26.1.3"})");
}

}  // namespace
}  // namespace gpunex::agent
