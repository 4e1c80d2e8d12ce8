// How the command-line client prints what the API answered (docs/cli.md, "Output"):
//   json   the API's objects exactly (a list command prints the array of its items);
//   yaml   the same values as YAML;
//   table  the columns people read, aligned; money in USDC, times as given;
//   wide   the table with more columns;
//   csv    the table's columns as CSV (RFC 4180);
//   quiet  (-q) the ids only, one a line.
// Data goes to stdout; everything else (progress, notes) to stderr.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace gpunex::cli {

enum class Format { kTable, kWide, kJson, kYaml, kCsv, kQuiet };
StatusOr<Format> ParseFormat(std::string_view name);

// How a column shows its value.
enum class Show {
  kText,   // strings as they are; numbers, booleans; null as "-"
  kMoney,  // an integer of micro-USDC as USDC with up to six decimals ("2.5")
  kList,   // an array joined with ","
};

struct Column {
  std::string header;  // "STATE"
  std::string path;    // a member, or a dotted path ("provider.pseudonym")
  Show show = Show::kText;
  bool wide = false;  // only in the wide table
};

// The member at a dotted path; nullptr when absent.
const json::value* At(const json::value& v, std::string_view path);

// One cell's text.
std::string Cell(const json::value& item, const Column& c);

// Micro-USDC as USDC: 2500000 -> "2.5", 1 -> "0.000001", -1500000 -> "-1.5".
std::string Usdc(int64_t micro);
// A USDC amount ("0.5", "12", "1.000001") as micro-USDC; fails naming `field` when it is
// not a non-negative decimal with at most six decimals.
StatusOr<int64_t> ParseUsdc(std::string_view text, std::string_view field);

// The rendering of a list of items (objects) in `format`. With `color` (a terminal, and
// NO_COLOR unset) a table's header is bold.
std::string RenderList(const json::array& items, const std::vector<Column>& columns, Format format,
                       bool color = false);
// The rendering of one object: json/yaml as it is, table and wide as "KEY  value" lines
// of the columns, quiet as its id.
std::string RenderOne(const json::value& item, const std::vector<Column>& columns, Format format);

// YAML of a JSON value (block style; strings quoted when YAML would read them otherwise).
std::string ToYaml(const json::value& v);
// Pretty JSON, two spaces, a newline at the end.
std::string ToPrettyJson(const json::value& v);

}  // namespace gpunex::cli
