#include "platform/bank/pain001.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>

#include <cstdio>
#include <memory>
#include <unordered_set>

#include "common/countries.h"
#include "platform/bank/details.h"
#include "platform/bank/internal/input_error.h"
#include "platform/bank/internal/libxml.h"
#include "platform/bank/latin.h"

namespace gpunex::platform::bank {
namespace {

using internal::AsInputError;
using internal::InputError;
using internal::XmlErrors;

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};
using DocPtr = std::unique_ptr<xmlDoc, DocFree>;
struct XmlFree {
  void operator()(xmlChar* p) const { xmlFree(p); }
};
struct ValidCtxtFree {
  void operator()(xmlSchemaValidCtxt* c) const { xmlSchemaFreeValidCtxt(c); }
};
struct ParserCtxtFree {
  void operator()(xmlParserCtxt* c) const { xmlFreeParserCtxt(c); }
};

const xmlChar* X(const char* s) { return reinterpret_cast<const xmlChar*>(s); }

// The schema, parsed once and shared read-only by every validation (libxml2 keeps a
// validation's state in its xmlSchemaValidCtxt). Never freed: it lives as long as the
// process.
struct LoadedSchema {
  xmlSchema* schema = nullptr;
  std::string error;  // why it did not load
};

const LoadedSchema& Schema() {
  static const LoadedSchema loaded = [] {
    LoadedSchema s;
    XmlErrors errors;
    const std::string_view xsd = internal::Pain001Xsd();
    xmlSchemaParserCtxt* ctxt = xmlSchemaNewMemParserCtxt(xsd.data(), static_cast<int>(xsd.size()));
    if (!ctxt) {
      s.error = "no memory for the schema parser";
      return s;
    }
    xmlSchemaSetParserStructuredErrors(ctxt, &XmlErrors::Structured, &errors);
    s.schema = xmlSchemaParse(ctxt);
    xmlSchemaFreeParserCtxt(ctxt);
    if (!s.schema) s.error = errors.Summary("it does not parse");
    return s;
  }();
  return loaded;
}

// Validates a parsed document; kInvalidArgument with the schema's messages.
Status ValidateDoc(xmlDoc* doc) {
  const LoadedSchema& s = Schema();
  if (!s.schema) {
    return Internal("the built-in pain.001.001.09 schema cannot be used: " + s.error);
  }
  XmlErrors errors;
  std::unique_ptr<xmlSchemaValidCtxt, ValidCtxtFree> ctxt(xmlSchemaNewValidCtxt(s.schema));
  if (!ctxt) return Internal("no memory for a schema validation context");
  xmlSchemaSetValidStructuredErrors(ctxt.get(), &XmlErrors::Structured, &errors);
  const int rc = xmlSchemaValidateDoc(ctxt.get(), doc);
  if (rc < 0) {
    return Internal("the pain.001.001.09 validation did not run: " + errors.Summary("no reason"));
  }
  if (rc > 0) {
    return InvalidArgument("the document does not follow the pain.001.001.09 schema: " +
                           errors.Summary("no reason given"));
  }
  return Status::Ok();
}

Status CheckId(const std::string& path, std::string_view id) {
  if (id.empty()) return InputError(path, "is required");
  if (id.size() > kMaxSepaIdChars) {
    return InputError(path, "must be at most " + std::to_string(kMaxSepaIdChars) + " characters");
  }
  if (!IsSepaLatin(id) || id.find(' ') != std::string_view::npos) {
    return InputError(
        path, "may contain only a-z A-Z 0-9 and / - ? : ( ) . , ' + (the EPC's set, no spaces)");
  }
  if (id.front() == '/' || id.back() == '/' || id.find("//") != std::string_view::npos) {
    return InputError(path, "must not start or end with '/' or contain \"//\"");
  }
  return Status::Ok();
}

// A name in the EPC set, cut to `max`; fails when nothing is left of it.
StatusOr<std::string> Name(const std::string& path, std::string_view raw, size_t max) {
  std::string name = ToSepaLatin(raw, max);
  if (name.empty()) return InputError(path, "is required");
  return name;
}

std::string FormatDateTime(Timestamp t) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(t);
  const auto day = floor<days>(secs);
  const year_month_day ymd(day);
  const hh_mm_ss hms(secs - day);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d+00:00", int(ymd.year()),
                unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                int(hms.minutes().count()), int(hms.seconds().count()));
  return buf;
}

