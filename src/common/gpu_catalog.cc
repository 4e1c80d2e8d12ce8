#include "common/gpu_catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>
#include <stdexcept>

namespace gpunex {

extern const char kBuiltinGpuCatalogCsv[];  // generated from data/gpu-reference.csv

namespace {

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

double ToDouble(const std::string& s, int line) {
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size()) {
    throw std::runtime_error("gpu catalog line " + std::to_string(line) + ": bad number '" + s +
                             "'");
  }
  return d;
}

std::string Normalize(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  for (std::string_view noise : {"nvidia", "geforce"}) {
    size_t p;
    while ((p = out.find(noise)) != std::string::npos) out.erase(p, noise.size());
  }
  return out;
}

}  // namespace

std::vector<GpuModel> ParseGpuCatalogCsv(std::string_view csv) {
  std::vector<GpuModel> models;
  std::istringstream in{std::string(csv)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1 || line.empty() || line == "\r") continue;  // header
    auto f = SplitCsvLine(line);
    if (f.size() != 9) {
      throw std::runtime_error("gpu catalog line " + std::to_string(n) + ": expected 9 fields");
    }
    GpuModel m;
    m.id = f[0];
    m.nvml_name = f[1];
    m.vram_gb = static_cast<int>(ToDouble(f[2], n));
    m.fp32_tflops = ToDouble(f[3], n);
    m.fp16_tflops = ToDouble(f[4], n);
    m.fp16_tensor_tflops = ToDouble(f[5], n);
    m.tf32_tensor_tflops = ToDouble(f[6], n);
    m.mem_bw_gbps = ToDouble(f[7], n);
    auto price = Usdc::Parse(f[8]);
    if (!price) throw std::runtime_error("gpu catalog line " + std::to_string(n) + ": bad price");
    m.default_price = *price;
    models.push_back(std::move(m));
  }
  return models;
}

const std::vector<GpuModel>& BuiltinGpuCatalog() {
  static const std::vector<GpuModel> catalog = ParseGpuCatalogCsv(kBuiltinGpuCatalogCsv);
  return catalog;
}

const GpuModel* FindGpuModel(std::string_view id) {
  for (const auto& m : BuiltinGpuCatalog()) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

bool ReportsModel(const GpuModel& m, std::string_view nvml_name, int64_t vram_mb) {
  const double catalog_mb = m.vram_gb * 1024.0;
  return Normalize(m.nvml_name) == Normalize(nvml_name) &&
         static_cast<double>(vram_mb) >= 0.85 * catalog_mb &&
         static_cast<double>(vram_mb) <= 1.05 * catalog_mb;
}

std::optional<std::string> MatchNvmlName(std::string_view nvml_name, int vram_gb) {
  std::string want = Normalize(nvml_name);
  const GpuModel* best = nullptr;
  for (const auto& m : BuiltinGpuCatalog()) {
    if (Normalize(m.nvml_name) != want) continue;
    if (!best || std::abs(m.vram_gb - vram_gb) < std::abs(best->vram_gb - vram_gb)) best = &m;
  }
  if (!best) return std::nullopt;
  return best->id;
}

}  // namespace gpunex
