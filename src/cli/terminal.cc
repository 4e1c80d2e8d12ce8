#include "cli/terminal.h"

#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include "cli/client.h"

namespace gpunex::cli {
namespace {

// Written before raw mode starts and read by the signal handler: plain globals, as a
// handler may only touch those.
termios g_saved{};
volatile sig_atomic_t g_raw = 0;

void OnInterrupt(int) {
  if (g_raw != 0) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
  ::_exit(kExitInterrupted);
}

}  // namespace

RawTerminal::RawTerminal(bool enable) {
  if (!enable || ::tcgetattr(STDIN_FILENO, &g_saved) != 0) return;
  termios raw = g_saved;
  ::cfmakeraw(&raw);
  g_raw = 1;
  if (::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0) {
    active_ = true;
  } else {
    g_raw = 0;
  }
}

void RawTerminal::Restore() {
  if (!active_) return;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
  g_raw = 0;
  active_ = false;
}

void InstallInterruptHandler() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace gpunex::cli
