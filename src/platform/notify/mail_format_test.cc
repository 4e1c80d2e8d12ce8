#include "platform/notify/internal/mail_format.h"

#include <gtest/gtest.h>

#include "common/time.h"

namespace gpunex::platform::notify::internal {
namespace {

MessageParts Parts() {
  return {.from = "GPUnex <noreply@gpunex.example>",
          .to = "alice@example.com",
          .subject = "Your application was approved",
          .body = "Hello Alice,\nwelcome.\n",
          .message_id = "<eml_01ABC@gpunex.example>",
          .date = *ParseRfc3339("2026-11-29T16:00:00Z")};
}

TEST(MailFormat, ParsesMailboxes) {
  auto bare = ParseMailbox("alice@example.com", "to");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->address, "alice@example.com");
  EXPECT_EQ(bare->display_name, "");

  auto named = ParseMailbox("  \"Doe, Jane\" <jane.doe+x@mail.example.org> ", "to");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->address, "jane.doe+x@mail.example.org");
  EXPECT_EQ(named->display_name, "Doe, Jane");
  EXPECT_EQ(FormatMailbox(*named), "\"Doe, Jane\" <jane.doe+x@mail.example.org>");

  for (const char* bad :
       {"", "alice", "alice@", "@example.com", "a b@example.com", "a..b@example.com",
        "alice@exa_mple.com", "alice@-x.com", "a@b.com, c@d.com", "Name <a@b.com",
        "x@y.z\r\nBcc: e@vil.com", "x@y.z\nBcc: e@vil.com", "x@y.z\r"}) {
    auto m = ParseMailbox(bad, "to");
    EXPECT_FALSE(m.ok()) << bad;
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(MailFormat, EncodesNonAsciiDisplayName) {
  std::string s = FormatMailbox({.display_name = "Zoë", .address = "zoe@example.com"});
  EXPECT_EQ(s, "=?UTF-8?B?Wm/Dqw==?= <zoe@example.com>");
}

TEST(MailFormat, SubjectPlainWhenShortAscii) {
  EXPECT_EQ(EncodeUnstructured("Hello there", 7), "Hello there");
}

TEST(MailFormat, SubjectEncodedWhenNonAsciiWithoutSplittingCharacters) {
  // 20 two-byte characters: 40 bytes, one more than a word holds.
  std::string subject;
  for (int i = 0; i < 20; ++i) subject += "é";
  std::string enc = EncodeUnstructured(subject, 7);
  // Two words, folded; the first holds 19 characters (38 bytes), not 39 bytes.
  EXPECT_EQ(enc, "=?UTF-8?B?" +
                     std::string("w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6k=") +
                     "?=\r\n =?UTF-8?B?w6k=?=");
}

TEST(MailFormat, LongAsciiSubjectFitsLines) {
  std::string subject(200, 'x');
  std::string enc = EncodeUnstructured(subject, 7);
  size_t start = 0;
  bool first = true;
  while (start < enc.size()) {
    size_t end = enc.find("\r\n", start);
    if (end == std::string::npos) end = enc.size();
    EXPECT_LE(end - start + (first ? 9 : 0), 78u);
    first = false;
    start = end + 2;
  }
}

TEST(MailFormat, FormatsRfc5322Date) {
  EXPECT_EQ(FormatRfc5322Date(*ParseRfc3339("2026-11-29T16:00:00Z")),
            "Sun, 29 Nov 2026 16:00:00 +0000");
  EXPECT_EQ(FormatRfc5322Date(FromUnixMicros(0)), "Thu, 01 Jan 1970 00:00:00 +0000");
}

TEST(MailFormat, NormalisesLineEnds) { EXPECT_EQ(ToCrlf("a\nb\r\nc\rd"), "a\r\nb\r\nc\r\nd"); }

TEST(MailFormat, QuotedPrintable) {
  EXPECT_EQ(QuotedPrintable("Grüße = 1 \r\nok\t"), "Gr=C3=BC=C3=9Fe =3D 1=20\r\nok=09");
  std::string long_line(200, 'a');
  std::string qp = QuotedPrintable(long_line);
  EXPECT_EQ(qp.substr(0, 77), std::string(75, 'a') + "=\r");
  size_t start = 0;
  while (start < qp.size()) {
    size_t end = qp.find("\r\n", start);
    if (end == std::string::npos) end = qp.size();
    EXPECT_LE(end - start, 76u);
    start = end + 2;
  }
}

TEST(MailFormat, AsciiMessageIs7Bit) {
  auto msg = FormatMessage(Parts());
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(*msg,
            "Date: Sun, 29 Nov 2026 16:00:00 +0000\r\nFrom: GPUnex <noreply@gpunex.example>\r\nTo: "
            "alice@example.com\r\nSubject: Your application was approved\r\nMessage-ID: "
            "<eml_01ABC@gpunex.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; "
            "charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\nAuto-Submitted: "
            "auto-generated\r\n\r\nHello Alice,\r\nwelcome.\r\n");
}

TEST(MailFormat, Utf8MessageIsQuotedPrintable) {
  MessageParts p = Parts();
  p.subject = "Votre candidature est approuvée ✓";
  p.body = "Bonjour Zoë";  // no final newline: one is added
  auto msg = FormatMessage(p);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_NE(msg->find("Subject: =?UTF-8?B?"), std::string::npos);
  EXPECT_NE(msg->find("Content-Transfer-Encoding: quoted-printable\r\n"), std::string::npos);
  EXPECT_TRUE(msg->ends_with("\r\n\r\nBonjour Zo=C3=AB\r\n")) << *msg;
}

TEST(MailFormat, RejectsHeaderInjection) {
  MessageParts p = Parts();
  p.subject = "Hi\r\nBcc: victim@example.com";
  EXPECT_EQ(FormatMessage(p).status().code(), StatusCode::kInvalidArgument);
  p = Parts();
  p.subject = "Hi\nBcc: victim@example.com";
  EXPECT_EQ(FormatMessage(p).status().code(), StatusCode::kInvalidArgument);
  p = Parts();
  p.to = "alice@example.com\r\nBcc: victim@example.com";
  EXPECT_EQ(FormatMessage(p).status().code(), StatusCode::kInvalidArgument);
  p = Parts();
  p.from = "x@y.z\nBcc: victim@example.com";
  EXPECT_EQ(FormatMessage(p).status().code(), StatusCode::kInvalidArgument);
  p = Parts();
  p.message_id = "<a@b>\r\nBcc: victim@example.com";
  EXPECT_EQ(FormatMessage(p).status().code(), StatusCode::kInvalidArgument);
}

TEST(MailFormat, RejectsInvalidUtf8Body) {
  MessageParts p = Parts();
  p.body = "bad \xff byte";
  EXPECT_EQ(FormatMessage(p).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpunex::platform::notify::internal
