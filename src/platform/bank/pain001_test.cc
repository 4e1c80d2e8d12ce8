#include "platform/bank/pain001.h"

#include <gtest/gtest.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace gpunex::platform::bank {
namespace {

using std::chrono::day;
using std::chrono::month;
using std::chrono::year;

Pain001 ThreeLines() {
  Pain001 f;
  f.message_id = "gpx-2026-12-07-0001";
  f.created_at = *ParseRfc3339("2026-12-07T08:30:15.250Z");
  f.initiating_party = "gpunex Operations GmbH";
  f.debtor.name = "gpunex Operations GmbH";
  f.debtor.iban = "DE89 3704 0044 0532 0130 00";
  f.debtor.bic = "COBADEFFXXX";
  f.execution_date = year(2026) / month(12) / day(8);
  f.lines = {
      {"pay-01JEXAMPLE0000000000000A", "Ren\xC3\xA9 M\xC3\xBCller", "FR1420041010050500013M02606",
       std::nullopt, 123450, "gpunex payout pay_01JEXAMPLE0000000000000A"},
      {"pay-01JEXAMPLE0000000000000B", "Zo\xC3\xAB \xC3\x98rsted", "NL91ABNA0417164300", "ABNANL2A",
       5, "earnings 2026-11"},
      {"pay-01JEXAMPLE0000000000000C", "Gro\xC3\x9F & S\xC3\xB6hne GmbH",
       "IT60X0542811101000000123456", std::nullopt, 99999999999, ""},
  };
  return f;
}

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};

// Reads the file back with libxml2 and evaluates XPath over it, prefix p for the
// pain.001.001.09 namespace.
class Reader {
 public:
  explicit Reader(const std::string& xml)
      : doc_(xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "t.xml", nullptr,
                           XML_PARSE_NONET)) {}
  bool ok() const { return doc_ != nullptr; }
  std::string String(const std::string& xpath) const { return Eval("string(" + xpath + ")"); }
  double Count(const std::string& xpath) const { return std::stod(Eval("count(" + xpath + ")")); }

 private:
  std::string Eval(const std::string& expr) const {
    xmlXPathContext* ctx = xmlXPathNewContext(doc_.get());
    xmlXPathRegisterNs(ctx, reinterpret_cast<const xmlChar*>("p"),
                       reinterpret_cast<const xmlChar*>(std::string(kPain001Namespace).c_str()));
    xmlXPathObject* obj =
        xmlXPathEvalExpression(reinterpret_cast<const xmlChar*>(expr.c_str()), ctx);
    std::string out;
    if (obj) {
      xmlChar* s = xmlXPathCastToString(obj);
      out = reinterpret_cast<const char*>(s);
      xmlFree(s);
      xmlXPathFreeObject(obj);
    }
    xmlXPathFreeContext(ctx);
    return out;
  }
  std::unique_ptr<xmlDoc, DocFree> doc_;
};

