#include "common/background.h"

#include <cstdlib>
#include <thread>
#include <utility>

#include "common/log.h"

namespace gpunex {

struct TaskHandle::State {
  explicit State(PeriodicTask t) : task(std::move(t)) {}

  const PeriodicTask task;
  Mutex mu;
  CondVar cv;
  bool woken GUARDED_BY(mu) = false;
  bool running GUARDED_BY(mu) = false;
  bool stopping GUARDED_BY(mu) = false;
  std::thread thread;  // joinable while started; touched by Background under its mutex

  void Pass() {
    Status st = task.pass();
    if (!st.ok()) LogWarn(task.name + "_failed", {{"error", st.ToString()}});
  }

  void Loop() EXCLUDES(mu) {
    while (true) {
      Pass();
      const auto deadline = std::chrono::steady_clock::now() + task.every;
      MutexLock lock(&mu);
      while (!woken && !stopping) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= left.zero()) break;
        cv.WaitFor(&mu, left);
      }
      if (stopping) {
        running = false;
        break;
      }
      woken = false;
    }
    if (task.after_stop) task.after_stop();
  }
};

void TaskHandle::Wake() const {
  if (!state_) return;
  {
    MutexLock lock(&state_->mu);
    state_->woken = true;
  }
  state_->cv.SignalAll();
}

bool TaskHandle::running() const {
  if (!state_) return false;
  MutexLock lock(&state_->mu);
  return state_->running;
}

bool TaskHandle::stopping() const {
  if (!state_) return false;
  MutexLock lock(&state_->mu);
  return state_->stopping;
}

Background::~Background() { Stop(); }

TaskHandle Background::Add(PeriodicTask task) {
  auto state = std::make_shared<TaskHandle::State>(std::move(task));
  MutexLock lock(&mu_);
  for (const auto& t : tasks_) {
    if (t->task.name == state->task.name) {
      LogError("background.duplicate_task", {{"name", state->task.name}});
      std::abort();
    }
  }
  if (started_) {
    LogError("background.add_while_started", {{"name", state->task.name}});
    std::abort();
  }
  tasks_.push_back(state);
  return TaskHandle(std::move(state));
}

void Background::Start() {
  MutexLock lock(&mu_);
  if (started_) return;
  started_ = true;
  for (const auto& t : tasks_) {
    {
      MutexLock task_lock(&t->mu);
      t->running = true;
      t->stopping = false;
      t->woken = false;
    }
    t->thread = std::thread([state = t.get()] { state->Loop(); });
  }
}

void Background::Stop() {
  MutexLock lock(&mu_);
  if (!started_) return;
  for (auto it = tasks_.rbegin(); it != tasks_.rend(); ++it) {
    const auto& t = *it;
    {
      MutexLock task_lock(&t->mu);
      t->stopping = true;
    }
    t->cv.SignalAll();
    if (t->thread.joinable()) t->thread.join();
  }
  started_ = false;
}

Status Background::RunOnce(std::string_view name) {
  std::shared_ptr<TaskHandle::State> task;
  {
    MutexLock lock(&mu_);
    if (started_) return FailedPrecondition("background work is started");
    for (const auto& t : tasks_) {
      if (t->task.name == name) task = t;
    }
  }
  if (!task) return NotFound("no background task " + std::string(name));
  return task->task.pass();
}

std::vector<std::string> Background::names() const {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  out.reserve(tasks_.size());
  for (const auto& t : tasks_) out.push_back(t->task.name);
  return out;
}

}  // namespace gpunex
