// Test support for the HTTP server tests: options for a loopback server on a free port,
// and a Server running Run() on its own thread that shuts down and joins on destruction.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "platform/http/server.h"

namespace gpunex::platform::http::testing {

inline ServerOptions TestOptions() {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.io_threads = 2;
  options.worker_threads = 4;
  options.shutdown_grace = std::chrono::seconds(5);
  return options;
}

inline Response NotFoundHandler(Request&) { return ErrorResponse(NotFound("no such route")); }

class TestServer {
 public:
  explicit TestServer(ServerOptions options, Handler handler = NotFoundHandler) {
    auto created = Server::Create(std::move(options), std::move(handler));
    if (!created.ok()) {
      ADD_FAILURE() << created.status().ToString();
      return;
    }
    server_ = std::move(*created);
    thread_ = std::thread([this] {
      server_->Run();
      run_returned_.set_value();
    });
  }
  ~TestServer() {
    if (server_ == nullptr) return;
    server_->Shutdown();
    thread_.join();
  }

  Server& server() { return *server_; }
  uint16_t port() const { return server_->port(); }
  // Whether Run() returned within `timeout`.
  bool WaitForRun(std::chrono::milliseconds timeout) {
    return run_future_.wait_for(timeout) == std::future_status::ready;
  }

 private:
  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::promise<void> run_returned_;
  std::future<void> run_future_ = run_returned_.get_future();
};

}  // namespace gpunex::platform::http::testing
