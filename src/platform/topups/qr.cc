#include "platform/topups/qr.h"

#include <qrencode.h>

#include <cerrno>
#include <memory>

namespace gpunex::platform::topups {
namespace {

constexpr int kQuietZone = 4;        // modules on each side
constexpr int kPixelsPerModule = 8;  // the intrinsic size; CSS may scale it

struct QrFree {
  void operator()(QRcode* q) const { QRcode_free(q); }
};

}  // namespace

StatusOr<std::string> QrSvg(std::string_view text) {
  if (text.empty()) return InvalidArgument("a QR code needs a text");
  if (text.find('\0') != std::string_view::npos)
    return InvalidArgument("a QR code's text may not hold a NUL byte");
  const std::string s(text);
  errno = 0;
  std::unique_ptr<QRcode, QrFree> qr(
      QRcode_encodeString(s.c_str(), /*version=*/0, QR_ECLEVEL_M, QR_MODE_8, /*casesensitive=*/1));
  if (!qr) {
    if (errno == ERANGE || errno == EINVAL)
      return InvalidArgument("the text is too long for a QR code");
    return Internal("libqrencode failed to encode the text");
  }
  const int n = qr->width;
  const int size = n + 2 * kQuietZone;
  const std::string sz = std::to_string(size);
  const std::string px = std::to_string(size * kPixelsPerModule);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px + "\" height=\"" +
                    px + "\" viewBox=\"0 0 " + sz + " " + sz +
                    "\" shape-rendering=\"crispEdges\"><rect width=\"" + sz + "\" height=\"" + sz +
                    "\" fill=\"#fff\"/><path fill=\"#000\" d=\"";
  // One rectangle per horizontal run of dark modules (bit 0 of a module's byte).
  for (int y = 0; y < n; ++y) {
    const unsigned char* row = qr->data + static_cast<ptrdiff_t>(y) * n;
    for (int x = 0; x < n;) {
      if (!(row[x] & 1)) {
        ++x;
        continue;
      }
      int end = x;
      while (end < n && (row[end] & 1)) ++end;
      const std::string len = std::to_string(end - x);
      svg += "M" + std::to_string(x + kQuietZone) + " " + std::to_string(y + kQuietZone) + "h" +
             len + "v1h-" + len + "z";
      x = end;
    }
  }
  svg += "\"/></svg>\n";
  return svg;
}

}  // namespace gpunex::platform::topups
