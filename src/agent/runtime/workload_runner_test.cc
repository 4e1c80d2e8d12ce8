// WorkloadRunner against a real, private dockerd (test_dockerd.h); the tests skip when
// the engine cannot start here. GPUs are emulated: the host has none.
#include "agent/runtime/workload_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "agent/runtime/test_dockerd.h"
#include "common/agent_protocol.h"
#include "common/thread_annotations.h"

namespace gpunex::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kBusyboxImage;

constexpr char kGpu0[] = "GPU-0d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";
constexpr char kGpu1[] = "GPU-1d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";
constexpr int64_t kWaitMs = 60'000;

// What the callbacks saw.
class Recorder {
 public:
  WorkloadCallbacks Callbacks() {
    return {[this](const WorkloadStatus& s) {
              MutexLock lock(&mu_);
              states_[s.workload_id].push_back(s.state);
              causes_[s.workload_id] = s.cause;
            },
            [this](const std::string& id, const LogFrame& f) {
              MutexLock lock(&mu_);
              (f.stream == LogFrame::Stream::kStdout ? stdout_ : stderr_)[id] += f.data;
            }};
  }
  std::vector<WorkloadState> States(const std::string& id) {
    MutexLock lock(&mu_);
    return states_[id];
  }
  // The cause the last reported state carried.
  std::string Cause(const std::string& id) {
    MutexLock lock(&mu_);
    return causes_[id];
  }
  std::string Stdout(const std::string& id) {
    MutexLock lock(&mu_);
    return stdout_[id];
  }
  std::string Stderr(const std::string& id) {
    MutexLock lock(&mu_);
    return stderr_[id];
  }

 private:
  Mutex mu_;
  std::map<std::string, std::vector<WorkloadState>> states_ GUARDED_BY(mu_);
  std::map<std::string, std::string> causes_ GUARDED_BY(mu_);
  std::map<std::string, std::string> stdout_ GUARDED_BY(mu_), stderr_ GUARDED_BY(mu_);
};

class WorkloadRunnerTest : public testing::DockerSuite<WorkloadRunnerTest> {
 protected:
  void TearDown() override {
    runner_.reset();
    if (!client_) return;
    // Every test leaves the engine as it found it.
    auto containers = client_->ListContainers("io.gpunex.managed=true");
    ASSERT_TRUE(containers.ok());
    for (const auto& c : *containers) {
      ADD_FAILURE() << "left behind: container " << c.name;
      (void)client_->RemoveContainer(c.id, true, true);
    }
    auto volumes = client_->ListVolumes("io.gpunex.managed=true");
    ASSERT_TRUE(volumes.ok());
    for (const auto& v : *volumes) {
      ADD_FAILURE() << "left behind: volume " << v;
      (void)client_->RemoveVolume(v);
    }
    auto networks = client_->ListNetworks("io.gpunex.managed=true");
    ASSERT_TRUE(networks.ok());
    for (const auto& n : *networks) {
      ADD_FAILURE() << "left behind: network " << n;
      (void)client_->RemoveNetwork(n);
    }
  }

  static WorkloadRunnerOptions Options() {
    WorkloadRunnerOptions o;
    o.policy.emulated_gpus = true;
    o.stop_grace_s = 1;
    return o;
  }

  WorkloadRunner& Runner(WorkloadRunnerOptions options = Options()) {
    runner_ = DockerWorkloadRunner(client_, std::move(options), recorder_.Callbacks());
    return *runner_;
  }

  static WorkloadSpec Spec(const std::string& id, const std::string& script) {
    WorkloadSpec s;
    s.workload_id = id;
    s.image = kBusyboxImage;
    s.command = {"sh", "-c", script};
    s.env = {{"GREETING", "hello"}};
    s.gpu_uuids = {kGpu0, kGpu1};
    s.memory_mb = 128;
    s.cpus = 0.5;
    s.pids_limit = 64;
    s.scratch_mb = 64;
    return s;
  }

  // Waits until the workload runs; its container id.
  std::string AwaitRunning(const std::string& id) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto s = runner_->Get(id);
      if (s.ok() && s->state == WorkloadState::kRunning) return s->container_id;
      if (s.ok() && s->state != WorkloadState::kStarting) {
        ADD_FAILURE() << id << " ended: " << WorkloadStateName(s->state) << " " << s->reason;
        return "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << id << " never ran";
    return "";
  }

