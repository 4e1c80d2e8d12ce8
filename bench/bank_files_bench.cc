// How long the bank payout files take to make (the goal: under 1 s each for
// 10 000 payouts): a pain.001.001.09 SEPA file of LINES credit transfers, written and
// validated against its XML schema in process (WritePain001 does both; ValidatePain001
// is also timed alone), and a NACHA file of ENTRIES credit entries, written (WriteNacha)
// and re-checked from its bytes (ParseNacha, which the payouts code runs on every file).
//
// The payouts are synthetic but realistic: IBANs of 8 SEPA countries with valid check
// digits, a BIC on a third of them, names with accents, amounts from 50 EUR to 5 000 EUR;
// US routing numbers of 5 banks, checking and savings, PPD and CCD. Each case runs
// ROUNDS times after one warm-up; the best and the median are printed with the file's
// size. Nothing is asserted; it fails (exit 1) only when a write or a check fails, or when
// ParseNacha's totals differ from the entries'. With OUT_DIR set, the last files are
// written there (pain001.xml, nacha.txt) for the independent checkers of
// tests/e2e/bankcheck.py.
//
// Environment: LINES (10000), ENTRIES (10000), ROUNDS (5), OUT_DIR (unset).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/time.h"
#include "platform/bank/nacha.h"
#include "platform/bank/pain001.h"

namespace gpunex::bench {
namespace {

using namespace platform::bank;
using Clock = std::chrono::steady_clock;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

// An IBAN of `country` with the BBAN `bban` and the check digits that make it valid.
std::string MakeIban(const std::string& country, const std::string& bban) {
  const std::string rearranged = bban + country + "00";
  int rem = 0;
  for (char c : rearranged) {
    rem = c >= 'A' ? (rem * 100 + (c - 'A' + 10)) % 97 : (rem * 10 + (c - '0')) % 97;
  }
  const int check = 98 - rem;
  char digits[4];
  std::snprintf(digits, sizeof digits, "%02d", check);
  return country + digits + bban;
}

// The last `width` decimal digits of v >= 0, zero-filled.
std::string Digits(int64_t v, int width) {
  std::string s(static_cast<size_t>(width), '0');
  for (int i = width - 1; i >= 0 && v > 0; --i, v /= 10) s[i] = static_cast<char>('0' + v % 10);
  return s;
}

Pain001 SepaFile(int64_t lines) {
  Pain001 f;
  f.message_id = "gpx-bench-0001";
  f.created_at = *ParseRfc3339("2026-12-07T08:00:00Z");
  f.initiating_party = "gpunex Operations GmbH";
  f.debtor = {"gpunex Operations GmbH", "DE89370400440532013000", "COBADEFFXXX", std::nullopt};
  f.execution_date = std::chrono::year(2026) / 12 / 8;
  const char* names[] = {"Ren\xC3\xA9 M\xC3\xBCller",
                         "Zo\xC3\xAB \xC3\x98rsted",
                         "\xC5\x81ukasz Wi\xC5\x9B"
                         "niewski",
                         "Gro\xC3\x9F GPU GmbH",
                         "Ana Mar\xC3\xAD"
                         "a Pe\xC3\xB1"
                         "a",
                         "Fran\xC3\xA7"
                         "ois D'Arcy"};
  for (int64_t i = 0; i < lines; ++i) {
    Pain001::Line l;
    l.end_to_end_id = "pay-01JBENCH" + Digits(i, 16);
    l.creditor_name = names[i % 6];
    switch (i % 8) {
      case 0:
        l.iban = MakeIban("DE", "37040044" + Digits(i, 10));
        break;
      case 1:
        l.iban = MakeIban("FR", "2004101005" + Digits(i, 11) + "06");
        break;
      case 2:
        l.iban = MakeIban("NL", "ABNA" + Digits(i, 10));
        break;
      case 3:
        l.iban = MakeIban("IT", "X0542811101" + Digits(i, 12));
        break;
      case 4:
        l.iban = MakeIban("ES", "21000418" + Digits(i, 12));
        break;
      case 5:
        l.iban = MakeIban("AT", "19043" + Digits(i, 11));
        break;
      case 6:
        l.iban = MakeIban("BE", "539" + Digits(i, 9));
        break;
      default:
        l.iban = MakeIban("PL", "10901014" + Digits(i, 16));
        break;
    }
    if (i % 3 == 0) l.bic = "DEUTDEFF500";
    l.amount_cents = 5'000 + (i * 7'919) % 495'000;
    l.remittance = "gpunex payout " + l.end_to_end_id + " earnings 2026-11";
    f.lines.push_back(std::move(l));
  }
  return f;
}

NachaFile AchFile(int64_t entries) {
  NachaFile f;
  f.immediate_destination = "021000021";
  f.immediate_destination_name = "JPMorgan Chase";
  f.immediate_origin = "1123456789";
  f.immediate_origin_name = "gpunex Operations Inc";
  f.created_at = *ParseRfc3339("2026-12-07T08:00:00Z");
  f.company_name = "gpunex";
  f.company_id = "1123456789";
  f.company_entry_description = "PAYOUT";
  f.effective_date = std::chrono::year(2026) / 12 / 8;
  f.odfi_routing = "021000021";
  const char* routings[] = {"011000015", "026009593", "121000358", "322271627", "021000021"};
  for (int64_t i = 0; i < entries; ++i) {
    NachaFile::Entry e;
    e.sec_code = i % 4 == 0 ? "CCD" : "PPD";
    e.routing = routings[i % 5];
    e.account_number = Digits(1'000'000 + i * 37, 12);
    e.account_type = i % 2 ? "savings" : "checking";
    e.amount_cents = 5'000 + (i * 7'919) % 495'000;
    e.individual_id = "pay_01JB" + Digits(i, 7);
    e.individual_name = i % 4 == 0 ? "Acme GPU Farms LLC" : "Ren\xC3\xA9 M\xC3\xBCller";
    f.entries.push_back(std::move(e));
  }
  return f;
}

