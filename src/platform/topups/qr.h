// QR codes as SVG, for the Solana Pay links of top-ups (a wallet's camera reads them).
//
// The symbol is libqrencode's (error correction level M, 8-bit mode for what is not
// numeric or alphanumeric, the smallest version that holds the text), drawn as one <path>
// of the dark modules on a white square, with the 4-module quiet zone the standard asks
// for, a viewBox in modules, crisp edges and no scripts, styles or external references:
// safe to serve as image/svg+xml and to put in an <img>.
//
// Thread-safety: a pure function (libqrencode is reentrant).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace gpunex::platform::topups {

// Fails with kInvalidArgument when `text` is empty, holds a NUL byte, or is longer than a
// QR code holds at level M (2331 bytes of 8-bit data); with kInternal when libqrencode
// fails otherwise (out of memory).
StatusOr<std::string> QrSvg(std::string_view text);

}  // namespace gpunex::platform::topups
