// CurlSmtpClient against a real SMTP server (aiosmtpd, testdata/smtp_sink.py).
#include "platform/notify/smtp.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/time.h"
#include "platform/notify/test_util.h"

namespace gpunex::platform::notify {
namespace {

OutgoingEmail Message() {
  return {.from = "GPUnex <noreply@gpunex.example>",
          .to = "alice@example.com",
          .subject = "Ihre Anmeldung wurde bestätigt ✓",
          .body = "Hallo Zoë,\n.a line that starts with a dot\n..and two\n\nBye.\n",
          .message_id = "<eml_01TEST@gpunex.example>",
          .date = *ParseRfc3339("2026-11-29T16:00:00Z")};
}

class SmtpTest : public ::testing::Test {
 protected:
  CurlSmtpOptions FastOptions() {
    CurlSmtpOptions o;
    o.connect_timeout = std::chrono::seconds(5);
    o.total_timeout = std::chrono::seconds(20);
    return o;
  }

  test::TempDir dir_;
  test::SmtpSink sink_;
};

TEST_F(SmtpTest, DeliversWithHeadersAndUtf8) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  auto client = CurlSmtpClient(sink_.url(), FastOptions());
  Status st = client->Send(Message());
  ASSERT_TRUE(st.ok()) << st.ToString();

  std::vector<test::SinkMessage> got = sink_.Messages();
  ASSERT_EQ(got.size(), 1u);
  const test::SinkMessage& m = got[0];
  EXPECT_EQ(m.mail_from, "noreply@gpunex.example");
  EXPECT_EQ(m.rcpt_tos, std::vector<std::string>{"alice@example.com"});
  EXPECT_EQ(m.subject, Message().subject);
  EXPECT_EQ(m.message_id, "<eml_01TEST@gpunex.example>");
  // Dot-stuffing was undone by the server: lines starting with '.' arrive intact.
  EXPECT_EQ(m.body, Message().body);
  EXPECT_NE(m.raw.find("Date: Sun, 29 Nov 2026 16:00:00 +0000\r\n"), std::string::npos);
  EXPECT_NE(m.raw.find("From: GPUnex <noreply@gpunex.example>\r\n"), std::string::npos);
  EXPECT_NE(m.raw.find("To: alice@example.com\r\n"), std::string::npos);
  EXPECT_NE(m.raw.find("MIME-Version: 1.0\r\n"), std::string::npos);
  EXPECT_NE(m.raw.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(m.raw.find("Subject: =?UTF-8?B?"), std::string::npos);
  // Every line ends with CRLF.
  for (size_t i = 0; i < m.raw.size(); ++i) {
    if (m.raw[i] == '\n') {
      ASSERT_TRUE(i > 0 && m.raw[i - 1] == '\r') << "bare LF at " << i;
    }
  }
}

TEST_F(SmtpTest, RejectsHeaderInjectionWithoutSending) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  auto client = CurlSmtpClient(sink_.url(), FastOptions());
  OutgoingEmail e = Message();
  e.subject = "Hello\r\nBcc: victim@example.com";
  EXPECT_EQ(client->Send(e).code(), StatusCode::kInvalidArgument);
  e = Message();
  e.to = "alice@example.com\nBcc: victim@example.com";
  EXPECT_EQ(client->Send(e).code(), StatusCode::kInvalidArgument);
  e = Message();
  e.to = "alice@example.com>\r\nRCPT TO:<victim@example.com";
  EXPECT_EQ(client->Send(e).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(sink_.Messages().empty());
}

TEST_F(SmtpTest, ServerDownIsTransient) {
  auto client =
      CurlSmtpClient("smtp://127.0.0.1:" + std::to_string(test::FreePort()), FastOptions());
  Status st = client->Send(Message());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

TEST_F(SmtpTest, PermanentRefusalIsFailedPrecondition) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  auto client = CurlSmtpClient(sink_.url(), FastOptions());
  OutgoingEmail e = Message();
  e.to = "rejected@example.com";
  Status st = client->Send(e);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("550"), std::string::npos) << st.ToString();
}

TEST_F(SmtpTest, TemporaryRefusalIsTransient) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  auto client = CurlSmtpClient(sink_.url(), FastOptions());
  OutgoingEmail e = Message();
  e.to = "tempfail@example.com";
  Status st = client->Send(e);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("451"), std::string::npos) << st.ToString();
}

TEST_F(SmtpTest, RequireTlsFailsWithoutStarttls) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  CurlSmtpOptions o = FastOptions();
  o.require_tls = true;
  Status st = CurlSmtpClient(sink_.url(), o)->Send(Message());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_TRUE(sink_.Messages().empty());
}

TEST_F(SmtpTest, StarttlsWithVerifiedCertificate) {
  const std::string cert = dir_.path() + "/cert.pem";
  const std::string key = dir_.path() + "/key.pem";
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
      "subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl is not available";
  ASSERT_TRUE(sink_.Start(dir_.path(), 0, cert, key).ok());

  // Without TLS the server refuses MAIL (530): a configuration problem, retried.
  Status plain = CurlSmtpClient(sink_.url(), FastOptions())->Send(Message());
  EXPECT_EQ(plain.code(), StatusCode::kUnavailable) << plain.ToString();

  // TLS, but the certificate is not trusted: refused, retried.
  CurlSmtpOptions o = FastOptions();
  o.require_tls = true;
  Status untrusted = CurlSmtpClient(sink_.url(), o)->Send(Message());
  EXPECT_EQ(untrusted.code(), StatusCode::kUnavailable) << untrusted.ToString();
  EXPECT_TRUE(sink_.Messages().empty());

  o.ca_file = cert;
  Status st = CurlSmtpClient(sink_.url(), o)->Send(Message());
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(sink_.Messages().size(), 1u);
  EXPECT_EQ(sink_.Messages()[0].subject, Message().subject);
}

TEST(SmtpUrl, Validates) {
  for (const char* ok : {"smtp://localhost", "smtp://127.0.0.1:2525", "smtps://mail.example.com",
                         "smtp://user:p%40ss@mail.example.com:587/gpunex.example"}) {
    EXPECT_TRUE(ValidateSmtpUrl(ok).ok()) << ok;
  }
  for (const char* bad : {"", "localhost", "http://mail.example.com", "smtp://",
                          "smtp://mail.example.com/?x=1", "smtp://user:secret@"}) {
    Status st = ValidateSmtpUrl(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.message().find("secret"), std::string::npos);
  }
}

TEST(SmtpUrl, InvalidUrlIsTransientOnSend) {
  Status st = CurlSmtpClient("http://mail.example.com")->Send(Message());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

}  // namespace
}  // namespace gpunex::platform::notify