struct Figures {
  double best_ms, median_ms;
};

Figures Time(int64_t rounds, const std::function<bool()>& run, bool* ok) {
  if (!run()) *ok = false;  // warm-up
  std::vector<double> ms;
  for (int64_t r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    if (!run()) *ok = false;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

void Print(const char* what, int64_t n, size_t bytes, Figures f) {
  std::printf("%-52s %7lld %10.2f %9.1f %9.1f\n", what, static_cast<long long>(n),
              static_cast<double>(bytes) / 1e6, f.best_ms, f.median_ms);
}

int Main() {
  const int64_t lines = EnvInt("LINES", 10'000), entries = EnvInt("ENTRIES", 10'000);
  const int64_t rounds = std::max<int64_t>(1, EnvInt("ROUNDS", 5));
  const char* out_dir = std::getenv("OUT_DIR");
  bool ok = true;

  std::printf("%-52s %7s %10s %9s %9s\n", "case", "n", "MB", "best ms", "median ms");
  const Pain001 sepa = SepaFile(lines);
  std::string xml;
  const Figures w = Time(
      rounds,
      [&] {
        auto r = WritePain001(sepa);
        if (!r.ok()) {
          std::fprintf(stderr, "WritePain001: %s\n", r.status().ToString().c_str());
          return false;
        }
        xml = *std::move(r);
        return true;
      },
      &ok);
  Print("pain.001: WritePain001 (build, serialize, validate)", lines, xml.size(), w);
  const Figures v = Time(
      rounds,
      [&] {
        Status st = ValidatePain001(xml);
        if (!st.ok()) std::fprintf(stderr, "ValidatePain001: %s\n", st.ToString().c_str());
        return st.ok();
      },
      &ok);
  Print("pain.001: ValidatePain001 alone (parse + XSD)", lines, xml.size(), v);

  const NachaFile ach = AchFile(entries);
  std::string text;
  const Figures nw = Time(
      rounds,
      [&] {
        auto r = WriteNacha(ach);
        if (!r.ok()) {
          std::fprintf(stderr, "WriteNacha: %s\n", r.status().ToString().c_str());
          return false;
        }
        text = *std::move(r);
        return true;
      },
      &ok);
  Print("NACHA: WriteNacha", entries, text.size(), nw);
  StatusOr<NachaSummary> summary = InvalidArgument("not parsed");
  const Figures np = Time(
      rounds,
      [&] {
        summary = ParseNacha(text);
        if (!summary.ok())
          std::fprintf(stderr, "ParseNacha: %s\n", summary.status().ToString().c_str());
        return summary.ok();
      },
      &ok);
  Print("NACHA: ParseNacha", entries, text.size(), np);
  std::printf("%-52s %7s %10s %9.1f %9.1f\n", "NACHA: WriteNacha + ParseNacha", "", "",
              nw.best_ms + np.best_ms, nw.median_ms + np.median_ms);

  if (summary.ok()) {
    int64_t credit = 0;
    for (const auto& e : ach.entries) credit += e.amount_cents;
    if (summary->total_credit_cents != credit ||
        summary->entry_addenda_count != static_cast<int64_t>(ach.entries.size())) {
      std::fprintf(stderr, "ParseNacha's totals differ from the entries'\n");
      ok = false;
    }
  }
  if (out_dir) {
    std::ofstream(std::string(out_dir) + "/pain001.xml", std::ios::binary) << xml;
    std::ofstream(std::string(out_dir) + "/nacha.txt", std::ios::binary) << text;
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gpunex::bench

int main() { return gpunex::bench::Main(); }
