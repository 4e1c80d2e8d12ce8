// Thread-safety annotations checked by clang's -Wthread-safety (the CI's clang build
// makes a violation an error), and the mutex, scoped lock and condition variable that
// carry them. Under GCC the annotations compile to nothing.
//
// A member that a mutex protects says so with GUARDED_BY(mu_); a method that must be
// called with the mutex held says REQUIRES(mu_), one that takes it itself EXCLUDES(mu_).
// Code that locks uses MutexLock (or Mutex::Lock/Unlock in pairs) so that the analysis
// can follow it; std::mutex and std::lock_guard are invisible to it.
//
// Thread-safety: Mutex and CondVar are, of course, safe to share.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define GPUNEX_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GPUNEX_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) GPUNEX_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY GPUNEX_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) GPUNEX_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) GPUNEX_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) GPUNEX_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) GPUNEX_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) GPUNEX_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) GPUNEX_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) GPUNEX_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) GPUNEX_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) GPUNEX_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) GPUNEX_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) GPUNEX_THREAD_ANNOTATION(lock_returned(x))
// For the rare function the analysis cannot follow; say why beside it.
#define NO_THREAD_SAFETY_ANALYSIS GPUNEX_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace gpunex {

class CondVar;

// A non-recursive mutex the analysis knows about.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds the mutex (no run-time check).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with a Mutex. Waits may wake spuriously: wait in a loop
// that re-checks the condition, `while (!ready_) cv_.Wait(&mu_);`, so that the analysis
// sees the guarded members read with the mutex held.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` while waiting and holds it again on return.
  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait, for at most `timeout`. Returns false when the time ran out.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace gpunex
