#include "common/event_fd.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace gpunex {

namespace {

int NewEventFd() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    std::perror("eventfd");
    std::abort();
  }
  return fd;
}

}  // namespace

void SignalEventFd(int fd) {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd, &one, sizeof one);
}

void ClearEventFd(int fd) {
  uint64_t v = 0;
  while (read(fd, &v, sizeof v) > 0) {
  }
}

EventFd::EventFd() : fd_(NewEventFd()) {}

EventFd::~EventFd() { close(fd_); }

}  // namespace gpunex
