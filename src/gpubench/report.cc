// The JSON is written by hand rather than through common/json.h (Boost.JSON) so that
// gpunex-gpubench also builds standalone on a GPU machine that has only a compiler, CMake
// and CUDA (bench/gpubench_vs_torch.sh); the shape is fixed and small. The tests parse
// the output with Boost.JSON.
#include "gpubench/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace gpunex::gpubench {
namespace {

// Appends JSON tokens to a string, with the commas between members and elements.
class JsonWriter {
 public:
  void BeginObject(std::string_view key = {}) { Open(key, '{'); }
  void EndObject() { Close('}'); }
  void BeginArray(std::string_view key = {}) { Open(key, '['); }
  void EndArray() { Close(']'); }

  void String(std::string_view key, std::string_view value) {
    Key(key);
    Quoted(value);
  }
  // A string, or null when empty.
  void StringOrNull(std::string_view key, std::string_view value) {
    if (value.empty()) {
      Raw(key, "null");
    } else {
      String(key, value);
    }
  }
  void Bool(std::string_view key, bool value) { Raw(key, value ? "true" : "false"); }
  void Int(std::string_view key, int64_t value) { Raw(key, std::to_string(value)); }
  // `value` rounded to `decimals` places, in its shortest form. The contract has every
  // figure a number: an unknown one (not finite) is 0.
  void Number(std::string_view key, double value, int decimals) {
    if (!std::isfinite(value)) value = 0;
    const double scale = std::pow(10.0, decimals);
    double rounded = std::round(value * scale) / scale;
    if (rounded == 0) rounded = 0;  // no "-0"
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, rounded);
    Raw(key, ec == std::errc() ? std::string_view(buf, static_cast<size_t>(end - buf)) : "0");
  }
  void Number(std::string_view key, const std::optional<double>& value, int decimals) {
    Number(key, value.value_or(0), decimals);
  }

  std::string Take() { return std::move(out_); }

 private:
  void Open(std::string_view key, char bracket) {
    Key(key);
    out_ += bracket;
    first_ = true;
  }
  void Close(char bracket) {
    out_ += bracket;
    first_ = false;
  }
  void Raw(std::string_view key, std::string_view token) {
    Key(key);
    out_ += token;
  }
  // The separator, then `"key":` unless `key` is empty (an array element or the root).
  void Key(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    if (!key.empty()) {
      Quoted(key);
      out_ += ':';
    }
  }
  void Quoted(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += ch;
      } else if (c == '\n') {
        out_ += "\\n";
      } else if (c < 0x20 || c == 0x7f) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\u%04x", c);
        out_ += esc;
      } else {
        out_ += ch;
      }
    }
    out_ += '"';
  }

  std::string out_;
  bool first_ = true;
};

constexpr int kFigureDecimals = 2;
constexpr int kFractionDecimals = 4;

