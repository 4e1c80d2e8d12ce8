#include "gpubench/cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace gpunex::gpubench {
namespace {

constexpr double kMaxSustainS = 3600;

std::optional<int> ParseInt(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ParseSeconds(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "GPU-" then hex digits and dashes (NVML and CUDA write 32 digits in five groups).
bool LooksLikeGpuUuid(std::string_view s) {
  if (s.size() < 5 || s.size() > 64) return false;
  std::string prefix(s.substr(0, 4));
  std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (prefix != "GPU-") return false;
  return std::all_of(s.begin() + 4, s.end(),
                     [](unsigned char c) { return std::isxdigit(c) != 0 || c == '-'; });
}

std::string Canonical(std::string_view uuid) {
  std::string s(uuid);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s.starts_with("gpu-")) s.erase(0, 4);
  return s;
}

}  // namespace

StatusOr<Options> ParseOptions(std::span<const std::string_view> args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    // The value of an option that takes one.
    auto value = [&]() -> std::optional<std::string_view> {
      if (inline_value) return inline_value;
      if (i + 1 < args.size()) return args[++i];
      return std::nullopt;
    };
    auto flag = [&](bool* out) -> Status {
      if (inline_value) return InvalidArgument(std::string(name) + " takes no value");
      *out = true;
      return Status::Ok();
    };

    if (name == "--device") {
      auto v = value();
      auto n = v ? ParseInt(*v) : std::nullopt;
      if (!n || *n < 0) return InvalidArgument("--device needs a device number (0, 1, ...)");
      o.device = *n;
    } else if (name == "--uuid") {
      auto v = value();
      if (!v || !LooksLikeGpuUuid(*v)) {
        return InvalidArgument("--uuid needs a GPU UUID such as GPU-8c2b6f1e-...");
      }
      o.uuid = std::string(*v);
    } else if (name == "--catalog-id") {
      auto v = value();
      if (!v || v->empty() || v->size() > 64) {
        return InvalidArgument("--catalog-id needs a catalog id such as h100-sxm-80gb");
      }
      o.catalog_id = std::string(*v);
    } else if (name == "--sustain-s") {
      auto v = value();
      auto s = v ? ParseSeconds(*v) : std::nullopt;
      if (!s || *s < 0 || *s > kMaxSustainS) {
        return InvalidArgument("--sustain-s needs a number of seconds from 0 to 3600");
      }
      o.sustain_s = *s;
    } else if (name == "--quick") {
      GPUNEX_RETURN_IF_ERROR(flag(&o.quick));
    } else if (name == "--help" || name == "-h") {
      GPUNEX_RETURN_IF_ERROR(flag(&o.help));
    } else if (name == "--version") {
      GPUNEX_RETURN_IF_ERROR(flag(&o.version));
    } else {
      return InvalidArgument("unknown argument " + std::string(arg) + " (see --help)");
    }
  }
  if (o.device >= 0 && !o.uuid.empty()) {
    return InvalidArgument("give --device or --uuid, not both");
  }
  return o;
}

std::string Usage() {
  return "usage: gpunex-gpubench [--device N | --uuid GPU-...] [--catalog-id ID]\n                 "
         "      [--sustain-s SECONDS] [--quick]\n\nMeasures one GPU (CUDA device 0 unless told "
         "otherwise): FP32 and FP16 arithmetic\nwithout tensor cores, "
         "FP16/BF16/TF32 tensor-core GEMMs through cuBLASLt, device\nmemory read/write/copy/triad "
         "bandwidth, and a sustained BF16 GEMM load (default\n60 s) with NVML clocks, "
         "temperature, power and throttle reasons. Prints one JSON\nobject on stdout "
         "(docs/gpubench.md); progress goes to stderr.\n\n  --device N        CUDA device "
         "ordinal\n  --uuid GPU-...    the GPU with this UUID\n  --catalog-id ID   the catalog "
         "model for the reference fractions (default: matched\n                    from the "
         "device name; none when unknown)\n  --sustain-s S     length of the sustained phase, "
         "0 to 3600 (0 skips it)\n  --quick           short measurements and a 5 s sustained "
         "phase, for smoke tests\n  --version         print the output format version\n\nExit "
         "status: 0 measured, 2 a sanity check failed (wrong results), 1 other errors.\n";
}

Plan MakePlan(const Options& o) {
  Plan p;
  if (o.quick) {
    p.target_ms = 50;
    p.screen_ms = 10;
    p.fma_iters = 1024;
    p.gemm_sizes = {8192};
    p.gemm_algos = 3;
    p.memory_buffer_cap = uint64_t{256} << 20;
    p.sustain_s = o.sustain_s >= 0 ? o.sustain_s : 5;
  } else {
    p.target_ms = 200;
    p.screen_ms = 30;
    p.fma_iters = 4096;
    p.gemm_sizes = {4096, 8192, 16384};
    p.gemm_algos = 6;
    p.memory_buffer_cap = uint64_t{1} << 30;
    p.sustain_s = o.sustain_s >= 0 ? o.sustain_s : 60;
  }
  // Ten intervals at least, and none longer than a second.
  p.interval_s = std::clamp(p.sustain_s / 10, 0.05, 1.0);
  p.sample_ms = 500;
  return p;
}

std::string FormatGpuUuid(std::span<const unsigned char, 16> b) {
  char buf[64];
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

bool SameGpuUuid(std::string_view a, std::string_view b) { return Canonical(a) == Canonical(b); }

}  // namespace gpunex::gpubench