std::string FormatDate(std::chrono::year_month_day d) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", int(d.year()), unsigned(d.month()),
                unsigned(d.day()));
  return buf;
}

// The checked and converted input, ready to write.
struct Checked {
  struct Line {
    const Pain001::Line* in;
    std::string name, iban, remittance;
    std::optional<std::string> bic;
  };
  std::string initiating_party, debtor_name, debtor_iban;
  std::optional<std::string> debtor_bic;
  std::optional<PostalAddress> address;  // converted
  std::vector<Line> lines;
  int64_t total_cents = 0;
};

StatusOr<PostalAddress> CheckAddress(const PostalAddress& a) {
  PostalAddress out;
  out.street = ToSepaLatin(a.street, 70);
  out.building_number = ToSepaLatin(a.building_number, 16);
  out.post_code = ToSepaLatin(a.post_code, 16);
  out.town = ToSepaLatin(a.town, 35);
  if (out.town.empty()) return InputError("debtor.address.town", "is required");
  if (!IsCountryCode(a.country)) {
    return InputError("debtor.address.country", "must be an ISO 3166-1 alpha-2 country code");
  }
  out.country = a.country;
  return out;
}

StatusOr<Checked> Check(const Pain001& f) {
  Checked c;
  GPUNEX_RETURN_IF_ERROR(CheckId("message_id", f.message_id));
  if (!f.execution_date.ok() || f.execution_date.year() < std::chrono::year(1000)) {
    return InputError("execution_date", "is not a valid date");
  }
  GPUNEX_ASSIGN_OR_RETURN(c.initiating_party,
                          Name("initiating_party", f.initiating_party, kMaxSepaNameChars));
  GPUNEX_ASSIGN_OR_RETURN(c.debtor_name, Name("debtor.name", f.debtor.name, kMaxSepaNameChars));
  auto iban = NormalizeIban(f.debtor.iban, "debtor.iban");
  if (!iban.ok()) return AsInputError(iban.status());
  c.debtor_iban = *std::move(iban);
  if (f.debtor.bic) {
    auto bic = NormalizeBic(*f.debtor.bic, "debtor.bic");
    if (!bic.ok()) return AsInputError(bic.status());
    c.debtor_bic = *std::move(bic);
  }
  if (f.debtor.address) {
    GPUNEX_ASSIGN_OR_RETURN(c.address, CheckAddress(*f.debtor.address));
  }
  if (f.lines.empty()) return InputError("lines", "must have at least one credit transfer");

  const bool debtor_outside_eea = IbanNeedsBic(c.debtor_iban);
  bool outside_eea = debtor_outside_eea;
  std::unordered_set<std::string_view> ids;
  c.lines.reserve(f.lines.size());
  for (size_t i = 0; i < f.lines.size(); ++i) {
    const Pain001::Line& in = f.lines[i];
    const std::string at = "lines[" + std::to_string(i) + "].";
    Checked::Line& out = c.lines.emplace_back();
    out.in = &in;
    GPUNEX_RETURN_IF_ERROR(CheckId(at + "end_to_end_id", in.end_to_end_id));
    if (!ids.insert(in.end_to_end_id).second) {
      return InputError(at + "end_to_end_id", "is the end-to-end id of an earlier line");
    }
    if (in.amount_cents <= 0) return InputError(at + "amount_cents", "must be more than 0");
    if (in.amount_cents > kMaxSepaAmountCents) {
      return InputError(at + "amount_cents", "must be at most 999999999.99 EUR");
    }
    if (__builtin_add_overflow(c.total_cents, in.amount_cents, &c.total_cents)) {
      return InputError("lines", "add up to more than a file can carry");
    }
    GPUNEX_ASSIGN_OR_RETURN(out.name,
                            Name(at + "creditor_name", in.creditor_name, kMaxSepaNameChars));
    auto line_iban = NormalizeIban(in.iban, at + "iban");
    if (!line_iban.ok()) return AsInputError(line_iban.status());
    out.iban = *std::move(line_iban);
    if (in.bic) {
      auto bic = NormalizeBic(*in.bic, at + "bic");
      if (!bic.ok()) return AsInputError(bic.status());
      out.bic = *std::move(bic);
    }
    const bool line_outside_eea = IbanNeedsBic(out.iban);
    outside_eea = outside_eea || line_outside_eea;
    if (!out.bic && (debtor_outside_eea || line_outside_eea)) {
      return InputError(
          at + "bic", "is required: a SEPA transfer that involves a bank outside the EEA (" +
                          (line_outside_eea ? out.iban.substr(0, 2) : c.debtor_iban.substr(0, 2)) +
                          ") needs the creditor bank's BIC");
    }
    out.remittance = ToSepaLatin(in.remittance, kMaxSepaRemittanceChars);
  }
  if (outside_eea && !c.address) {
    return InputError("debtor.address",
                      "is required: a SEPA transfer that involves a bank outside the EEA needs the "
                      "originator's address");
  }
  return c;
}

