// DockerEngineClient against a real, private dockerd (test_dockerd.h); the tests skip
// when the engine cannot start here.
#include "agent/runtime/docker_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "agent/runtime/test_dockerd.h"

namespace gpunex::agent {
namespace {

using ::testing::HasSubstr;
using testing::kBusyboxImage;
using testing::RunShell;

class DockerClientTest : public testing::DockerSuite<DockerClientTest> {
 protected:
  // A stopped container running `script` with sh, without network; its id.
  std::string Create(const std::string& name, const std::string& script) {
    json::object config{{"Image", kBusyboxImage},
                        {"Cmd", json::array{"sh", "-c", script}},
                        {"Labels", json::object{{"io.gpunex.test", "client"}}},
                        {"HostConfig", json::object{{"NetworkMode", "none"}, {"Init", true}}}};
    auto id = client_->CreateContainer(name, config);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : "";
  }

  static std::string Joined(const std::vector<LogFrame>& frames, LogFrame::Stream s) {
    std::string out;
    for (const auto& f : frames) {
      if (f.stream == s) out += f.data;
    }
    return out;
  }
};

TEST_F(DockerClientTest, VersionAndPing) {
  ASSERT_TRUE(client_->Ping().ok());
  auto v = client_->Version();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->version.empty());
  EXPECT_FALSE(v->api_version.empty());
  EXPECT_EQ(v->os, "linux");
  EXPECT_FALSE(v->arch.empty());
}

TEST_F(DockerClientTest, RunsAContainerAndDemultiplexesItsLogs) {
  std::string id = Create("client-run", "echo out; echo err >&2; echo out2; exit 3");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(client_->StartContainer(id).ok());
  auto code = client_->WaitContainer(id, 30);
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 3);

  auto logs = client_->Logs(id, 0, -1);
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_EQ(Joined(*logs, LogFrame::Stream::kStdout), "out\nout2\n");
  EXPECT_EQ(Joined(*logs, LogFrame::Stream::kStderr), "err\n");

  auto info = client_->InspectContainer(id);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->at("Name"), "/client-run");
  EXPECT_EQ(info->at("Config").at("Labels").at("io.gpunex.test"), "client");

  auto list = client_->ListContainers("io.gpunex.test=client");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, id);
  EXPECT_EQ((*list)[0].name, "client-run");
  EXPECT_EQ((*list)[0].labels.at("io.gpunex.test"), "client");
  auto none = client_->ListContainers("io.gpunex.test=nothing");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  ASSERT_TRUE(client_->RemoveContainer(id, true, true).ok());
  EXPECT_EQ(client_->InspectContainer(id).status().code(), StatusCode::kNotFound);
  Status again = client_->RemoveContainer(id, true, true);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_THAT(again.message(), HasSubstr("docker: "));
}

TEST_F(DockerClientTest, LogsSinceAndTail) {
  std::string id = Create("client-tail", "echo a; echo b; echo c");
  ASSERT_TRUE(client_->StartContainer(id).ok());
  ASSERT_TRUE(client_->WaitContainer(id, 30).ok());
  auto tail = client_->Logs(id, 0, 1);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(Joined(*tail, LogFrame::Stream::kStdout), "c\n");
  auto future = client_->Logs(id, ToUnixMicros(SystemClock().Now() + kOneHour), -1);
  ASSERT_TRUE(future.ok());
  EXPECT_TRUE(future->empty());
  EXPECT_TRUE(client_->RemoveContainer(id, true, true).ok());
}

