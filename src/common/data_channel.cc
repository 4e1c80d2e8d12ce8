#include "common/data_channel.h"

#include <limits>
#include <optional>

#include "common/agent_protocol.h"
#include "common/json.h"
#include "common/mux.h"

namespace gpunex {

std::string FilesPathProblem(std::string_view path) {
  if (path.empty() || path.front() != '/') return "must be an absolute path (starting with /)";
  if (path.size() > kMaxFilesPath) {
    return "must be at most " + std::to_string(kMaxFilesPath) + " bytes";
  }
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return "must not contain control characters";
    }
  }
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view segment = path.substr(start, slash - start);
    if (segment == "." || segment == "..") return "must not have . or .. segments";
    start = slash + 1;
  }
  return "";
}

std::string ExecCommandProblem(const std::vector<std::string>& command) {
  if (command.empty()) return "name the program to run (at least one argument)";
  if (command.size() > kMaxExecArgs) {
    return "has more than " + std::to_string(kMaxExecArgs) + " arguments";
  }
  if (command.front().empty()) return "must start with the program to run";
  size_t bytes = 0;
  for (const std::string& arg : command) {
    if (!IsCleanText(arg, /*multiline=*/true)) {
      return "must be UTF-8 without control characters (tab and newline allowed)";
    }
    bytes += json::serialize(json::value(arg)).size();
  }
  if (bytes > kMaxExecCommandBytes) {
    return "must be at most " + std::to_string(kMaxExecCommandBytes) + " bytes in all";
  }
  return "";
}

std::string EncodeStreamTarget(const StreamTarget& target) {
  if (target.kind == StreamTarget::Kind::kExec) {
    json::array command;
    for (const std::string& arg : target.command) command.emplace_back(arg);
    return ToJsonText(json::object{{"kind", "exec"},
                                   {"workload_id", target.workload_id},
                                   {"command", std::move(command)},
                                   {"tty", target.tty},
                                   {"stdin", target.open_stdin}});
  }
  if (target.kind == StreamTarget::Kind::kFiles) {
    json::object o{{"kind", "files"},
                   {"workload_id", target.workload_id},
                   {"op", target.put ? "put" : "get"},
                   {"path", target.path}};
    if (target.put) {
      o["chunked"] = target.chunked;
      o["length"] = target.length;
    }
    return ToJsonText(o);
  }
  return ToJsonText(
      json::object{{"kind", "port"}, {"workload_id", target.workload_id}, {"port", target.port}});
}

StatusOr<StreamTarget> ParseStreamTarget(std::string_view payload) {
  if (payload.size() > mux::kMaxTargetBytes) return InvalidArgument("the target is too long");
  auto parsed = ParseJson(payload);
  if (!parsed.ok() || !parsed->is_object()) {
    return InvalidArgument("the target is not a JSON object");
  }
  FieldErrors errors;
  JsonReader r(parsed->get_object(), "", &errors);
  StreamTarget t;
  std::optional<std::string> kind = r.String("kind", true, 16);
  if (kind && *kind == "files") {
    t.kind = StreamTarget::Kind::kFiles;
    r.RejectUnknown({"kind", "workload_id", "op", "path", "chunked", "length"});
    if (auto op = r.String("op", true, 8)) {
      if (*op != "get" && *op != "put") r.Fail("op", "must be \"get\" or \"put\"");
      t.put = *op == "put";
    }
    if (auto path = r.String("path", true, kMaxFilesPath)) {
      if (std::string why = FilesPathProblem(*path); !why.empty()) {
        r.Fail("path", why);
      } else {
        t.path = *path;
      }
    }
    if (t.put) {
      t.chunked = r.Bool("chunked", false).value_or(false);
      t.length = static_cast<uint64_t>(
          r.Int("length", false, 0, std::numeric_limits<int64_t>::max()).value_or(0));
    }
  } else if (kind && *kind == "exec") {
    t.kind = StreamTarget::Kind::kExec;
    r.RejectUnknown({"kind", "workload_id", "command", "tty", "stdin"});
    if (const json::array* args = r.Array("command", true, 1, kMaxExecArgs)) {
      for (const json::value& arg : *args) {
        if (!arg.is_string()) {
          r.Fail("command", "must be an array of strings");
          t.command.clear();
          break;
        }
        t.command.emplace_back(arg.get_string());
      }
      if (std::string why = ExecCommandProblem(t.command); !why.empty() && !t.command.empty()) {
        r.Fail("command", why);
      }
    }
    t.tty = r.Bool("tty", false).value_or(false);
    t.open_stdin = r.Bool("stdin", false).value_or(true);
  } else {
    r.RejectUnknown({"kind", "workload_id", "port"});
    if (kind && *kind != "port") r.Fail("kind", "must be \"port\", \"files\" or \"exec\"");
    if (auto port = r.Int("port", true, 1, 65535)) t.port = static_cast<uint16_t>(*port);
  }
  if (auto id = r.String("workload_id", true, 64)) {
    if (protocol::IsWorkloadId(*id)) {
      t.workload_id = *id;
    } else {
      r.Fail("workload_id", "is not a workload id");
    }
  }
  if (!errors.empty()) {
    return InvalidArgument("bad target: " + errors.begin()->first + " " + errors.begin()->second);
  }
  return t;
}

}  // namespace gpunex
