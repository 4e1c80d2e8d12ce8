#include "platform/store/signals.h"

#include <pqxx/pqxx>
#include <thread>

namespace gpunex::platform::store {

namespace {

// pqxx's hook for the notifications of one channel: keeps their payloads.
class Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& c, const std::string& channel, std::vector<std::string>& sink)
      : pqxx::notification_receiver(c, channel), sink_(sink) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    sink_.push_back(payload);
  }

 private:
  std::vector<std::string>& sink_;
};

}  // namespace

Status Signal(Tx& tx, std::string_view channel, std::string_view payload) {
  if (tx.Backend() != BackendKind::kPostgres) return Status::Ok();
  if (payload.size() > 7000) return InvalidArgument("a signal's payload is too long");
  return tx.Query("SELECT pg_notify(?, ?)", {std::string(channel), std::string(payload)}).status();
}

struct SignalListener::Impl {
  std::string url;
  std::string channel;
  std::vector<std::string> heard;
  // The receiver refers to the connection: it goes first.
  std::unique_ptr<pqxx::connection> connection;
  std::unique_ptr<Receiver> receiver;

  void Drop() {
    receiver.reset();
    connection.reset();
  }
};

SignalListener::SignalListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SignalListener::~SignalListener() {
  if (impl_) impl_->Drop();
}

std::unique_ptr<SignalListener> SignalListener::For(const Database& db, std::string database_url,
                                                    std::string channel) {
  if (db.Backend() != BackendKind::kPostgres) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->url = std::move(database_url);
  impl->channel = std::move(channel);
  return std::unique_ptr<SignalListener>(new SignalListener(std::move(impl)));
}

StatusOr<std::vector<std::string>> SignalListener::Wait(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  std::vector<std::string> out;
  try {
    if (!s.connection) {
      s.connection = std::make_unique<pqxx::connection>(s.url);
      // Registering the receiver sends LISTEN on the channel.
      s.receiver = std::make_unique<Receiver>(*s.connection, s.channel, s.heard);
    }
    s.connection->get_notifs();
    if (s.heard.empty()) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
      s.connection->await_notification(static_cast<long>(us / 1'000'000),
                                       static_cast<long>(us % 1'000'000));
    }
    // libpqxx may report a connection it found broken only by closing it.
    if (!s.connection->is_open()) throw pqxx::broken_connection("the connection was closed");
    out.swap(s.heard);
    return out;
  } catch (const std::exception& e) {
    s.heard.clear();
    s.Drop();
    std::this_thread::sleep_for(timeout);
    return Unavailable(std::string("listening for signals on PostgreSQL failed: ") + e.what());
  }
}

}  // namespace gpunex::platform::store
