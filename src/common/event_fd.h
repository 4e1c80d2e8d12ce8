#ifndef GPUNEX_COMMON_EVENT_FD_H_
#define GPUNEX_COMMON_EVENT_FD_H_

// Waking a thread that polls file descriptors from another thread: a Linux eventfd,
// non-blocking, that Signal makes readable and Clear empties again.
//
// Thread-safety: Signal may be called from any thread at any time (also by several at
// once); Clear by the polling thread.

namespace gpunex {

// Makes the eventfd `fd` readable (Signal's work, for an fd this class does not own).
void SignalEventFd(int fd);
// Reads `fd` until it is empty.
void ClearEventFd(int fd);

class EventFd {
 public:
  EventFd();  // aborts when the kernel gives no eventfd (out of descriptors at start)
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;

  int fd() const { return fd_; }
  void Signal() const { SignalEventFd(fd_); }
  void Clear() const { ClearEventFd(fd_); }

 private:
  const int fd_;
};

}  // namespace gpunex

#endif  // GPUNEX_COMMON_EVENT_FD_H_