double Ratio(double measured, double reference) {
  return reference > 0 ? measured / reference : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

ReferenceFractions Fractions(const ComputeFigures& c, const MemoryFigures& m,
                             const GpuModel& model) {
  ReferenceFractions f;
  f.fp32 = Ratio(c.fp32_tflops, model.fp32_tflops);
  f.fp16 = Ratio(c.fp16_tflops, model.fp16_tflops);
  f.fp16_tensor = Ratio(c.fp16_tensor_tflops, model.fp16_tensor_tflops);
  f.bf16_tensor = Ratio(c.bf16_tensor_tflops, model.fp16_tensor_tflops);
  f.tf32_tensor = Ratio(c.tf32_tensor_tflops, model.tf32_tensor_tflops);
  f.memory = Ratio(m.triad_gbps, model.mem_bw_gbps);
  return f;
}

std::string ReportJson(const Report& r) {
  JsonWriter w;
  w.BeginObject();
  w.String("tool", "gpunex-gpubench");
  w.String("version", kFormatVersion);
  w.Bool("emulated", false);

  w.BeginObject("device");
  w.Int("index", r.device.index);
  w.String("uuid", r.device.uuid);
  w.String("name", r.device.name);
  w.StringOrNull("catalog_id", r.device.catalog_id);
  w.Int("pcie_gen", std::max(r.device.pcie_gen, 0));
  w.Int("pcie_width", std::max(r.device.pcie_width, 0));
  w.Int("sm_count", r.device.sm_count);
  w.Int("memory_mb", r.device.memory_mb);
  w.EndObject();

  w.BeginObject("compute");
  w.Number("fp32_tflops", r.compute.fp32_tflops, kFigureDecimals);
  w.Number("fp16_tflops", r.compute.fp16_tflops, kFigureDecimals);
  w.Number("fp16_tensor_tflops", r.compute.fp16_tensor_tflops, kFigureDecimals);
  w.Number("bf16_tensor_tflops", r.compute.bf16_tensor_tflops, kFigureDecimals);
  w.Number("tf32_tensor_tflops", r.compute.tf32_tensor_tflops, kFigureDecimals);
  w.EndObject();

  w.BeginObject("memory");
  w.Number("read_gbps", r.memory.read_gbps, kFigureDecimals);
  w.Number("write_gbps", r.memory.write_gbps, kFigureDecimals);
  w.Number("copy_gbps", r.memory.copy_gbps, kFigureDecimals);
  w.Number("triad_gbps", r.memory.triad_gbps, kFigureDecimals);
  w.EndObject();

  const Sustained& s = r.sustained;
  w.BeginObject("sustained");
  w.Number("seconds", s.seconds, kFigureDecimals);
  w.Number("mean_tflops", s.mean_tflops, kFigureDecimals);
  w.Number("min_tflops", s.min_tflops, kFigureDecimals);
  w.Number("max_tflops", s.max_tflops, kFigureDecimals);
  w.Number("cv", s.cv, kFractionDecimals);
  w.Number("min_over_median", s.min_over_median, kFractionDecimals);
  w.Number("thermal_throttle_fraction", s.thermal_throttle_fraction, kFractionDecimals);
  w.Number("power_throttle_fraction", s.power_throttle_fraction, kFractionDecimals);
  w.Number("max_temperature_c", s.max_temperature_c, kFigureDecimals);
  w.Number("mean_power_w", s.mean_power_w, kFigureDecimals);
  w.Number("mean_sm_clock_mhz", s.mean_sm_clock_mhz, kFigureDecimals);
  w.BeginArray("throttle_reasons");
  for (const std::string& reason : s.throttle_reasons) w.String({}, reason);
  w.EndArray();
  w.EndObject();

  if (r.reference.has_value()) {
    const ReferenceFractions& f = *r.reference;
    w.BeginObject("reference_fraction");
    w.Number("fp32", f.fp32, kFractionDecimals);
    w.Number("fp16", f.fp16, kFractionDecimals);
    w.Number("fp16_tensor", f.fp16_tensor, kFractionDecimals);
    w.Number("bf16_tensor", f.bf16_tensor, kFractionDecimals);
    w.Number("tf32_tensor", f.tf32_tensor, kFractionDecimals);
    w.Number("memory", f.memory, kFractionDecimals);
    w.EndObject();
  }

  w.BeginObject("sanity");
  w.Bool("ok", r.sanity_failures.empty());
  w.BeginArray("failures");
  for (const std::string& failure : r.sanity_failures) w.String({}, failure);
  w.EndArray();
  w.EndObject();

  w.Number("duration_s", r.duration_s, kFigureDecimals);
  w.EndObject();
  return w.Take();
}

std::string ErrorJson(std::string_view message) {
  JsonWriter w;
  w.BeginObject();
  w.String("tool", "gpunex-gpubench");
  w.String("version", kFormatVersion);
  w.String("error", message);
  w.EndObject();
  return w.Take();
}

}  // namespace gpunex::gpubench
