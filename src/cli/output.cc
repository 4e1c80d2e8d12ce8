#include "cli/output.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "common/utf8.h"

namespace gpunex::cli {

StatusOr<Format> ParseFormat(std::string_view name) {
  if (name == "table") return Format::kTable;
  if (name == "wide") return Format::kWide;
  if (name == "json") return Format::kJson;
  if (name == "yaml") return Format::kYaml;
  if (name == "csv") return Format::kCsv;
  return InvalidArgument("-o must be one of json, yaml, table, wide, csv (not " +
                         std::string(name) + ")");
}

const json::value* At(const json::value& v, std::string_view path) {
  const json::value* at = &v;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    const std::string_view key = path.substr(0, dot);
    if (!at->is_object()) return nullptr;
    at = at->as_object().if_contains(key);
    if (at == nullptr) return nullptr;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return at;
}

std::string Usdc(int64_t micro) {
  const bool negative = micro < 0;
  const uint64_t m = negative ? 0 - static_cast<uint64_t>(micro) : static_cast<uint64_t>(micro);
  std::string frac = std::to_string(m % 1000000);
  frac = std::string(6 - frac.size(), '0') + frac;
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return (negative ? "-" : "") + std::to_string(m / 1000000) + (frac.empty() ? "" : "." + frac);
}

StatusOr<int64_t> ParseUsdc(std::string_view text, std::string_view field) {
  const auto bad = [&] {
    return InvalidArgument(
        std::string(field) +
        " must be an amount of USDC with at most six decimals, like 0.5 (not \"" +
        std::string(text) + "\")");
  };
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view frac =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() || whole.size() > 12 || frac.size() > 6) return bad();
  if (dot != std::string_view::npos && frac.empty()) return bad();
  int64_t micro = 0;
  for (const char c : whole) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return bad();
    micro = micro * 10 + (c - '0');
  }
  int64_t f = 0;
  for (size_t i = 0; i < 6; ++i) {
    const char c = i < frac.size() ? frac[i] : '0';
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return bad();
    f = f * 10 + (c - '0');
  }
  return micro * 1000000 + f;
}

std::string Cell(const json::value& item, const Column& c) {
  const json::value* v = At(item, c.path);
  if (v == nullptr || v->is_null()) return "-";
  if (c.show == Show::kMoney && v->is_int64()) return Usdc(v->as_int64());
  if (c.show == Show::kList && v->is_array()) {
    std::string out;
    for (const json::value& e : v->as_array()) {
      if (!out.empty()) out += ",";
      out += e.is_string() ? std::string(e.as_string()) : ToJsonText(e);
    }
    return out.empty() ? "-" : out;
  }
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_bool()) return v->as_bool() ? "yes" : "no";
  return ToJsonText(*v);
}

namespace {

// Display width: code points (good enough for the API's text, which has no wide glyphs
// in its fixed words).
size_t Width(std::string_view s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<const Column*> Visible(const std::vector<Column>& columns, Format format) {
  std::vector<const Column*> out;
  for (const Column& c : columns) {
    if (!c.wide || format == Format::kWide || format == Format::kCsv) out.push_back(&c);
  }
  return out;
}

std::string IdOf(const json::value& item) {
  const json::value* id = At(item, "id");
  if (id == nullptr || id->is_null()) return "";
  return id->is_string() ? std::string(id->as_string()) : ToJsonText(*id);
}

void PrettyJson(const json::value& v, int indent, std::string* out) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  const std::string inner(static_cast<size_t>(indent + 1) * 2, ' ');
  if (v.is_object() && !v.as_object().empty()) {
    *out += "{\n";
    bool first = true;
    for (const auto& [k, e] : v.as_object()) {
      if (!first) *out += ",\n";
      first = false;
      *out += inner + ToJsonText(json::string(k)) + ": ";
      PrettyJson(e, indent + 1, out);
    }
    *out += "\n" + pad + "}";
  } else if (v.is_array() && !v.as_array().empty()) {
    *out += "[\n";
    bool first = true;
    for (const json::value& e : v.as_array()) {
      if (!first) *out += ",\n";
      first = false;
      *out += inner;
      PrettyJson(e, indent + 1, out);
    }
    *out += "\n" + pad + "]";
  } else {
    *out += ToJsonText(v);
  }
}

// Whether a string must be quoted to stay a string in YAML.
bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  static const char* kWords[] = {"true", "false", "yes",   "no",    "on",  "off", "null",
                                 "~",    "True",  "False", "Yes",   "No",  "On",  "Off",
                                 "Null", "NULL",  "TRUE",  "FALSE", "YES", "NO",  "ON",
                                 "OFF",  "y",     "n",     "Y",     "N"};
  for (const char* w : kWords) {
    if (s == w) return true;
  }
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (std::isdigit(first) != 0 || first == '-' || first == '+' || first == '.') return true;
  if (std::string_view("!&*[]{}|>'\"%@`#,?:").find(static_cast<char>(first)) !=
      std::string_view::npos) {
    return true;
  }
  if (s.front() == ' ' || s.back() == ' ') return true;
  if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) {
    return true;
  }
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return s.back() == ':';
}