// Children inherit the namespace of their parent (ns nullptr). A libxml2 allocation
// failure gives nullptr, and every later call with a nullptr parent does nothing: the
// incomplete document then fails validation (kInternal), it is never returned.
xmlNode* Add(xmlNode* parent, const char* name) {
  return xmlNewChild(parent, nullptr, X(name), nullptr);
}
xmlNode* Add(xmlNode* parent, const char* name, const std::string& text) {
  return xmlNewTextChild(parent, nullptr, X(name), X(text.c_str()));
}

void AddAgent(xmlNode* parent, const char* name, const std::optional<std::string>& bic) {
  xmlNode* fin = Add(Add(parent, name), "FinInstnId");
  if (bic) {
    Add(fin, "BICFI", *bic);
  } else {
    Add(Add(fin, "Othr"), "Id", "NOTPROVIDED");
  }
}

void AddAccount(xmlNode* parent, const char* name, const std::string& iban) {
  Add(Add(Add(parent, name), "Id"), "IBAN", iban);
}

void AddAddress(xmlNode* party, const PostalAddress& a) {
  xmlNode* adr = Add(party, "PstlAdr");
  if (!a.street.empty()) Add(adr, "StrtNm", a.street);
  if (!a.building_number.empty()) Add(adr, "BldgNb", a.building_number);
  if (!a.post_code.empty()) Add(adr, "PstCd", a.post_code);
  Add(adr, "TwnNm", a.town);
  Add(adr, "Ctry", a.country);
}

