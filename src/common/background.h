#ifndef GPUNEX_COMMON_BACKGROUND_H_
#define GPUNEX_COMMON_BACKGROUND_H_

// A program's background work in one place: periodic tasks, each on a thread of its own,
// started and stopped together (gpunexd's Serve), and run one pass at a time by tests,
// which step them on their fake clock instead of sleeping (docs/architecture.md).

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/thread_annotations.h"

namespace gpunex {

// One periodic task.
struct PeriodicTask {
  // "rentals.meter": a pass that fails is logged as "rentals.meter_failed".
  std::string name;
  // The pause after each pass (a Wake ends it early).
  std::chrono::milliseconds every{1000};
  // One pass of the work.
  std::function<Status()> pass;
  // Optional: runs on the task's thread once it is stopping, after its last pass.
  std::function<void()> after_stop = nullptr;
};

// What a service keeps of its scheduled task. An empty handle (a service never scheduled,
// as in most unit tests) does nothing, and says that no thread runs the task.
class TaskHandle {
 public:
  TaskHandle() = default;

  // The task's next pass starts now instead of after its pause (remembered when the
  // task is in a pass: it then runs again at once).
  void Wake() const;
  // Whether a thread takes the task's passes now (between Background's Start and Stop).
  bool running() const;
  // Whether the task was told to stop: a long pass ends early.
  bool stopping() const;

  struct State;

 private:
  friend class Background;
  explicit TaskHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

class Background {
 public:
  Background() = default;
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // Adds a task (names are unique; not while started).
  TaskHandle Add(PeriodicTask task) EXCLUDES(mu_);
  // A thread for each task, in the order they were added; each starts with a pass.
  void Start() EXCLUDES(mu_);
  // Stops the tasks in the reverse order, each after its current pass. Start may follow.
  void Stop() EXCLUDES(mu_);
  // One pass of the named task on the calling thread, for tests (not while started).
  Status RunOnce(std::string_view name) EXCLUDES(mu_);
  // The tasks' names, in the order they were added.
  std::vector<std::string> names() const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::vector<std::shared_ptr<TaskHandle::State>> tasks_ GUARDED_BY(mu_);
  bool started_ GUARDED_BY(mu_) = false;
};

}  // namespace gpunex

#endif  // GPUNEX_COMMON_BACKGROUND_H_