TEST(Pain001, WritesAValidFileWithTheRightCountsAndSums) {
  auto xml = WritePain001(ThreeLines());
  ASSERT_TRUE(xml.ok()) << xml.status().ToString();
  EXPECT_TRUE(ValidatePain001(*xml).ok());
  Reader r(*xml);
  ASSERT_TRUE(r.ok());
  const std::string hdr = "/p:Document/p:CstmrCdtTrfInitn/p:GrpHdr/";
  const std::string pmt = "/p:Document/p:CstmrCdtTrfInitn/p:PmtInf/";
  EXPECT_EQ(r.String(hdr + "p:MsgId"), "gpx-2026-12-07-0001");
  EXPECT_EQ(r.String(hdr + "p:CreDtTm"), "2026-12-07T08:30:15+00:00");
  EXPECT_EQ(r.String(hdr + "p:NbOfTxs"), "3");
  // 1234.50 + 0.05 + 999999999.99
  EXPECT_EQ(r.String(hdr + "p:CtrlSum"), "1000001234.54");
  EXPECT_EQ(r.String(hdr + "p:InitgPty/p:Nm"), "gpunex Operations GmbH");
  EXPECT_EQ(r.Count("//p:PmtInf"), 1);
  EXPECT_EQ(r.String(pmt + "p:PmtInfId"), "gpx-2026-12-07-0001");
  EXPECT_EQ(r.String(pmt + "p:PmtMtd"), "TRF");
  EXPECT_EQ(r.String(pmt + "p:NbOfTxs"), "3");
  EXPECT_EQ(r.String(pmt + "p:CtrlSum"), "1000001234.54");
  EXPECT_EQ(r.String(pmt + "p:PmtTpInf/p:SvcLvl/p:Cd"), "SEPA");
  EXPECT_EQ(r.String(pmt + "p:ReqdExctnDt/p:Dt"), "2026-12-08");
  EXPECT_EQ(r.String(pmt + "p:DbtrAcct/p:Id/p:IBAN"), "DE89370400440532013000");
  EXPECT_EQ(r.String(pmt + "p:DbtrAgt/p:FinInstnId/p:BICFI"), "COBADEFFXXX");
  EXPECT_EQ(r.String(pmt + "p:ChrgBr"), "SLEV");
  EXPECT_EQ(r.Count(pmt + "p:CdtTrfTxInf"), 3);
  const std::string tx1 = pmt + "p:CdtTrfTxInf[1]/";
  EXPECT_EQ(r.String(tx1 + "p:PmtId/p:EndToEndId"), "pay-01JEXAMPLE0000000000000A");
  EXPECT_EQ(r.String(tx1 + "p:Amt/p:InstdAmt"), "1234.50");
  EXPECT_EQ(r.String(tx1 + "p:Amt/p:InstdAmt/@Ccy"), "EUR");
  EXPECT_EQ(r.Count(tx1 + "p:CdtrAgt"), 0);  // no BIC given
  EXPECT_EQ(r.String(tx1 + "p:Cdtr/p:Nm"), "Rene Muller");
  EXPECT_EQ(r.String(tx1 + "p:CdtrAcct/p:Id/p:IBAN"), "FR1420041010050500013M02606");
  EXPECT_EQ(r.String(tx1 + "p:RmtInf/p:Ustrd"), "gpunex payout pay.01JEXAMPLE0000000000000A");
  const std::string tx2 = pmt + "p:CdtTrfTxInf[2]/";
  EXPECT_EQ(r.String(tx2 + "p:Amt/p:InstdAmt"), "0.05");
  EXPECT_EQ(r.String(tx2 + "p:CdtrAgt/p:FinInstnId/p:BICFI"), "ABNANL2A");
  EXPECT_EQ(r.String(tx2 + "p:Cdtr/p:Nm"), "Zoe Orsted");
  const std::string tx3 = pmt + "p:CdtTrfTxInf[3]/";
  EXPECT_EQ(r.String(tx3 + "p:Amt/p:InstdAmt"), "999999999.99");
  EXPECT_EQ(r.String(tx3 + "p:Cdtr/p:Nm"), "Gross . Sohne GmbH");
  EXPECT_EQ(r.Count(tx3 + "p:RmtInf"), 0);
  // Only the basic Latin set and markup.
  for (unsigned char c : *xml) EXPECT_LT(c, 0x80);
}

TEST(Pain001, UsesNotprovidedWithoutADebtorBic) {
  Pain001 f = ThreeLines();
  f.debtor.bic.reset();
  auto xml = WritePain001(f);
  ASSERT_TRUE(xml.ok()) << xml.status().ToString();
  Reader r(*xml);
  EXPECT_EQ(r.String("//p:DbtrAgt/p:FinInstnId/p:Othr/p:Id"), "NOTPROVIDED");
  EXPECT_EQ(r.Count("//p:DbtrAgt/p:FinInstnId/p:BICFI"), 0);
}