DocPtr Build(const Pain001& f, const Checked& c) {
  DocPtr doc(xmlNewDoc(X("1.0")));
  if (!doc) return doc;
  xmlNode* root = xmlNewDocNode(doc.get(), nullptr, X("Document"), nullptr);
  if (!root) return nullptr;
  xmlDocSetRootElement(doc.get(), root);
  xmlNs* ns = xmlNewNs(root, X(std::string(kPain001Namespace).c_str()), nullptr);
  xmlSetNs(root, ns);

  const std::string count = std::to_string(c.lines.size());
  const std::string sum = FormatCents(c.total_cents);
  xmlNode* msg = Add(root, "CstmrCdtTrfInitn");
  xmlNode* hdr = Add(msg, "GrpHdr");
  Add(hdr, "MsgId", f.message_id);
  Add(hdr, "CreDtTm", FormatDateTime(f.created_at));
  Add(hdr, "NbOfTxs", count);
  Add(hdr, "CtrlSum", sum);
  Add(Add(hdr, "InitgPty"), "Nm", c.initiating_party);

  xmlNode* pmt = Add(msg, "PmtInf");
  Add(pmt, "PmtInfId", f.message_id);
  Add(pmt, "PmtMtd", "TRF");
  Add(pmt, "NbOfTxs", count);
  Add(pmt, "CtrlSum", sum);
  Add(Add(Add(pmt, "PmtTpInf"), "SvcLvl"), "Cd", "SEPA");
  Add(Add(pmt, "ReqdExctnDt"), "Dt", FormatDate(f.execution_date));
  xmlNode* dbtr = Add(pmt, "Dbtr");
  Add(dbtr, "Nm", c.debtor_name);
  if (c.address) AddAddress(dbtr, *c.address);
  AddAccount(pmt, "DbtrAcct", c.debtor_iban);
  AddAgent(pmt, "DbtrAgt", c.debtor_bic);
  Add(pmt, "ChrgBr", "SLEV");

  for (const Checked::Line& line : c.lines) {
    xmlNode* tx = Add(pmt, "CdtTrfTxInf");
    Add(Add(tx, "PmtId"), "EndToEndId", line.in->end_to_end_id);
    xmlNode* amt = Add(Add(tx, "Amt"), "InstdAmt", FormatCents(line.in->amount_cents));
    xmlNewProp(amt, X("Ccy"), X("EUR"));
    if (line.bic) AddAgent(tx, "CdtrAgt", line.bic);
    Add(Add(tx, "Cdtr"), "Nm", line.name);
    AddAccount(tx, "CdtrAcct", line.iban);
    if (!line.remittance.empty()) Add(Add(tx, "RmtInf"), "Ustrd", line.remittance);
  }
  return doc;
}

}  // namespace

std::string FormatCents(int64_t cents) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%02lld", static_cast<long long>(cents / 100),
                static_cast<long long>(cents % 100));
  return buf;
}

std::string SepaIdFromGpunexId(std::string_view id) {
  std::string out(id);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

StatusOr<std::string> WritePain001(const Pain001& file) {
  GPUNEX_ASSIGN_OR_RETURN(const Checked checked, Check(file));
  XmlErrors errors;
  DocPtr doc = Build(file, checked);
  if (!doc) return Internal("libxml2 could not make the pain.001 document");
  xmlChar* raw = nullptr;
  int size = 0;
  xmlDocDumpFormatMemoryEnc(doc.get(), &raw, &size, "UTF-8", 1);
  std::unique_ptr<xmlChar, XmlFree> bytes(raw);
  if (!bytes || size <= 0) {
    return Internal("libxml2 could not serialize the pain.001 document: " +
                    errors.Summary("no reason given"));
  }
  std::string xml(reinterpret_cast<const char*>(bytes.get()), static_cast<size_t>(size));
  // What is returned is what was validated: the bytes, parsed again.
  if (Status st = ValidatePain001(xml); !st.ok()) {
    return Internal("the pain.001 file written fails its own check: " + st.message());
  }
  return xml;
}

Status ValidatePain001(std::string_view xml) {
  if (xml.size() > static_cast<size_t>(INT32_MAX)) {
    return InvalidArgument("the document is too large to check");
  }
  XmlErrors errors;
  std::unique_ptr<xmlParserCtxt, ParserCtxtFree> ctxt(xmlNewParserCtxt());
  if (!ctxt) return Internal("no memory for an XML parser");
  // No network, no entity substitution, no DTD loading; errors to `errors`.
  DocPtr doc(xmlCtxtReadMemory(ctxt.get(), xml.data(), static_cast<int>(xml.size()), "pain.001.xml",
                               nullptr, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  if (!doc || !ctxt->wellFormed) {
    return InvalidArgument("the document is not well-formed XML: " +
                           errors.Summary("no reason given"));
  }
  if (doc->intSubset || doc->extSubset) {
    return InvalidArgument("the document has a document type declaration; pain.001 has none");
  }
  return ValidateDoc(doc.get());
}

}  // namespace gpunex::platform::bank
