#include "cli/search.h"

#include <cctype>
#include <cmath>

#include "cli/client.h"

namespace gpunex::cli {
namespace {

struct Key {
  std::string_view name;
  std::string_view op;     // the one operator it takes
  std::string_view param;  // the query parameter
};

constexpr Key kKeys[] = {
    {"reliability", ">=", "min_reliability"},
    {"performance", ">=", "min_performance"},
    {"gpus", ">=", "min_gpus"},
    {"vram", ">=", "min_vram_gb"},
    {"down", ">=", "min_down_mbps"},
    {"up", ">=", "min_up_mbps"},
    {"cuda", ">=", "min_cuda"},
    {"price", "<=", "max_price_micro"},
    {"gpu", "=", "gpu_model"},
    {"region", "=", "region"},
    {"country", "=", "country"},
    {"tier", "=", "tier"},
    {"verified", "=", "verified_only"},
};

std::string KnownKeys() {
  std::string out;
  for (const Key& k : kKeys) {
    out += (out.empty() ? "" : ", ") + std::string(k.name) + std::string(k.op);
  }
  return out;
}

}  // namespace

StatusOr<Query> WhereToQuery(std::string_view expression) {
  Query q;
  size_t i = 0;
  while (i < expression.size()) {
    while (i < expression.size() && std::isspace(static_cast<unsigned char>(expression[i]))) ++i;
    if (i == expression.size()) break;
    size_t end = i;
    while (end < expression.size() &&
           std::isspace(static_cast<unsigned char>(expression[end])) == 0) {
      ++end;
    }
    const std::string_view term = expression.substr(i, end - i);
    i = end;
    const size_t op_at = term.find_first_of("<>=!");
    if (op_at == 0 || op_at == std::string_view::npos) {
      return InvalidArgument("--where: \"" + std::string(term) +
                             "\" is not key<op>value; the keys are " + KnownKeys());
    }
    size_t op_end = op_at;
    while (op_end < term.size() &&
           std::string_view("<>=!").find(term[op_end]) != std::string_view::npos) {
      ++op_end;
    }
    const std::string_view name = term.substr(0, op_at);
    std::string_view op = term.substr(op_at, op_end - op_at);
    const std::string_view value = term.substr(op_end);
    if (op == "==") op = "=";
    const Key* key = nullptr;
    for (const Key& k : kKeys) {
      if (k.name == name) key = &k;
    }
    if (key == nullptr) {
      return InvalidArgument("--where: \"" + std::string(name) + "\" is not a key; the keys are " +
                             KnownKeys());
    }
    if (op != key->op) {
      return InvalidArgument("--where: " + std::string(name) + " takes " + std::string(key->op) +
                             " (\"" + std::string(term) + "\")");
    }
    if (value.empty()) {
      return InvalidArgument("--where: \"" + std::string(term) + "\" has no value");
    }
    std::string v(value);
    if (name == "price") {
      GPUNEX_ASSIGN_OR_RETURN(int64_t micro, ParseUsdc(value, "--where price"));
      v = std::to_string(micro);
    } else if (name == "verified") {
      if (value != "true" && value != "false") {
        return InvalidArgument("--where: verified is true or false (\"" + std::string(term) +
                               "\")");
      }
    }
    q.emplace_back(key->param, v);
  }
  return q;
}

std::string QueryString(const Query& q) {
  std::string out;
  for (const auto& [k, v] : q) {
    out += (out.empty() ? "?" : "&") + k + "=" + UrlEncode(v);
  }
  return out;
}

json::array SkyPilotRows(const json::array& offers) {
  json::array rows;
  for (const json::value& offer : offers) {
    if (!offer.is_object()) continue;
    const json::object& o = offer.as_object();
    const int64_t available = StoredInt(o, "gpus_available");
    const int64_t cpus = StoredInt(o, "cpu_cores_per_gpu");
    const double ram = StoredNumber(o, "ram_gb_per_gpu");
    const int64_t price = StoredInt(o, "price_micro");
    for (int64_t n = 1; n <= available; n *= 2) {
      json::object row;
      row["InstanceType"] = StoredText(o, "id") + "_" + std::to_string(n) + "x";
      row["AcceleratorName"] = StoredText(o, "gpu_name");
      row["AcceleratorCount"] = n;
      row["vCPUs"] = cpus * n;
      row["MemoryGiB"] = std::floor(ram * static_cast<double>(n) * 10 + 0.5) / 10;
      row["Price"] = Usdc(price * n);
      row["Region"] = StoredText(o, "region");
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

const std::vector<Column>& SkyPilotColumns() {
  static const std::vector<Column> kColumns = {
      {"InstanceType", "InstanceType"},
      {"AcceleratorName", "AcceleratorName"},
      {"AcceleratorCount", "AcceleratorCount"},
      {"vCPUs", "vCPUs"},
      {"MemoryGiB", "MemoryGiB"},
      {"Price", "Price"},
      {"Region", "Region"},
  };
  return kColumns;
}

}  // namespace gpunex::cli
