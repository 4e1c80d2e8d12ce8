#include <gtest/gtest.h>
#include <libssh/libssh.h>

#include <chrono>
#include <memory>
#include <thread>

#include "platform/sshgate/gateway.h"
#include "platform/sshgate/host_key.h"
#include "platform/sshgate/sshgate_module.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::sshgate {
namespace {

TEST(SshCommandsTest, ShellsAndCommandsRunAsSshdRunsThem) {
  EXPECT_EQ(ExecCommand("echo hi; exit 3", std::nullopt),
            (std::vector<std::string>{"/bin/sh", "-c", "echo hi; exit 3"}));
  EXPECT_EQ(ExecCommand("stty size", Pty{"xterm-256color", 100, 30}),
            (std::vector<std::string>{
                "/bin/sh", "-c",
                "export TERM=xterm-256color; stty rows 30 cols 100 2>/dev/null; stty size"}));
  // A TERM that is no plain name is left out, never pasted into the command.
  EXPECT_EQ(ExecCommand("true", Pty{"x; rm -rf /", 80, 24}),
            (std::vector<std::string>{"/bin/sh", "-c", "stty rows 24 cols 80 2>/dev/null; true"}));
  EXPECT_EQ(ShellCommand(std::nullopt)[2],
            "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi");
  EXPECT_TRUE(ShellCommand(Pty{"vt100", 80, 24})[2].starts_with("export TERM=vt100; stty"));
  const std::string sftp = SftpCommand()[2];
  EXPECT_NE(sftp.find("/usr/lib/openssh/sftp-server"), std::string::npos);
  EXPECT_NE(sftp.find("exit 127"), std::string::npos);
}

TEST(SshCommandsTest, ForwardsReachOnlyTheRentalItself) {
  for (const char* host : {"localhost", "127.0.0.1", "::1"}) EXPECT_TRUE(IsRentalHost(host));
  for (const char* host : {"", "10.0.0.1", "example.com", "localhost.", "169.254.169.254"}) {
    EXPECT_FALSE(IsRentalHost(host)) << host;
  }
}

TEST(SshEndpointTest, TheAddressCustomersTypeComesFromTheConfigOrThePublicUrl) {
  auto e = EndpointOf("", "https://gpu.example.com:8443/", 2222, {});
  EXPECT_EQ(e.host, "gpu.example.com");
  EXPECT_EQ(e.port, 2222);
  e = EndpointOf("", "http://[2001:db8::1]:8080", 2222, {});
  EXPECT_EQ(e.host, "[2001:db8::1]");
  e = EndpointOf("ssh.example.com:22", "http://localhost:8080", 2222, {});
  EXPECT_EQ(e.host, "ssh.example.com");
  EXPECT_EQ(e.port, 22);
  e = EndpointOf("ssh.example.com", "http://localhost:8080", 2222, {});
  EXPECT_EQ(e.host, "ssh.example.com");
  EXPECT_EQ(e.port, 2222);
  e = EndpointOf("", "http://0.0.0.0:8080", 2222, {});
  EXPECT_EQ(e.host, "localhost");
}

class SshGateTest : public testing::PlatformTest {};

TEST_P(SshGateTest, TheHostKeyIsMadeOnceAndKept) {
  if (IsSkipped()) return;
  auto first = LoadOrCreateHostKey(db(), clock_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->public_key.starts_with("ssh-ed25519 ")) << first->public_key;
  EXPECT_TRUE(first->fingerprint.starts_with("SHA256:")) << first->fingerprint;
  EXPECT_EQ(first->fingerprint.size(), 7u + 43u);  // 32 bytes in unpadded base64
  auto again = LoadOrCreateHostKey(db(), clock_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->private_key, first->private_key);
  EXPECT_EQ(again->fingerprint, first->fingerprint);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ssh_host_key"), 1);
  EXPECT_EQ(HostKeyOf("not a key").status().code(), StatusCode::kInvalidArgument);
}

// A libssh client's attempt: whether it connected, and the host key it was shown.
struct Attempt {
  bool connected = false;
  std::string host_key;
  int auth = SSH_AUTH_ERROR;
};

Attempt SignIn(uint16_t port, const std::string& user) {
  Attempt out;
  ssh_session s = ssh_new();
  unsigned int p = port;
  long timeout = 10;
  ssh_options_set(s, SSH_OPTIONS_HOST, "127.0.0.1");
  ssh_options_set(s, SSH_OPTIONS_PORT, &p);
  ssh_options_set(s, SSH_OPTIONS_USER, user.c_str());
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
  if (ssh_connect(s) == SSH_OK) {
    out.connected = true;
    ssh_key server = nullptr;
    char* b64 = nullptr;
    if (ssh_get_server_publickey(s, &server) == SSH_OK &&
        ssh_pki_export_pubkey_base64(server, &b64) == SSH_OK) {
      out.host_key = std::string(ssh_key_type_to_char(ssh_key_type(server))) + " " + b64;
      ssh_string_free_char(b64);
    }
    ssh_key_free(server);
    ssh_key mine = nullptr;
    ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &mine);
    out.auth = ssh_userauth_publickey(s, nullptr, mine);
    ssh_key_free(mine);
    ssh_disconnect(s);
  }
  ssh_free(s);
  return out;
}

TEST_P(SshGateTest, ShowsItsHostKeyRefusesUnknownKeysAndThenTheAddress) {
  if (IsSkipped()) return;
  auto key = LoadOrCreateHostKey(db(), clock_);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  relay::Relay relay;
  SshGatewayOptions o{.listen = "127.0.0.1:0", .max_failures_per_address = 2};
  auto gateway = SshGateway::Create(o, *key, db(), relay);
  ASSERT_TRUE(gateway.ok()) << gateway.status().ToString();
  (*gateway)->Start();
  const uint16_t port = (*gateway)->port();
  ASSERT_NE(port, 0);

  for (int i = 1; i <= 2; ++i) {
    // A key on no account, for a rental that does not exist: denied, like any other.
    Attempt a = SignIn(port, "rnt_00000000000000000000000000");
    EXPECT_TRUE(a.connected);
    EXPECT_EQ(a.host_key, key->public_key);
    EXPECT_EQ(a.auth, SSH_AUTH_DENIED);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((*gateway)->Figures().failed_sign_ins < i &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ((*gateway)->Figures().failed_sign_ins, i);
  }
  // Two failures from 127.0.0.1: the next connection is closed before the key exchange.
  Attempt refused = SignIn(port, "rnt_00000000000000000000000000");
  EXPECT_FALSE(refused.connected && refused.auth == SSH_AUTH_DENIED);
  EXPECT_EQ((*gateway)->Figures().refused, 1);
  EXPECT_EQ((*gateway)->Figures().signed_in, 0);
}

TEST_P(SshGateTest, AnAddressThatCannotBeBoundIsReported) {
  if (IsSkipped()) return;
  auto key = LoadOrCreateHostKey(db(), clock_);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  relay::Relay relay;
  auto bad = SshGateway::Create({.listen = "no-port"}, *key, db(), relay);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().fields().contains("access.ssh_listen")) << bad.status().ToString();
  auto first = SshGateway::Create({.listen = "127.0.0.1:0"}, *key, db(), relay);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto taken = SshGateway::Create({.listen = "127.0.0.1:" + std::to_string((*first)->port())}, *key,
                                  db(), relay);
  EXPECT_EQ(taken.status().code(), StatusCode::kUnavailable) << taken.status().ToString();
}

GPUNEX_INSTANTIATE_BACKENDS(SshGateTest);

}  // namespace
}  // namespace gpunex::platform::sshgate