TEST_F(DockerClientTest, FollowLogsStreamsUntilTheContainerExits) {
  // 200 KB on stdout in pieces, with a pause, and a line on stderr.
  std::string id = Create("client-follow",
                          "i=0; while [ $i -lt 2000 ]; do printf '%0100d' $i; i=$((i+1)); done; "
                          "sleep 1; echo done >&2");
  ASSERT_TRUE(client_->StartContainer(id).ok());
  std::string out, err;
  int polls = 0;
  Status st = client_->FollowLogs(
      id, [&](const LogFrame& f) { (f.stream == LogFrame::Stream::kStdout ? out : err) += f.data; },
      [&] {
        ++polls;
        return true;
      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out.size(), 200'000u);
  EXPECT_EQ(out.substr(0, 100), std::string(100, '0'));
  EXPECT_EQ(err, "done\n");
  EXPECT_GE(polls, 1);
  EXPECT_TRUE(client_->RemoveContainer(id, true, true).ok());
}

TEST_F(DockerClientTest, FollowLogsDeliversEveryLineOnce) {
  // More lines than the catch-up window, written as fast as possible, the last one
  // unterminated.
  std::string id = Create("client-lines", "seq 1 3000; printf tail");
  ASSERT_TRUE(client_->StartContainer(id).ok());
  std::string out;
  Status st = client_->FollowLogs(
      id, [&](const LogFrame& f) { out += f.data; }, nullptr);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::string want;
  for (int i = 1; i <= 3000; ++i) want += std::to_string(i) + "\n";
  want += "tail";
  EXPECT_EQ(out.size(), want.size());
  EXPECT_TRUE(out == want);
  EXPECT_TRUE(client_->RemoveContainer(id, true, true).ok());
}

TEST_F(DockerClientTest, FollowLogsClosesWhenAsked) {
  std::string id = Create("client-follow-close", "echo started; sleep 60");
  ASSERT_TRUE(client_->StartContainer(id).ok());
  auto start = std::chrono::steady_clock::now();
  std::string out;
  Status st = client_->FollowLogs(
      id, [&](const LogFrame& f) { out += f.data; }, [&] { return out.empty(); });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_TRUE(client_->RemoveContainer(id, true, true).ok());
}

TEST_F(DockerClientTest, WaitTimesOutAndStopEndsTheContainer) {
  std::string id = Create("client-stop", "sleep 60");
  ASSERT_TRUE(client_->StartContainer(id).ok());
  auto start = std::chrono::steady_clock::now();
  auto code = client_->WaitContainer(id, 1);
  EXPECT_EQ(code.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(code.status().message(), HasSubstr("timed out"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(client_->StopContainer(id, 1).ok());
  ASSERT_TRUE(client_->StopContainer(id, 1).ok());  // already stopped: still OK
  code = client_->WaitContainer(id, 30);
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_NE(*code, 0);
  EXPECT_TRUE(client_->RemoveContainer(id, false, true).ok());
}

TEST_F(DockerClientTest, MapsEngineErrors) {
  std::string id = Create("client-dup", "true");
  auto dup = client_->CreateContainer(
      "client-dup", json::object{{"Image", kBusyboxImage}, {"Cmd", json::array{"true"}}});
  EXPECT_EQ(dup.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(dup.status().message(), HasSubstr("client-dup"));
  EXPECT_TRUE(client_->RemoveContainer(id, true, true).ok());

  EXPECT_EQ(client_->StartContainer("no-such-container").code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->WaitContainer("no-such-container", 5).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->Logs("no-such-container", 0, -1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->StopContainer("no-such-container", 1).code(), StatusCode::kNotFound);
  auto missing = client_->CreateContainer("client-missing-image",
                                          json::object{{"Image", "gpunex-test/missing:1"}});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto bad = client_->CreateContainer(
      "client-bad", json::object{{"Image", kBusyboxImage},
                                 {"HostConfig", json::object{{"NetworkMode", "no-such-net"}}}});
  EXPECT_FALSE(bad.ok());
  (void)client_->RemoveContainer("client-bad", true, true);
}

TEST_F(DockerClientTest, ImageExistsAndPullErrors) {
  auto yes = client_->ImageExists(kBusyboxImage);
  ASSERT_TRUE(yes.ok()) << yes.status().ToString();
  EXPECT_TRUE(*yes);
  auto no = client_->ImageExists("gpunex-test/missing:1");
  ASSERT_TRUE(no.ok()) << no.status().ToString();
  EXPECT_FALSE(*no);
  EXPECT_EQ(client_->ImageExists("Not A Ref").status().code(), StatusCode::kInvalidArgument);

  // A registry nobody listens on: the engine's own error, named.
  std::vector<std::string> progress;
  Status st = client_->PullImage("127.0.0.1:1/gpunex/nope:1",
                                 protocol::RegistryCredentials{"user", "secret"},
                                 [&](const std::string& p) { progress.push_back(p); });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:1"));
  EXPECT_THAT(st.message(), HasSubstr("pulling 127.0.0.1:1/gpunex/nope:1"));

  EXPECT_EQ(client_->PullImage("bad ref", std::nullopt, nullptr).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(DockerClientTest, LoadsAnImageFromASavedTar) {
  const std::string tar = engine_->dir() + "/saved.tar";
  const std::string ref = "gpunex-test/saved:1";
  std::string out;
  ASSERT_EQ(engine_->Cli(std::string("tag ") + kBusyboxImage + " " + ref, &out), 0) << out;
  ASSERT_EQ(engine_->Cli("save -o " + tar + " " + ref, &out), 0) << out;
  ASSERT_EQ(engine_->Cli("rmi " + ref, &out), 0) << out;
  ASSERT_FALSE(*client_->ImageExists(ref));

  Status st = client_->LoadImage(tar);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(*client_->ImageExists(ref));

  EXPECT_EQ(client_->LoadImage(engine_->dir() + "/missing.tar").code(), StatusCode::kNotFound);
  const std::string junk = engine_->dir() + "/junk.tar";
  std::ofstream(junk) << "this is not a tar file";
  Status bad = client_->LoadImage(junk);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("junk.tar"));
}

TEST_F(DockerClientTest, ImportsARootFileSystemTar) {
  // A root file system of one file, made by tar from a folder.
  const std::string root = engine_->dir() + "/import-root";
  const std::string tar = engine_->dir() + "/import.tar";
  std::string out;
  ASSERT_EQ(RunShell("mkdir -p " + root + "/etc && echo imported >" + root +
                         "/etc/marker && tar -C " + root + " -cf " + tar + " .",
                     &out),
            0)
      << out;
  const std::string ref = "gpunex-test/imported:1";
  ASSERT_FALSE(*client_->ImageExists(ref));
  Status st = client_->ImportImage(tar, ref);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(*client_->ImageExists(ref));
  // The file is in the image: a container of busybox cannot see it, so copy it out.
  ASSERT_EQ(engine_->Cli("create --name import-check " + ref + " /nothing", &out), 0) << out;
  ASSERT_EQ(engine_->Cli("cp import-check:/etc/marker " + engine_->dir() + "/marker", &out), 0)
      << out;
  std::string marker;
  std::getline(std::ifstream(engine_->dir() + "/marker"), marker);
  EXPECT_EQ(marker, "imported");
  (void)client_->RemoveContainer("import-check", true, true);

  EXPECT_EQ(client_->ImportImage(engine_->dir() + "/missing.tar", "gpunex-test/x:1").code(),
            StatusCode::kNotFound);
  EXPECT_EQ(client_->ImportImage(tar, "Not A Ref").code(), StatusCode::kInvalidArgument);
  const std::string junk = engine_->dir() + "/junk-import.tar";
  std::ofstream(junk) << "this is not a tar file";
  Status bad = client_->ImportImage(junk, "gpunex-test/junk:1");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("gpunex-test/junk:1"));
}

TEST_F(DockerClientTest, VolumesAndNetworks) {
  std::map<std::string, std::string> labels{{"io.gpunex.test", "vol"}};
  ASSERT_TRUE(client_->CreateVolume("client-vol", labels, {}).ok());
  auto vols = client_->ListVolumes("io.gpunex.test=vol");
  ASSERT_TRUE(vols.ok()) << vols.status().ToString();
  EXPECT_EQ(*vols, std::vector<std::string>{"client-vol"});
  ASSERT_TRUE(client_->RemoveVolume("client-vol").ok());
  EXPECT_EQ(client_->RemoveVolume("client-vol").code(), StatusCode::kNotFound);
  vols = client_->ListVolumes("io.gpunex.test=vol");
  ASSERT_TRUE(vols.ok());
  EXPECT_TRUE(vols->empty());

  // A size-limited tmpfs volume, which every local driver supports.
  ASSERT_TRUE(client_
                  ->CreateVolume("client-tmpfs", labels,
                                 {{"type", "tmpfs"}, {"device", "tmpfs"}, {"o", "size=8m"}})
                  .ok());
  EXPECT_TRUE(client_->RemoveVolume("client-tmpfs").ok());

  auto net = client_->CreateNetwork("client-net", {{"io.gpunex.test", "net"}}, false,
                                    {{"com.docker.network.bridge.name", "gpxtest0"}});
  ASSERT_TRUE(net.ok()) << net.status().ToString();
  EXPECT_FALSE(net->empty());
  std::string bridge;
  ASSERT_EQ(engine_->Cli("network inspect -f "
                         "'{{index .Options \"com.docker.network.bridge.name\"}}' client-net",
                         &bridge),
            0)
      << bridge;
  EXPECT_EQ(bridge, "gpxtest0\n") << "the driver options reach the engine";
  EXPECT_EQ(client_->CreateNetwork("client-net", {}, false, {}).status().code(),
            StatusCode::kFailedPrecondition);
  auto nets = client_->ListNetworks("io.gpunex.test=net");
  ASSERT_TRUE(nets.ok()) << nets.status().ToString();
  EXPECT_EQ(*nets, std::vector<std::string>{"client-net"});
  ASSERT_TRUE(client_->RemoveNetwork("client-net").ok());
  EXPECT_EQ(client_->RemoveNetwork("client-net").code(), StatusCode::kNotFound);
}

TEST(DockerClientUnavailable, SaysWhyTheSocketCannotBeUsed) {
  auto missing = DockerEngineClient("/nonexistent/gpunex/docker.sock");
  Status st = missing->Ping();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent/gpunex/docker.sock"));
  EXPECT_THAT(st.message(), HasSubstr("does not exist"));
  EXPECT_EQ(missing->Version().status().code(), StatusCode::kUnavailable);

  auto not_socket = DockerEngineClient("/etc/hostname");
  EXPECT_THAT(not_socket->Ping().message(), HasSubstr("not a socket"));

  // A socket file nobody listens on: connection refused.
  char dir[] = "/tmp/gpunex-sock.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/docker.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  auto refused = DockerEngineClient(path);
  st = refused->Ping();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_THAT(st.message(), HasSubstr("cannot connect to the Docker engine at " + path));
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace gpunex::agent
