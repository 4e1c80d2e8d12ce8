#include "agent/runtime/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

namespace gpunex::agent {
namespace {

constexpr char kGpu0[] = "GPU-0d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";
constexpr char kGpu1[] = "GPU-1d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";
constexpr char kGpu2[] = "GPU-2d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";

// [["gpu"]]: json::array{json::array{"gpu"}} is a copy of the inner array under clang.
json::array GpuCapabilities() {
  json::array caps;
  caps.emplace_back(json::array{"gpu"});
  return caps;
}

json::object ValidRequest() {
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

WorkloadSpec ValidSpec() {
  auto spec = protocol::ParseStartWorkload(ValidRequest());
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

// The parser's tests are in common/agent_protocol_test.cc; here the policy's own checks
// must accept every spec the parser accepts, at both ends of each bound.
TEST(ContainerPolicy, AcceptsTheParsersBounds) {
  json::object r = ValidRequest();
  r["memory_mb"] = protocol::kMinMemoryMb;
  r["cpus"] = protocol::kMinCpus;
  r["pids_limit"] = protocol::kMinPids;
  r["scratch_mb"] = protocol::kMinScratchMb;
  auto low = protocol::ParseStartWorkload(r);
  ASSERT_TRUE(low.ok()) << low.status().ToString();
  json::object c = BuildContainerConfig(*low, {});
  EXPECT_TRUE(CheckContainerConfig(c).ok()) << CheckContainerConfig(c).ToString();

  r["memory_mb"] = protocol::kMaxMemoryMb;
  r["cpus"] = protocol::kMaxCpus;
  r["pids_limit"] = protocol::kMaxPids;
  r["scratch_mb"] = protocol::kMaxScratchMb;
  r["workload_id"] = std::string(protocol::kMaxWorkloadIdLength, 'w');
  json::array gpus;
  for (size_t i = 0; i < protocol::kMaxWorkloadGpus; ++i) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08zu-1b2c-4d5e-8f90-a1b2c3d4e5f6", i);
    gpus.emplace_back(uuid);
  }
  r["gpu_uuids"] = std::move(gpus);
  auto high = protocol::ParseStartWorkload(r);
  ASSERT_TRUE(high.ok()) << high.status().ToString();
  for (bool emulated : {false, true}) {
    ContainerPolicyOptions opts;
    opts.emulated_gpus = emulated;
    c = BuildContainerConfig(*high, opts);
    EXPECT_TRUE(CheckContainerConfig(c).ok()) << CheckContainerConfig(c).ToString();
  }
}

const json::object& Host(const json::object& c) { return c.at("HostConfig").get_object(); }

TEST(ContainerPolicy, BuildsEveryIsolationSetting) {
  WorkloadSpec spec = ValidSpec();
  json::object c = BuildContainerConfig(spec, {});
  EXPECT_EQ(c.at("Image"), "pytorch/pytorch:2.3.0");
  EXPECT_EQ(c.at("Cmd"), (json::array{"python", "-c", "print(1)\nprint(2)"}));
  EXPECT_EQ(c.at("Env"),
            (json::array{"EPOCHS=3",
                         "_X1=", std::string("NVIDIA_VISIBLE_DEVICES=") + kGpu0 + "," + kGpu1}));
  EXPECT_EQ(c.at("Labels"), (json::object{{"io.gpunex.managed", "true"},
                                          {"io.gpunex.workload", "wl_01JD3ABC"},
                                          {"io.gpunex.gpus", std::string(kGpu0) + "," + kGpu1},
                                          {"io.gpunex.gpu-mode", "nvidia"}}));
  EXPECT_EQ(c.at("Tty"), false);
  const json::object& h = Host(c);
  EXPECT_EQ(h.at("DeviceRequests"),
            (json::array{json::object{{"Driver", "nvidia"},
                                      {"DeviceIDs", json::array{kGpu0, kGpu1}},
                                      {"Capabilities", GpuCapabilities()}}}));
  EXPECT_EQ(h.at("Binds"), json::array{});
  EXPECT_EQ(h.at("Mounts"),
            (json::array{json::object{{"Type", "volume"},
                                      {"Source", "gpunex-scratch-wl_01JD3ABC"},
                                      {"Target", "/scratch"},
                                      {"ReadOnly", false},
                                      {"VolumeOptions", json::object{{"NoCopy", true}}}}}));
  EXPECT_EQ(h.at("Tmpfs"), (json::object{{"/tmp", "rw,nosuid,nodev,size=256m"}}));
  EXPECT_EQ(h.at("Privileged"), false);
  EXPECT_EQ(h.at("CapDrop"), json::array{"ALL"});
  EXPECT_FALSE(h.contains("CapAdd"));
  EXPECT_EQ(h.at("SecurityOpt"), json::array{"no-new-privileges"});
  EXPECT_EQ(h.at("ReadonlyRootfs"), true);
  EXPECT_EQ(h.at("PidsLimit"), 4096);
  EXPECT_EQ(h.at("Memory"), int64_t{16384} << 20);
  EXPECT_EQ(h.at("MemorySwap"), int64_t{16384} << 20);
  EXPECT_EQ(h.at("NanoCpus"), int64_t{8'500'000'000});
  EXPECT_EQ(h.at("NetworkMode"), "gpunex-wl-wl_01JD3ABC");
  EXPECT_EQ(h.at("PublishAllPorts"), false);
  EXPECT_FALSE(h.contains("PortBindings"));
  EXPECT_EQ(h.at("IpcMode"), "private");
  EXPECT_FALSE(h.contains("PidMode"));
  EXPECT_FALSE(h.contains("UsernsMode"));
  EXPECT_FALSE(h.contains("Devices"));
  EXPECT_EQ(h.at("Init"), true);
  EXPECT_EQ(h.at("RestartPolicy"), (json::object{{"Name", "no"}, {"MaximumRetryCount", 0}}));
  EXPECT_EQ(h.at("LogConfig"),
            (json::object{{"Type", "json-file"},
                          {"Config", json::object{{"max-size", "32m"}, {"max-file", "2"}}}}));
  EXPECT_TRUE(CheckContainerConfig(c).ok()) << CheckContainerConfig(c).ToString();
}

TEST(ContainerPolicy, EmulatedGpusGetNoDeviceRequest) {
  ContainerPolicyOptions opts;
  opts.emulated_gpus = true;
  opts.network_none = true;
  opts.tmp_mb = 1 << 20;  // capped at the memory limit
  json::object c = BuildContainerConfig(ValidSpec(), opts);
  const json::object& h = Host(c);
  EXPECT_FALSE(h.contains("DeviceRequests"));
  EXPECT_EQ(c.at("Labels").at("io.gpunex.gpus"), json::value(std::string(kGpu0) + "," + kGpu1));
  EXPECT_EQ(c.at("Labels").at("io.gpunex.gpu-mode"), "emulated");
  EXPECT_EQ(c.at("Env").get_array().back(), "NVIDIA_VISIBLE_DEVICES=void");
  EXPECT_EQ(h.at("NetworkMode"), "none");
  EXPECT_EQ(h.at("Tmpfs").at("/tmp"), "rw,nosuid,nodev,size=16384m");
  EXPECT_TRUE(CheckContainerConfig(c).ok()) << CheckContainerConfig(c).ToString();
}

TEST(ContainerPolicy, DeclaredPortsAreLabelledForAnAgentThatAdoptsTheContainer) {
  WorkloadSpec spec = ValidSpec();
  spec.ports = {{8080, protocol::PortProtocol::kHttp, false},
                {22, protocol::PortProtocol::kTcp, false}};
  json::object c = BuildContainerConfig(spec, ContainerPolicyOptions{});
  EXPECT_EQ(c.at("Labels").at("io.gpunex.ports"), "8080/http,22/tcp");
  EXPECT_TRUE(CheckContainerConfig(c).ok()) << CheckContainerConfig(c).ToString();
  EXPECT_EQ(ParsePortsLabel("8080/http,22/tcp"), spec.ports);
  for (const char* bad : {"", "8080", "/tcp", "0/tcp", "65536/tcp", "80/udp", "80/tcp,80/http",
                          "8a/tcp", "123456/tcp", "80/tcp,"}) {
    EXPECT_FALSE(ParsePortsLabel(bad)) << bad;
  }
  c["Labels"].as_object()["io.gpunex.ports"] = "22/ssh";
  EXPECT_FALSE(CheckContainerConfig(c).ok());
  // No ports, no label.
  EXPECT_FALSE(BuildContainerConfig(ValidSpec(), ContainerPolicyOptions{})
                   .at("Labels")
                   .as_object()
                   .contains("io.gpunex.ports"));
}

TEST(ContainerPolicy, NoGpusNoDeviceRequest) {
  WorkloadSpec spec = ValidSpec();
  spec.gpu_uuids.clear();
  spec.command.clear();
  json::object c = BuildContainerConfig(spec, {});
  EXPECT_FALSE(Host(c).contains("DeviceRequests"));
  EXPECT_FALSE(c.contains("Cmd"));
  EXPECT_EQ(c.at("Env").get_array().back(), "NVIDIA_VISIBLE_DEVICES=void");
  EXPECT_TRUE(CheckContainerConfig(c).ok()) << CheckContainerConfig(c).ToString();
}

json::object& MutableHost(json::object& c) { return c["HostConfig"].as_object(); }

struct Mutation {
  const char* name;
  bool emulated;
  std::function<void(json::object&)> mutate;
  std::string path;  // the field error expected
};

TEST(ContainerPolicy, CheckCatchesEveryViolation) {
  const std::string other_gpu = kGpu2;
  const std::vector<Mutation> mutations = {
      {"privileged", false, [](auto& c) { MutableHost(c)["Privileged"] = true; },
       "HostConfig.Privileged"},
      {"privileged missing", false, [](auto& c) { MutableHost(c).erase("Privileged"); },
       "HostConfig.Privileged"},
      {"a bind", false, [](auto& c) { MutableHost(c)["Binds"] = json::array{"/:/host"}; },
       "HostConfig.Binds"},
      {"cap add", false, [](auto& c) { MutableHost(c)["CapAdd"] = json::array{"SYS_ADMIN"}; },
       "HostConfig.CapAdd"},
      {"cap drop narrowed", false,
       [](auto& c) { MutableHost(c)["CapDrop"] = json::array{"NET_RAW"}; }, "HostConfig.CapDrop"},
      {"network host", false, [](auto& c) { MutableHost(c)["NetworkMode"] = "host"; },
       "HostConfig.NetworkMode"},
      {"network bridge", false, [](auto& c) { MutableHost(c)["NetworkMode"] = "bridge"; },
       "HostConfig.NetworkMode"},
      {"another workload's network", false,
       [](auto& c) { MutableHost(c)["NetworkMode"] = "gpunex-wl-other"; },
       "HostConfig.NetworkMode"},
      {"container network", false, [](auto& c) { MutableHost(c)["NetworkMode"] = "container:abc"; },
       "HostConfig.NetworkMode"},
      {"pid host", false, [](auto& c) { MutableHost(c)["PidMode"] = "host"; },
       "HostConfig.PidMode"},
      {"ipc host", false, [](auto& c) { MutableHost(c)["IpcMode"] = "host"; },
       "HostConfig.IpcMode"},
      {"userns host", false, [](auto& c) { MutableHost(c)["UsernsMode"] = "host"; },
       "HostConfig.UsernsMode"},
      {"uts host", false, [](auto& c) { MutableHost(c)["UTSMode"] = "host"; },
       "HostConfig.UTSMode"},
      {"no no-new-privileges", false,
       [](auto& c) { MutableHost(c)["SecurityOpt"] = json::array{}; }, "HostConfig.SecurityOpt"},
      {"seccomp unconfined", false,
       [](auto& c) {
         MutableHost(c)["SecurityOpt"] = json::array{"no-new-privileges", "seccomp=unconfined"};
       },
       "HostConfig.SecurityOpt"},
      {"writable root", false, [](auto& c) { MutableHost(c)["ReadonlyRootfs"] = false; },
       "HostConfig.ReadonlyRootfs"},
      {"a GPU not allocated", false,
       [&](auto& c) {
         MutableHost(c)["DeviceRequests"]
             .as_array()[0]
             .as_object()["DeviceIDs"]
             .as_array()
             .emplace_back(other_gpu);
       },
       "HostConfig.DeviceRequests[0].DeviceIDs"},
      {"all GPUs by count", false,
       [](auto& c) { MutableHost(c)["DeviceRequests"].as_array()[0].as_object()["Count"] = -1; },
       "HostConfig.DeviceRequests[0].Count"},
      {"device request driver", false,
       [](auto& c) {
         MutableHost(c)["DeviceRequests"].as_array()[0].as_object()["Driver"] = "cdi";
       },
       "HostConfig.DeviceRequests[0].Driver"},
      {"a second device request", false,
       [](auto& c) {
         auto& dr = MutableHost(c)["DeviceRequests"].as_array();
         dr.push_back(dr[0]);
       },
       "HostConfig.DeviceRequests"},
      {"device request when emulated", true,
       [&](auto& c) {
         MutableHost(c)["DeviceRequests"] =
             json::array{json::object{{"Driver", "nvidia"},
                                      {"DeviceIDs", json::array{kGpu0}},
                                      {"Capabilities", GpuCapabilities()}}};
       },
       "HostConfig.DeviceRequests"},
      {"label lists an extra GPU", false,
       [&](auto& c) {
         c["Labels"].as_object()["io.gpunex.gpus"] =
             std::string(kGpu0) + "," + kGpu1 + "," + other_gpu;
       },
       "HostConfig.DeviceRequests[0].DeviceIDs"},
      {"devices", false,
       [](auto& c) {
         MutableHost(c)["Devices"] = json::array{json::object{{"PathOnHost", "/dev/sda"}}};
       },
       "HostConfig.Devices"},
      {"a bind mount", false,
       [](auto& c) { MutableHost(c)["Mounts"].as_array()[0].as_object()["Type"] = "bind"; },
       "HostConfig.Mounts[0].Type"},
      {"another workload's volume", false,
       [](auto& c) {
         MutableHost(c)["Mounts"].as_array()[0].as_object()["Source"] = "gpunex-scratch-other";
       },
       "HostConfig.Mounts[0].Source"},
      {"volume driver bind", false,
       [](auto& c) {
         MutableHost(c)["Mounts"].as_array()[0].as_object()["VolumeOptions"] = json::object{
             {"DriverConfig",
              json::object{
                  {"Name", "local"},
                  {"Options", json::object{{"type", "none"}, {"o", "bind"}, {"device", "/"}}}}}};
       },
       "HostConfig.Mounts[0].VolumeOptions.DriverConfig"},
      {"a second mount", false,
       [](auto& c) {
         auto& m = MutableHost(c)["Mounts"].as_array();
         m.push_back(m[0]);
       },
       "HostConfig.Mounts"},
      {"bind options", false,
       [](auto& c) {
         MutableHost(c)["Mounts"].as_array()[0].as_object()["BindOptions"] = json::object{};
       },
       "HostConfig.Mounts[0].BindOptions"},
      {"volumes from", false, [](auto& c) { MutableHost(c)["VolumesFrom"] = json::array{"other"}; },
       "HostConfig.VolumesFrom"},
      {"unsized tmpfs", false,
       [](auto& c) {
         MutableHost(c)["Tmpfs"] = json::object{{"/tmp", "rw"}};
       },
       "HostConfig.Tmpfs./tmp"},
      {"tmpfs elsewhere", false,
       [](auto& c) { MutableHost(c)["Tmpfs"].as_object()["/etc"] = "size=1m"; },
       "HostConfig.Tmpfs"},
      {"no memory limit", false, [](auto& c) { MutableHost(c).erase("Memory"); },
       "HostConfig.Memory"},
      {"unlimited swap", false, [](auto& c) { MutableHost(c)["MemorySwap"] = -1; },
       "HostConfig.MemorySwap"},
      {"no cpu limit", false, [](auto& c) { MutableHost(c)["NanoCpus"] = 0; },
       "HostConfig.NanoCpus"},
      {"unlimited pids", false, [](auto& c) { MutableHost(c)["PidsLimit"] = -1; },
       "HostConfig.PidsLimit"},
      {"publish ports", false, [](auto& c) { MutableHost(c)["PublishAllPorts"] = true; },
       "HostConfig.PublishAllPorts"},
      {"port bindings", false, [](auto& c) { MutableHost(c)["PortBindings"] = json::object{}; },
       "HostConfig.PortBindings"},
      {"no init", false, [](auto& c) { MutableHost(c)["Init"] = false; }, "HostConfig.Init"},
      {"restart always", false,
       [](auto& c) {
         MutableHost(c)["RestartPolicy"] = json::object{{"Name", "always"}};
       },
       "HostConfig.RestartPolicy.Name"},
      {"no log cap", false,
       [](auto& c) {
         MutableHost(c)["LogConfig"] =
             json::object{{"Type", "json-file"}, {"Config", json::object{}}};
       },
       "HostConfig.LogConfig.Config"},
      {"other log driver", false,
       [](auto& c) { MutableHost(c)["LogConfig"].as_object()["Type"] = "syslog"; },
       "HostConfig.LogConfig.Type"},
      {"sysctls", false, [](auto& c) { MutableHost(c)["Sysctls"] = json::object{}; },
       "HostConfig.Sysctls"},
      {"cgroup parent", false, [](auto& c) { MutableHost(c)["CgroupParent"] = "/"; },
       "HostConfig.CgroupParent"},
      {"runtime", false, [](auto& c) { MutableHost(c)["Runtime"] = "runc"; }, "HostConfig.Runtime"},
      {"no host config", false, [](auto& c) { c.erase("HostConfig"); }, "HostConfig"},
      {"user root", false, [](auto& c) { c["User"] = "root"; }, "User"},
      {"volumes", false,
       [](auto& c) {
         c["Volumes"] = json::object{{"/data", json::object{}}};
       },
       "Volumes"},
      {"extra network", false, [](auto& c) { c["NetworkingConfig"] = json::object{}; },
       "NetworkingConfig"},
      {"tty", false, [](auto& c) { c["Tty"] = true; }, "Tty"},
      {"bad image", false, [](auto& c) { c["Image"] = "Not A Ref"; }, "Image"},
      {"unmanaged", false, [](auto& c) { c["Labels"].as_object().erase("io.gpunex.managed"); },
       "Labels.io.gpunex.managed"},
      {"extra label", false, [](auto& c) { c["Labels"].as_object()["com.example"] = "x"; },
       "Labels.com.example"},
      {"all GPUs by env", false,
       [](auto& c) { c["Env"].as_array().back() = "NVIDIA_VISIBLE_DEVICES=all"; }, "Env[2]"},
      {"GPU env unpinned", false, [](auto& c) { c["Env"].as_array().pop_back(); }, "Env"},
      {"other NVIDIA env", false,
       [](auto& c) { c["Env"].as_array().emplace_back("NVIDIA_DRIVER_CAPABILITIES=all"); },
       "Env[3]"},
      {"malformed env", false, [](auto& c) { c["Env"].as_array().emplace_back("NOEQUALS"); },
       "Env[3]"},
  };
  for (const auto& m : mutations) {
    ContainerPolicyOptions opts;
    opts.emulated_gpus = m.emulated;
    json::object c = BuildContainerConfig(ValidSpec(), opts);
    ASSERT_TRUE(CheckContainerConfig(c).ok()) << m.name;
    m.mutate(c);
    Status st = CheckContainerConfig(c);
    ASSERT_FALSE(st.ok()) << m.name;
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << m.name;
    EXPECT_TRUE(st.fields().contains(m.path)) << m.name << ": " << st.ToString();
  }
}

TEST(ContainerPolicy, NamesAreDerivedFromTheWorkload) {
  EXPECT_EQ(WorkloadContainerName("w1"), "gpunex-wl-w1");
  EXPECT_EQ(WorkloadNetworkName("w1"), "gpunex-wl-w1");
  EXPECT_EQ(ScratchVolumeName("w1"), "gpunex-scratch-w1");
}

TEST(ContainerPolicy, WorkloadBridgesShareAPrefixAndFitAnInterfaceName) {
  const std::string a = WorkloadBridgeName(WorkloadNetworkName("wl_01J9ZQ7M4X2Y8P0KTV3N6R5B1C"));
  const std::string b = WorkloadBridgeName(WorkloadNetworkName("wl_01J9ZQ7M4X2Y8P0KTV3N6R5B1D"));
  EXPECT_TRUE(a.starts_with(kWorkloadBridgePrefix)) << a;
  EXPECT_EQ(a.size(), 15u) << "IFNAMSIZ is 16 with the terminating NUL";
  EXPECT_NE(a, b);
  EXPECT_EQ(a, WorkloadBridgeName(WorkloadNetworkName("wl_01J9ZQ7M4X2Y8P0KTV3N6R5B1C")))
      << "the same network gets the same bridge (a retried start reuses it)";
  EXPECT_EQ(WorkloadNetworkOptions("n"),
            (std::map<std::string, std::string>{
                {"com.docker.network.bridge.name", WorkloadBridgeName("n")}}));
}

}  // namespace
}  // namespace gpunex::agent
