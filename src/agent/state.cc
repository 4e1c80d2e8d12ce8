#include "agent/state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/ids.h"

namespace gpunex::agent {
namespace {

constexpr size_t kMaxCommandRecords = 4096;

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Status AgentState::WriteFileAtomically(const std::string& path, const std::string& content,
                                       int mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return Unavailable("cannot sync " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Unavailable("cannot replace " + path + ": " + std::strerror(errno));
  }
  int dfd =
      ::open(std::filesystem::path(path).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<AgentState>> AgentState::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create the state directory " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  std::unique_ptr<AgentState> s(new AgentState(dir));
  MutexLock lock(&s->mu_);
  auto machine = ReadFile(dir + "/machine.json");
  if (machine.ok()) {
    auto v = ParseJson(*machine);
    if (!v.ok() || !v->is_object() || !v->get_object().contains("machine_key")) {
      return Internal(dir + "/machine.json is damaged; move it away to register as a new machine");
    }
    s->machine_key_ = std::string(v->at("machine_key").as_string());
    if (v->get_object().contains("machine_id") && v->at("machine_id").is_string()) {
      s->machine_id_ = std::string(v->at("machine_id").as_string());
    }
  } else {
    s->machine_key_ = NewSecret("mk");
    GPUNEX_RETURN_IF_ERROR(s->SaveMachine());
  }
  if (auto t = ReadFile(dir + "/token"); t.ok()) {
    std::string tok = *t;
    while (!tok.empty() && (tok.back() == '\n' || tok.back() == '\r' || tok.back() == ' '))
      tok.pop_back();
    s->token_ = tok;
  }
  if (auto c = ReadFile(dir + "/commands.json"); c.ok()) {
    auto v = ParseJson(*c);
    if (v.ok() && v->is_object()) {
      for (const auto& kv : v->get_object()) {
        if (!kv.value().is_object()) continue;
        const auto& o = kv.value().get_object();
        CommandRecord r;
        r.done = o.contains("done") && o.at("done").is_bool() && o.at("done").get_bool();
        r.ok = o.contains("ok") && o.at("ok").is_bool() && o.at("ok").get_bool();
        if (o.contains("error") && o.at("error").is_string()) r.error = o.at("error").get_string();
        if (o.contains("data") && o.at("data").is_object()) r.data = o.at("data").get_object();
        if (o.contains("at") && o.at("at").is_int64()) r.at = o.at("at").get_int64();
        s->commands_[std::string(kv.key())] = std::move(r);
      }
    }
  }
  return s;
}

std::string AgentState::machine_key() const {
  MutexLock lock(&mu_);
  return machine_key_;
}

std::string AgentState::machine_id() const {
  MutexLock lock(&mu_);
  return machine_id_;
}

Status AgentState::SetMachineId(const std::string& id) {
  MutexLock lock(&mu_);
  if (machine_id_ == id) return Status::Ok();
  machine_id_ = id;
  return SaveMachine();
}

std::string AgentState::token() const {
  MutexLock lock(&mu_);
  return token_;
}

Status AgentState::StoreToken(const std::string& token) {
  MutexLock lock(&mu_);
  GPUNEX_RETURN_IF_ERROR(WriteFileAtomically(dir_ + "/token", token + "\n", 0600));
  token_ = token;
  return Status::Ok();
}

std::optional<CommandRecord> AgentState::Command(const std::string& id) const {
  MutexLock lock(&mu_);
  auto it = commands_.find(id);
  if (it == commands_.end()) return std::nullopt;
  return it->second;
}

Status AgentState::Accept(const std::string& id) {
  MutexLock lock(&mu_);
  if (commands_.count(id)) return Status::Ok();
  commands_[id] = CommandRecord{false, false, "", {}, NowMicros()};
  return SaveCommands();
}

Status AgentState::Finish(const std::string& id, bool ok, std::string error, json::object data) {
  MutexLock lock(&mu_);
  commands_[id] = CommandRecord{true, ok, std::move(error), std::move(data), NowMicros()};
  return SaveCommands();
}

Status AgentState::SaveMachine() {
  json::object o{{"machine_key", machine_key_}, {"machine_id", machine_id_}};
  return WriteFileAtomically(dir_ + "/machine.json", ToJsonText(o) + "\n", 0600);
}

Status AgentState::SaveCommands() {
  // Keep the newest records: command ids sort by creation time.
  while (commands_.size() > kMaxCommandRecords) commands_.erase(commands_.begin());
  json::object all;
  for (const auto& [id, r] : commands_) {
    all[id] = json::object{
        {"done", r.done}, {"ok", r.ok}, {"error", r.error}, {"data", r.data}, {"at", r.at}};
  }
  return WriteFileAtomically(dir_ + "/commands.json", ToJsonText(all), 0600);
}

}  // namespace gpunex::agent