TEST(Pain001, CutsNamesAndRemittanceToTheEpcLengths) {
  Pain001 f = ThreeLines();
  f.lines[0].creditor_name = std::string(100, 'n');
  f.lines[0].remittance = std::string(300, 'r');
  auto xml = WritePain001(f);
  ASSERT_TRUE(xml.ok()) << xml.status().ToString();
  Reader r(*xml);
  EXPECT_EQ(r.String("//p:CdtTrfTxInf[1]/p:Cdtr/p:Nm"), std::string(70, 'n'));
  EXPECT_EQ(r.String("//p:CdtTrfTxInf[1]/p:RmtInf/p:Ustrd"), std::string(140, 'r'));
}

TEST(Pain001, RejectsATamperedDocument) {
  auto xml = WritePain001(ThreeLines());
  ASSERT_TRUE(xml.ok());
  const auto tampered = [&](const std::string& from, const std::string& to) {
    std::string t = *xml;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return ValidatePain001(t);
  };
  Status st = tampered("<PmtMtd>TRF</PmtMtd>", "<PmtMtd>XXX</PmtMtd>");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("PmtMtd"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("line "), std::string::npos) << st.message();
  EXPECT_FALSE(tampered(">1234.50<", ">12.345678<").ok());  // more than 5 decimals
  EXPECT_FALSE(tampered("<PmtMtd>TRF</PmtMtd>", "").ok());  // mandatory
  EXPECT_TRUE(tampered("<ChrgBr>SLEV</ChrgBr>", "").ok());  // optional in the schema
  EXPECT_FALSE(tampered("<EndToEndId>pay-01JEXAMPLE0000000000000A</EndToEndId>", "").ok());
  EXPECT_FALSE(tampered("FR1420041010050500013M02606", "fr14").ok());
  EXPECT_FALSE(tampered("</CstmrCdtTrfInitn>", "").ok());     // not well-formed
  EXPECT_TRUE(tampered("Rene Muller", "Rene Mueller").ok());  // still valid
}

TEST(Pain001, ValidationRefusesDtdsAndGarbage) {
  EXPECT_EQ(ValidatePain001("").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidatePain001("not xml").code(), StatusCode::kInvalidArgument);
  Status st = ValidatePain001(
      "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY a \"aaaa\">]><Document "
      "xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.001.001.09\"/>");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("document type"), std::string::npos) << st.message();
  st = ValidatePain001("<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.001.001.03\"/>");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

std::string BadField(const StatusOr<std::string>& s) {
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  return s.status().fields().empty() ? s.status().message() : s.status().fields().begin()->first;
}

TEST(Pain001, RejectsBadInputNamingTheField) {
  Pain001 f = ThreeLines();
  f.lines.clear();
  EXPECT_EQ(BadField(WritePain001(f)), "lines");

  f = ThreeLines();
  f.lines[1].amount_cents = 0;
  EXPECT_EQ(BadField(WritePain001(f)), "lines[1].amount_cents");
  f.lines[1].amount_cents = -5;
  EXPECT_EQ(BadField(WritePain001(f)), "lines[1].amount_cents");
  f.lines[1].amount_cents = kMaxSepaAmountCents + 1;
  EXPECT_EQ(BadField(WritePain001(f)), "lines[1].amount_cents");

  f = ThreeLines();
  f.lines[2].iban = "DE88370400440532013000";
  auto bad = WritePain001(f);
  EXPECT_EQ(BadField(bad), "lines[2].iban");
  EXPECT_EQ(bad.status().message(),
            "lines[2].iban has wrong check digits: check it for a typing mistake");
  f.lines[2].iban = "US12345678901234567890";
  EXPECT_EQ(BadField(WritePain001(f)), "lines[2].iban");

  f = ThreeLines();
  f.lines[0].bic = "NOTABIC";
  EXPECT_EQ(BadField(WritePain001(f)), "lines[0].bic");

  f = ThreeLines();
  f.lines[2].end_to_end_id = f.lines[0].end_to_end_id;
  EXPECT_EQ(BadField(WritePain001(f)), "lines[2].end_to_end_id");
  for (const char* id : {"", "/pay", "pay/", "pa//y", "pay 1", "pay&1", "p\xC3\xA9",
                         "123456789012345678901234567890123456"}) {
    f = ThreeLines();
    f.lines[0].end_to_end_id = id;
    EXPECT_EQ(BadField(WritePain001(f)), "lines[0].end_to_end_id") << id;
  }
  f = ThreeLines();
  f.message_id = "";
  EXPECT_EQ(BadField(WritePain001(f)), "message_id");

  f = ThreeLines();
  f.lines[1].creditor_name = " \t ";
  EXPECT_EQ(BadField(WritePain001(f)), "lines[1].creditor_name");
  f = ThreeLines();
  f.debtor.name = "";
  EXPECT_EQ(BadField(WritePain001(f)), "debtor.name");
  f = ThreeLines();
  f.execution_date = year(2026) / month(2) / day(30);
  EXPECT_EQ(BadField(WritePain001(f)), "execution_date");
}