  Recorder recorder_;
  std::unique_ptr<WorkloadRunner> runner_;
};

TEST_F(WorkloadRunnerTest, RunsToItsExitCodeWithLogs) {
  WorkloadRunner& runner = Runner();
  ASSERT_TRUE(runner.Start(Spec("exit3", "echo $GREETING; echo oops >&2; exit 3")).ok());
  auto end = runner.Wait("exit3", kWaitMs);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(end->state, WorkloadState::kExited) << end->reason;
  EXPECT_EQ(end->exit_code, 3);
  EXPECT_EQ(end->reason, "");
  EXPECT_EQ(end->cause, protocol::kCauseExited);
  EXPECT_EQ(recorder_.Cause("exit3"), protocol::kCauseExited);
  EXPECT_FALSE(end->container_id.empty());
  EXPECT_THAT(
      recorder_.States("exit3"),
      ElementsAre(WorkloadState::kStarting, WorkloadState::kRunning, WorkloadState::kExited));
  EXPECT_EQ(recorder_.Stdout("exit3"), "hello\n");
  EXPECT_EQ(recorder_.Stderr("exit3"), "oops\n");
  // Cleaned up before the terminal state was reported.
  EXPECT_EQ(client_->InspectContainer(end->container_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(runner.Start(Spec("exit3", "true")).code(), StatusCode::kAlreadyExists);
}

TEST_F(WorkloadRunnerTest, ContainerCarriesEveryIsolationSetting) {
  WorkloadRunner& runner = Runner();
  ASSERT_TRUE(runner.Start(Spec("iso", "sleep 60")).ok());
  std::string id = AwaitRunning("iso");
  ASSERT_FALSE(id.empty());
  auto info = client_->InspectContainer(id);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  const json::object& h = info->at("HostConfig").get_object();
  EXPECT_EQ(h.at("Privileged"), false);
  EXPECT_EQ(h.at("CapDrop"), json::array{"ALL"});
  EXPECT_TRUE(h.at("CapAdd").is_null());
  EXPECT_EQ(h.at("SecurityOpt"), json::array{"no-new-privileges"});
  EXPECT_EQ(h.at("ReadonlyRootfs"), true);
  EXPECT_EQ(h.at("PidsLimit"), 64);
  EXPECT_EQ(h.at("Memory"), 128 << 20);
  EXPECT_EQ(h.at("MemorySwap"), 128 << 20);
  EXPECT_EQ(h.at("NanoCpus"), 500'000'000);
  EXPECT_EQ(h.at("NetworkMode"), "gpunex-wl-iso");
  EXPECT_EQ(h.at("IpcMode"), "private");
  EXPECT_EQ(h.at("PidMode"), "");
  EXPECT_EQ(h.at("UsernsMode"), "");
  EXPECT_EQ(h.at("PublishAllPorts"), false);
  EXPECT_TRUE(h.at("PortBindings").is_null() || h.at("PortBindings").get_object().empty());
  EXPECT_TRUE(h.at("Binds").is_null() || h.at("Binds").get_array().empty());
  EXPECT_TRUE(h.at("Devices").is_null() || h.at("Devices").get_array().empty());
  EXPECT_TRUE(h.at("DeviceRequests").is_null());  // emulated GPUs
  EXPECT_EQ(h.at("Init"), true);
  EXPECT_EQ(h.at("RestartPolicy").at("Name"), "no");
  EXPECT_EQ(h.at("LogConfig").at("Type"), "json-file");
  EXPECT_EQ(h.at("LogConfig").at("Config").at("max-size"), "32m");
  EXPECT_EQ(h.at("Tmpfs"), (json::object{{"/tmp", "rw,nosuid,nodev,size=128m"}}));
  // The only mount: the workload's own scratch volume.
  const json::array& mounts = info->at("Mounts").get_array();
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].at("Type"), "volume");
  EXPECT_EQ(mounts[0].at("Name"), "gpunex-scratch-iso");
  EXPECT_EQ(mounts[0].at("Destination"), "/scratch");
  const json::object& cfg = info->at("Config").get_object();
  EXPECT_EQ(cfg.at("Labels").at("io.gpunex.managed"), "true");
  EXPECT_EQ(cfg.at("Labels").at("io.gpunex.workload"), "iso");
  EXPECT_EQ(cfg.at("Labels").at("io.gpunex.gpus"), json::value(std::string(kGpu0) + "," + kGpu1));
  bool pinned = false;
  for (const auto& e : cfg.at("Env").get_array()) pinned |= e == "NVIDIA_VISIBLE_DEVICES=void";
  EXPECT_TRUE(pinned);
  const json::object& nets = info->at("NetworkSettings").at("Networks").get_object();
  ASSERT_EQ(nets.size(), 1u);
  EXPECT_TRUE(nets.contains("gpunex-wl-iso"));
  ASSERT_TRUE(runner.Stop("iso").ok());
  auto end = runner.Wait("iso", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kStopped);
}

