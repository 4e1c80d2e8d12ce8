// The local terminal in raw mode while `exec -t` runs (every key goes to the container),
// restored when it ends, and by the interrupt handler (InstallInterruptHandler) when the
// process is killed with SIGINT or SIGTERM, which then exits 130.
#pragma once

namespace gpunex::cli {

class RawTerminal {
 public:
  // Puts stdin's terminal in raw mode when `enable`; else does nothing.
  explicit RawTerminal(bool enable);
  ~RawTerminal() { Restore(); }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  void Restore();

 private:
  bool active_ = false;
};

// SIGINT and SIGTERM: restore a raw terminal, then exit 130 at once (docs/cli.md, "Exit
// codes"). SIGPIPE is ignored (a closed pipe is an error where it is written).
void InstallInterruptHandler();

}  // namespace gpunex::cli