TEST(Pain001, NeedsBicAndAddressWhenABankOutsideTheEeaTakesPart) {
  Pain001 f = ThreeLines();
  f.lines[0].iban = "GB82WEST12345698765432";
  EXPECT_EQ(BadField(WritePain001(f)), "lines[0].bic");
  f.lines[0].bic = "NWBKGB2L";
  EXPECT_EQ(BadField(WritePain001(f)), "debtor.address");
  f.debtor.address = PostalAddress{"Unter den Linden", "1", "10117", "Berlin", "DE"};
  auto xml = WritePain001(f);
  ASSERT_TRUE(xml.ok()) << xml.status().ToString();
  Reader r(*xml);
  EXPECT_EQ(r.String("//p:Dbtr/p:PstlAdr/p:TwnNm"), "Berlin");
  EXPECT_EQ(r.String("//p:Dbtr/p:PstlAdr/p:Ctry"), "DE");
  EXPECT_EQ(r.String("//p:CdtTrfTxInf[1]/p:CdtrAgt/p:FinInstnId/p:BICFI"), "NWBKGB2L");

  // A debtor outside the EEA: every line needs its BIC.
  f = ThreeLines();
  f.debtor.iban = "CH9300762011623852957";
  f.debtor.address = PostalAddress{"", "", "", "Z\xC3\xBCrich", "CH"};
  EXPECT_EQ(BadField(WritePain001(f)), "lines[0].bic");
  f.lines[0].bic = "BNPAFRPP";
  f.lines[2].bic = "BPMOIT22";
  xml = WritePain001(f);
  ASSERT_TRUE(xml.ok()) << xml.status().ToString();
  EXPECT_EQ(Reader(*xml).String("//p:Dbtr/p:PstlAdr/p:TwnNm"), "Zurich");

  f.debtor.address->country = "XX";
  EXPECT_EQ(BadField(WritePain001(f)), "debtor.address.country");
}

TEST(Pain001, MakesGpunexIdsIntoEpcIdentifiers) {
  EXPECT_EQ(SepaIdFromGpunexId("pay_01JEXAMPLE0000000000000A"), "pay-01JEXAMPLE0000000000000A");
  Pain001 f = ThreeLines();
  f.lines[0].end_to_end_id = "pay_01JEXAMPLE0000000000000A";
  EXPECT_EQ(BadField(WritePain001(f)), "lines[0].end_to_end_id");
  f.lines[0].end_to_end_id = SepaIdFromGpunexId("pay_01JEXAMPLE0000000000000A");
  EXPECT_TRUE(WritePain001(f).ok());
}

TEST(Pain001, FormatsCentsExactly) {
  EXPECT_EQ(FormatCents(0), "0.00");
  EXPECT_EQ(FormatCents(5), "0.05");
  EXPECT_EQ(FormatCents(100), "1.00");
  EXPECT_EQ(FormatCents(123456789012345), "1234567890123.45");
}

TEST(Pain001, WritesConcurrently) {
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        if (!WritePain001(ThreeLines()).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace gpunex::platform::bank