TEST_F(WorkloadRunnerTest, IsolationHoldsInsideTheContainer) {
  WorkloadRunner& runner = Runner();
  ASSERT_TRUE(runner
                  .Start(Spec("inside",
                              "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /rootfs "
                              "2>/dev/null && echo root-writable || echo root-ro; touch "
                              "/scratch/a && echo scratch-rw; touch /tmp/a && echo tmp-rw; mknod "
                              "/tmp/dev c 1 3 2>/dev/null && echo mknod-ok || echo mknod-no; "
                              "chroot / true 2>/dev/null && echo chroot-ok || echo chroot-no"))
                  .ok());
  auto end = runner.Wait("inside", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kExited) << end->reason;
  std::string out = recorder_.Stdout("inside");
  EXPECT_THAT(out, HasSubstr("CapEff:\t0000000000000000"));
  EXPECT_THAT(out, HasSubstr("NoNewPrivs:\t1"));
  EXPECT_THAT(out, HasSubstr("root-ro"));
  EXPECT_THAT(out, HasSubstr("scratch-rw"));
  EXPECT_THAT(out, HasSubstr("tmp-rw"));
  EXPECT_THAT(out, HasSubstr("mknod-no"));
  EXPECT_THAT(out, HasSubstr("chroot-no"));
}

