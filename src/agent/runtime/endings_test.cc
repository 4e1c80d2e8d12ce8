// How the runner names a workload's end from the engine's facts (endings.h): one test per
// row of the agent's side of docs/billing.md's "Who ended it", with the engine's own
// messages (Docker 20.10) where a message is what is read.
#include "agent/runtime/endings.h"

#include <gtest/gtest.h>

#include "common/agent_protocol.h"

namespace gpunex::agent {
namespace {

EndVerdict EndOf(EngineEnd end) { return RunEnd(end); }

TEST(RunEnd, AnExitCodeIsTheProcessEndingByItself) {
  for (int64_t code : {0, 1, 3, 127, 137, 255}) {
    EngineEnd end;
    end.exit_code = code;
    EndVerdict v = EndOf(end);
    EXPECT_EQ(v.state, WorkloadState::kExited) << code;
    EXPECT_EQ(v.cause, protocol::kCauseExited) << code;
    EXPECT_EQ(v.reason, "");
  }
}

TEST(RunEnd, OomKilledIsTheContainersOwnMemoryLimit) {
  EngineEnd end;
  end.exit_code = 137;
  end.oom_killed = true;
  EndVerdict v = EndOf(end);
  EXPECT_EQ(v.state, WorkloadState::kFailed);
  EXPECT_EQ(v.cause, protocol::kCauseOomKilled);
  EXPECT_EQ(v.reason, "out of memory");
}

TEST(RunEnd, AContainerRemovedFromOutsideIsGoneEvenWithAnExitCode) {
  // `docker rm -f` kills first: the wait may still answer 137.
  EngineEnd killed_then_removed;
  killed_then_removed.exit_code = 137;
  killed_then_removed.gone = true;
  EndVerdict v = EndOf(killed_then_removed);
  EXPECT_EQ(v.state, WorkloadState::kFailed);
  EXPECT_EQ(v.cause, protocol::kCauseContainerGone);
  EXPECT_EQ(v.reason, "the container was removed outside the agent");
  // Gone before its exit code was read.
  EngineEnd vanished;
  EXPECT_EQ(EndOf(vanished).cause, protocol::kCauseContainerGone);
  // Removed while the kernel also killed it for memory: the removal is what ended it.
  killed_then_removed.oom_killed = true;
  EXPECT_EQ(EndOf(killed_then_removed).cause, protocol::kCauseContainerGone);
}

TEST(RunEnd, TheRunnersOwnStopsAndTimeoutsAreThemWhateverTheEngineSays) {
  EngineEnd timed_out;
  timed_out.timed_out = true;
  timed_out.exit_code = 137;
  timed_out.oom_killed = true;
  EndVerdict v = EndOf(timed_out);
  EXPECT_EQ(v.state, WorkloadState::kFailed);
  EXPECT_EQ(v.cause, protocol::kCauseTimeout);
  EXPECT_EQ(v.reason, "timeout");

  EngineEnd stopped;
  stopped.stopped = true;
  stopped.exit_code = 143;
  v = EndOf(stopped);
  EXPECT_EQ(v.state, WorkloadState::kStopped);
  EXPECT_EQ(v.cause, protocol::kCauseStopped);

  stopped.agent_shutdown = true;
  v = EndOf(stopped);
  EXPECT_EQ(v.state, WorkloadState::kStopped);
  EXPECT_EQ(v.cause, protocol::kCauseAgentShutdown);
}

TEST(ReadInspect, ReadsOomKilledAndARemovalFromTheEnginesAnswer) {
  auto inspect = [](const std::string& status, bool oom) -> StatusOr<json::object> {
    return json::object{
        {"Id", "c0ffee"},
        {"State", json::object{{"Status", status}, {"OOMKilled", oom}, {"ExitCode", 137}}}};
  };
  EngineEnd end;
  ReadInspect(inspect("exited", false), &end);
  EXPECT_FALSE(end.gone);
  EXPECT_FALSE(end.oom_killed);

  end = {};
  ReadInspect(inspect("exited", true), &end);
  EXPECT_TRUE(end.oom_killed);
  EXPECT_FALSE(end.gone);

  for (const char* being_removed : {"removing", "dead"}) {
    end = {};
    ReadInspect(inspect(being_removed, false), &end);
    EXPECT_TRUE(end.gone) << being_removed;
  }

  end = {};
  ReadInspect(NotFound("docker: No such container: c0ffee"), &end);
  EXPECT_TRUE(end.gone);

  // An engine that cannot answer tells nothing: the exit code stands.
  end = {};
  end.exit_code = 1;
  ReadInspect(Unavailable("docker: cannot reach the engine"), &end);
  EXPECT_FALSE(end.gone);
  EXPECT_FALSE(end.oom_killed);
  EXPECT_EQ(RunEnd(end).cause, protocol::kCauseExited);
}

TEST(PullFailureCause, TheRegistrySayingItHasNoSuchImageIsImageNotFound) {
  EXPECT_EQ(PullFailureCause(NotFound(
                "pulling gpunex-test/nothing:1: docker: pull access denied for "
                "gpunex-test/nothing, repository does not exist or may require 'docker login': "
                "denied: requested access to the resource is denied")),
            protocol::kCauseImageNotFound);
  EXPECT_EQ(PullFailureCause(NotFound("pulling 127.0.0.1:5000/x/y:1: docker: manifest for "
                                      "127.0.0.1:5000/x/y:1 not found: manifest unknown: "
                                      "manifest unknown")),
            protocol::kCauseImageNotFound);
  // A reference the engine refuses.
  EXPECT_EQ(PullFailureCause(InvalidArgument("image reference \"x:\" has a malformed tag")),
            protocol::kCauseImageNotFound);
}

TEST(PullFailureCause, TheRegistryRefusingAccessIsImageRefused) {
  EXPECT_EQ(PullFailureCause(PermissionDenied(
                "pulling reg.example/x:1: docker: unauthorized: authentication required")),
            protocol::kCauseImageRefused);
  EXPECT_EQ(PullFailureCause(Unavailable("pulling reg.example/x:1: docker: Head "
                                         "\"https://reg.example/v2/x/manifests/1\": "
                                         "unauthorized: incorrect username or password")),
            protocol::kCauseImageRefused);
  EXPECT_EQ(PullFailureCause(Unauthenticated("pulling reg.example/x:1: docker: denied")),
            protocol::kCauseImageRefused);
  // Rate limits are the registry's answer too, whoever's address it counts.
  EXPECT_EQ(PullFailureCause(Unavailable(
                "pulling library/busybox:latest: docker: toomanyrequests: You have reached your "
                "pull rate limit.")),
            protocol::kCauseImageRefused);
}

TEST(PullFailureCause, ARegistryNotReachedIsRegistryUnreachable) {
  for (const char* m : {
           "pulling 127.0.0.1:1/x:1: docker: Get \"http://127.0.0.1:1/v2/\": dial tcp "
           "127.0.0.1:1: connect: connection refused",
           "pulling registry.invalid/x:1: docker: Get \"https://registry.invalid/v2/\": dial "
           "tcp: lookup registry.invalid on 127.0.0.53:53: no such host",
           "pulling reg.example/x:1: docker: Get \"https://reg.example/v2/\": net/http: TLS "
           "handshake timeout",
           "pulling reg.example/x:1: docker: received unexpected HTTP status: 502 Bad Gateway",
           "pulling reg.example/x:1: docker: Get \"https://reg.example/v2/\": x509: certificate "
           "signed by unknown authority",
       }) {
    EXPECT_EQ(PullFailureCause(Unavailable(m)), protocol::kCauseRegistryUnreachable) << m;
  }
}

TEST(PullFailureCause, TheHostsOwnStorageFailingIsTheEngines) {
  for (const char* m : {
           "pulling pytorch/pytorch:2.3.0: docker: failed to register layer: Error processing "
           "tar file(exit status 1): write /opt/conda/lib/libx.so: no space left on device",
           "pulling x/y:1: docker: mkdir /var/lib/docker/tmp/x: read-only file system",
       }) {
    EXPECT_EQ(PullFailureCause(Unavailable(m)), protocol::kCauseEngineError) << m;
  }
}

TEST(StartFailureCause, TheEngineRefusingTheCommandIsBadCommand) {
  EXPECT_EQ(StartFailureCause(InvalidArgument(
                "docker: failed to create shim task: OCI runtime create failed: runc create "
                "failed: unable to start container process: exec: \"/no/such/program\": stat "
                "/no/such/program: no such file or directory: unknown")),
            protocol::kCauseBadCommand);
  EXPECT_EQ(StartFailureCause(Internal(
                "docker: failed to create shim task: OCI runtime create failed: "
                "nvidia-container-cli: initialization error: nvml error: driver not loaded "
                "(HTTP 500)")),
            protocol::kCauseEngineError);
  EXPECT_EQ(StartFailureCause(Unavailable("docker: cannot reach the engine")),
            protocol::kCauseEngineError);
}

}  // namespace
}  // namespace gpunex::agent