std::string YamlScalar(const json::value& v) {
  if (v.is_null()) return "null";
  if (v.is_string()) {
    const std::string s(v.as_string());
    return NeedsQuotes(s) ? ToJsonText(v) : s;  // a JSON string is a YAML double-quoted one
  }
  return ToJsonText(v);
}

void Yaml(const json::value& v, int indent, std::string* out) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  if (v.is_object()) {
    for (const auto& [k, e] : v.as_object()) {
      const std::string key = NeedsQuotes(k) ? ToJsonText(json::string(k)) : std::string(k);
      if ((e.is_object() && !e.as_object().empty()) || (e.is_array() && !e.as_array().empty())) {
        *out += pad + key + ":\n";
        Yaml(e, e.is_array() ? indent : indent + 1, out);
      } else if (e.is_object()) {
        *out += pad + key + ": {}\n";
      } else if (e.is_array()) {
        *out += pad + key + ": []\n";
      } else {
        *out += pad + key + ": " + YamlScalar(e) + "\n";
      }
    }
  } else if (v.is_array()) {
    for (const json::value& e : v.as_array()) {
      if (e.is_object() && !e.as_object().empty()) {
        std::string nested;
        Yaml(e, indent + 1, &nested);
        // "- " takes the place of the first line's indentation.
        *out += pad + "- " + nested.substr(pad.size() + 2);
      } else if (e.is_array() && !e.as_array().empty()) {
        *out += pad + "-\n";
        Yaml(e, indent + 1, out);
      } else if (e.is_object()) {
        *out += pad + "- {}\n";
      } else if (e.is_array()) {
        *out += pad + "- []\n";
      } else {
        *out += pad + "- " + YamlScalar(e) + "\n";
      }
    }
  } else {
    *out += pad + YamlScalar(v) + "\n";
  }
}

}  // namespace

std::string ToPrettyJson(const json::value& v) {
  std::string out;
  PrettyJson(v, 0, &out);
  return out + "\n";
}

std::string ToYaml(const json::value& v) {
  if (v.is_array() && v.as_array().empty()) return "[]\n";
  if (v.is_object() && v.as_object().empty()) return "{}\n";
  std::string out;
  Yaml(v, 0, &out);
  return out;
}

std::string RenderList(const json::array& items, const std::vector<Column>& columns, Format format,
                       bool color) {
  switch (format) {
    case Format::kJson:
      return ToPrettyJson(items);
    case Format::kYaml:
      return ToYaml(items);
    case Format::kQuiet: {
      std::string out;
      for (const json::value& item : items) out += IdOf(item) + "\n";
      return out;
    }
    case Format::kCsv: {
      const auto cols = Visible(columns, format);
      std::string out;
      for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + CsvField(cols[i]->header);
      out += "\r\n";
      for (const json::value& item : items) {
        for (size_t i = 0; i < cols.size(); ++i) {
          const std::string cell = Cell(item, *cols[i]);
          out += (i ? "," : "") + CsvField(cell == "-" ? "" : cell);
        }
        out += "\r\n";
      }
      return out;
    }
    case Format::kTable:
    case Format::kWide:
      break;
  }
  const auto cols = Visible(columns, format);
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> width(cols.size());
  for (size_t i = 0; i < cols.size(); ++i) width[i] = Width(cols[i]->header);
  for (const json::value& item : items) {
    std::vector<std::string> row;
    for (size_t i = 0; i < cols.size(); ++i) {
      std::string cell = Cell(item, *cols[i]);
      for (char& c : cell) {
        if (c == '\n' || c == '\t' || c == '\r') c = ' ';
      }
      width[i] = std::max(width[i], Width(cell));
      row.push_back(std::move(cell));
    }
    rows.push_back(std::move(row));
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      out += cells[i];
      if (i + 1 < cells.size()) out += std::string(width[i] - Width(cells[i]) + 2, ' ');
    }
    return out + "\n";
  };
  std::vector<std::string> header;
  for (const Column* c : cols) header.push_back(c->header);
  std::string out = line(header);
  if (color) out = "\033[1m" + out.substr(0, out.size() - 1) + "\033[0m\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string RenderOne(const json::value& item, const std::vector<Column>& columns, Format format) {
  switch (format) {
    case Format::kJson:
      return ToPrettyJson(item);
    case Format::kYaml:
      return ToYaml(item);
    case Format::kQuiet:
      return IdOf(item) + "\n";
    case Format::kCsv:
      return RenderList(json::array{item}, columns, format);
    case Format::kTable:
    case Format::kWide:
      break;
  }
  if (columns.empty()) return ToYaml(item);
  const auto cols = Visible(columns, format);
  size_t width = 0;
  for (const Column* c : cols) width = std::max(width, Width(c->header));
  std::string out;
  for (const Column* c : cols) {
    out += c->header + ":" + std::string(width - Width(c->header) + 2, ' ') + Cell(item, *c) + "\n";
  }
  return out;
}

}  // namespace gpunex::cli