TEST_F(WorkloadRunnerTest, TimeoutFailsAndRemovesTheContainer) {
  WorkloadRunner& runner = Runner();
  WorkloadSpec spec = Spec("slow", "echo begun; sleep 60");
  spec.timeout_s = 1;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(runner.Start(spec).ok());
  auto end = runner.Wait("slow", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kFailed);
  EXPECT_EQ(end->reason, "timeout");
  EXPECT_EQ(end->cause, protocol::kCauseTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(recorder_.Stdout("slow"), "begun\n");
  EXPECT_THAT(
      recorder_.States("slow"),
      ElementsAre(WorkloadState::kStarting, WorkloadState::kRunning, WorkloadState::kFailed));
  EXPECT_EQ(client_->InspectContainer(end->container_id).status().code(), StatusCode::kNotFound);
}

TEST_F(WorkloadRunnerTest, StopStopsAndRemoves) {
  WorkloadRunner& runner = Runner();
  ASSERT_TRUE(runner.Start(Spec("stopme", "sleep 60")).ok());
  std::string id = AwaitRunning("stopme");
  ASSERT_FALSE(id.empty());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(runner.Stop("stopme").ok());
  auto end = runner.Wait("stopme", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kStopped);
  EXPECT_EQ(end->cause, protocol::kCauseStopped);
  EXPECT_TRUE(end->exit_code.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(client_->InspectContainer(id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(runner.Stop("stopme").ok());  // already ended
  EXPECT_EQ(runner.Stop("unknown").code(), StatusCode::kNotFound);
  EXPECT_EQ(runner.Wait("unknown", 1).status().code(), StatusCode::kNotFound);
}

TEST_F(WorkloadRunnerTest, DialPortReachesOnlyADeclaredPortOfARunningWorkload) {
  WorkloadRunner& runner = Runner();
  WorkloadSpec spec = Spec("ports", "while true; do echo served | nc -l -p 8080; done");
  spec.ports = {{8080, protocol::PortProtocol::kTcp, false},
                {9090, protocol::PortProtocol::kHttp, false}};
  ASSERT_TRUE(runner.Start(spec).ok());
  ASSERT_FALSE(AwaitRunning("ports").empty());
  StatusOr<int> fd = Unavailable("not tried");
  for (int i = 0; i < 100 && !fd.ok(); ++i) {  // until nc listens
    fd = runner.DialPort("ports", 8080, std::chrono::milliseconds(2000));
    if (!fd.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  std::string got;
  char buf[64];
  for (int i = 0; i < 200 && got.find('\n') == std::string::npos; ++i) {
    const ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    if (n == 0) break;
    if (n < 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  close(*fd);
  EXPECT_EQ(got, "served\n");
  // Declared, nothing listens: unreachable. Not declared: refused. Unknown: not found.
  EXPECT_EQ(runner.DialPort("ports", 9090, std::chrono::milliseconds(500)).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(runner.DialPort("ports", 22, std::chrono::milliseconds(500)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(runner.DialPort("other", 8080, std::chrono::milliseconds(500)).status().code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(runner.Stop("ports").ok());
  ASSERT_TRUE(runner.Wait("ports", kWaitMs).ok());
  EXPECT_EQ(runner.DialPort("ports", 8080, std::chrono::milliseconds(500)).status().code(),
            StatusCode::kNotFound);
}

TEST_F(WorkloadRunnerTest, WithoutNetworkAndWithTmpfsScratch) {
  WorkloadRunnerOptions o = Options();
  o.policy.network_none = true;
  o.scratch = ScratchBackend::kTmpfs;
  WorkloadRunner& runner = Runner(o);
  ASSERT_TRUE(runner
                  .Start(Spec("nonet",
                              "ip -o addr | grep -v ' lo ' | wc -l; df -m /scratch | tail -1 | awk "
                              "'{print $2}'"))
                  .ok());
  auto end = runner.Wait("nonet", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kExited) << end->reason;
  EXPECT_EQ(recorder_.Stdout("nonet"), "0\n64\n");  // no interface but lo; 64 MiB scratch
}

TEST_F(WorkloadRunnerTest, AMissingImageFailsClearly) {
  WorkloadRunner& runner = Runner();
  WorkloadSpec spec = Spec("noimage", "true");
  spec.image = "127.0.0.1:1/gpunex/missing:1";
  ASSERT_TRUE(runner.Start(spec).ok());
  auto end = runner.Wait("noimage", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kFailed);
  EXPECT_THAT(end->reason, HasSubstr("image: "));
  EXPECT_THAT(end->reason, HasSubstr("127.0.0.1:1"));
  // Nothing listens there: the registry was not reached, and the engine answers.
  EXPECT_EQ(end->cause, protocol::kCauseRegistryUnreachable);
  EXPECT_THAT(recorder_.States("noimage"),
              ElementsAre(WorkloadState::kStarting, WorkloadState::kFailed));
}

TEST_F(WorkloadRunnerTest, ASpecOutsideThePolicyCreatesNothing) {
  WorkloadRunner& runner = Runner();
  WorkloadSpec spec = Spec("unchecked", "true");
  spec.pids_limit = 0;  // not from ParseStartWorkload: CheckContainerConfig refuses it
  ASSERT_TRUE(runner.Start(spec).ok());
  auto end = runner.Wait("unchecked", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kFailed);
  EXPECT_THAT(end->reason, HasSubstr("policy: "));
  EXPECT_THAT(end->reason, HasSubstr("HostConfig.PidsLimit"));
  EXPECT_EQ(end->cause, protocol::kCausePolicyRefused);
  EXPECT_TRUE(end->container_id.empty());
  // TearDown checks that no container, volume or network was left.
}

TEST_F(WorkloadRunnerTest, RefusesForeignAndBusyGpus) {
  WorkloadRunnerOptions o = Options();
  o.offered_gpus = std::set<std::string>{kGpu0, kGpu1};
  WorkloadRunner& runner = Runner(o);
  WorkloadSpec foreign = Spec("foreign", "true");
  foreign.gpu_uuids = {"GPU-9d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6"};
  EXPECT_EQ(runner.Start(foreign).code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(runner.Start(Spec("holder", "sleep 60")).ok());
  WorkloadSpec second = Spec("second", "true");
  second.gpu_uuids = {kGpu1};
  EXPECT_EQ(runner.Start(second).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(runner.Stop("holder").ok());
  ASSERT_TRUE(runner.Wait("holder", kWaitMs).ok());
  ASSERT_TRUE(runner.Start(second).ok());  // free again
  auto end = runner.Wait("second", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kExited) << end->reason;
}

TEST_F(WorkloadRunnerTest, ReconcileRemovesUnknownAndKeepsKnown) {
  // Two containers as an earlier agent process would have left them.
  ContainerPolicyOptions policy;
  policy.emulated_gpus = true;
  policy.network_none = true;
  std::map<std::string, std::string> ids;
  for (const std::string w : {"orphan", "known"}) {
    WorkloadSpec spec = Spec(w, "sleep 60");
    ASSERT_TRUE(client_
                    ->CreateVolume(ScratchVolumeName(w),
                                   {{"io.gpunex.managed", "true"}, {"io.gpunex.workload", w}}, {})
                    .ok());
    auto id =
        client_->CreateContainer(WorkloadContainerName(w), BuildContainerConfig(spec, policy));
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ASSERT_TRUE(client_->StartContainer(*id).ok());
    ids[w] = *id;
  }
  ASSERT_TRUE(client_
                  ->CreateNetwork(WorkloadNetworkName("orphan"),
                                  {{"io.gpunex.managed", "true"}, {"io.gpunex.workload", "orphan"}},
                                  false, WorkloadNetworkOptions(WorkloadNetworkName("orphan")))
                  .ok());
  // And one this runner runs, which the platform no longer wants.
  WorkloadRunner& runner = Runner();
  ASSERT_TRUE(runner.Start(Spec("unwanted", "sleep 60")).ok());
  ASSERT_FALSE(AwaitRunning("unwanted").empty());

  Status st = runner.Reconcile({"known"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(client_->InspectContainer(ids["orphan"]).status().code(), StatusCode::kNotFound);
  auto known = client_->InspectContainer(ids["known"]);
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(known->at("State").at("Running"), true);
  auto volumes = client_->ListVolumes("io.gpunex.managed=true");
  ASSERT_TRUE(volumes.ok());
  EXPECT_THAT(*volumes, ::testing::Contains("gpunex-scratch-known"));
  EXPECT_THAT(*volumes, ::testing::Not(::testing::Contains("gpunex-scratch-orphan")));
  auto networks = client_->ListNetworks("io.gpunex.managed=true");
  ASSERT_TRUE(networks.ok());
  EXPECT_THAT(*networks, ::testing::Not(::testing::Contains("gpunex-wl-orphan")));
  auto end = runner.Wait("unwanted", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kStopped);

  // The kept container from the earlier process is followed by this runner now.
  auto adopted = runner.Get("known");
  ASSERT_TRUE(adopted.ok()) << adopted.status().ToString();
  EXPECT_EQ(adopted->state, WorkloadState::kRunning);
  EXPECT_EQ(adopted->container_id, ids["known"]);

  // Once the platform forgets it too, the known one is stopped and removed.
  ASSERT_TRUE(runner.Reconcile({}).ok());
  auto gone = runner.Wait("known", kWaitMs);
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(gone->state, WorkloadState::kStopped);
  EXPECT_EQ(client_->InspectContainer(ids["known"]).status().code(), StatusCode::kNotFound);
}

TEST_F(WorkloadRunnerTest, TwoAgentsOnOneEngineLeaveEachOthersWorkloadsAlone) {
  // Agent A runs a workload with its network and scratch volume; agent B, on the same
  // engine, is told by its platform that it runs nothing.
  WorkloadRunnerOptions a = Options();
  a.policy.owner = "agentaaaaaaa";
  WorkloadRunner& runner_a = Runner(a);
  ASSERT_TRUE(runner_a.Start(Spec("of-a", "sleep 60")).ok());
  const std::string container = AwaitRunning("of-a");
  ASSERT_FALSE(container.empty());
  auto inspected = client_->InspectContainer(container);
  ASSERT_TRUE(inspected.ok());
  EXPECT_EQ(inspected->at("Config").at("Labels").at("io.gpunex.agent"), "agentaaaaaaa");

  WorkloadRunnerOptions b = Options();
  b.policy.owner = "agentbbbbbbb";
  Recorder recorder_b;
  auto runner_b = DockerWorkloadRunner(client_, b, recorder_b.Callbacks());
  ASSERT_TRUE(runner_b->Reconcile({}).ok());
  auto still = client_->InspectContainer(container);
  ASSERT_TRUE(still.ok()) << "agent B removed agent A's container";
  EXPECT_EQ(still->at("State").at("Running"), true);
  auto volumes = client_->ListVolumes("io.gpunex.agent=agentaaaaaaa");
  ASSERT_TRUE(volumes.ok());
  EXPECT_THAT(*volumes, ::testing::Contains(ScratchVolumeName("of-a")));
  auto networks = client_->ListNetworks("io.gpunex.agent=agentaaaaaaa");
  ASSERT_TRUE(networks.ok());
  EXPECT_THAT(*networks, ::testing::Contains(WorkloadNetworkName("of-a")));
  runner_b.reset();

  // Agent A's own reconcile still ends it, with all it made.
  ASSERT_TRUE(runner_a.Reconcile({}).ok());
  auto end = runner_a.Wait("of-a", kWaitMs);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state, WorkloadState::kStopped);
}

TEST_F(WorkloadRunnerTest, DestroyingTheRunnerStopsItsWorkloads) {
  ASSERT_TRUE(Runner().Start(Spec("orphaned", "sleep 60")).ok());
  std::string id = AwaitRunning("orphaned");
  ASSERT_FALSE(id.empty());
  runner_.reset();
  EXPECT_EQ(client_->InspectContainer(id).status().code(), StatusCode::kNotFound);
  EXPECT_THAT(recorder_.States("orphaned").back(), WorkloadState::kStopped);
  EXPECT_EQ(recorder_.Cause("orphaned"), protocol::kCauseAgentShutdown);
}

// The kernel kills the workload at its own memory limit (128 MiB, no swap): the engine's
// State.OOMKilled makes it oom_killed, the customer's own doing.
TEST_F(WorkloadRunnerTest, AWorkloadPastItsMemoryLimitIsOomKilled) {
  WorkloadRunner& runner = Runner();
  ASSERT_TRUE(
      runner.Start(Spec("greedy", "echo filling; x=0123456789; while :; do x=$x$x; done")).ok());
  auto end = runner.Wait("greedy", kWaitMs);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(end->state, WorkloadState::kFailed) << end->reason;
  EXPECT_EQ(end->reason, "out of memory");
  EXPECT_EQ(end->cause, protocol::kCauseOomKilled);
  EXPECT_EQ(end->exit_code, 137);
  EXPECT_EQ(recorder_.Stdout("greedy"), "filling\n");
  EXPECT_THAT(
      recorder_.States("greedy"),
      ElementsAre(WorkloadState::kStarting, WorkloadState::kRunning, WorkloadState::kFailed));
  EXPECT_EQ(client_->InspectContainer(end->container_id).status().code(), StatusCode::kNotFound);
}

// Someone on the host removes the running container (`docker rm -f`): container_gone, the
// machine's side, not the exit code the kill left.
TEST_F(WorkloadRunnerTest, AContainerRemovedFromOutsideIsContainerGone) {
  WorkloadRunner& runner = Runner();
  ASSERT_TRUE(runner.Start(Spec("removed", "echo up; sleep 60")).ok());
  std::string id = AwaitRunning("removed");
  ASSERT_FALSE(id.empty());
  std::string out;
  ASSERT_EQ(engine_->Cli("rm -f " + id, &out), 0) << out;
  auto end = runner.Wait("removed", kWaitMs);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(end->state, WorkloadState::kFailed) << end->reason;
  EXPECT_EQ(end->cause, protocol::kCauseContainerGone);
  EXPECT_EQ(end->reason, "the container was removed outside the agent");
  EXPECT_EQ(recorder_.Cause("removed"), protocol::kCauseContainerGone);
}

}  // namespace
}  // namespace gpunex::agent
