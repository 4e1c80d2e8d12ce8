// HostFacts: what the provider agent reports about the host besides its GPUs (SPEC
// AGT-2): CPU, memory, the disk holding the agent's work directory, operating system
// and kernel.
//
// The agent runs in a container. /proc is the host's for the kernel, CPUs and memory
// (they are not namespaced), but /etc is the container's: to report the host's OS, mount
// the host's os-release file into the container (a bind mount of /etc/os-release
// resolves its symlink on the host) and pass the directory as `etc_root`. The roots are
// parameters so that tests read fixture files.
//
// Thread-safety: CollectHostFacts only reads files; call it from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/json.h"
#include "common/status.h"

namespace gpunex::agent {

// Unknown text is "", unknown numbers -1; ToJson writes both as null.
struct HostFacts {
  std::string hostname;        // as the kernel has it (the container's own unless --uts=host)
  std::string cpu_model;       // "AMD EPYC 9654 96-Core Processor"; "" where /proc lacks it
  int cpu_cores = -1;          // logical CPUs (hardware threads) the kernel lists
  int64_t ram_mb = -1;         // MemTotal, MiB
  int64_t disk_total_mb = -1;  // the file system holding work_dir, MiB
  int64_t disk_free_mb = -1;   // of it, what an unprivileged process may still use
  std::string os;              // PRETTY_NAME of os-release: "Ubuntu 22.04.4 LTS"
  std::string kernel;          // release, as uname -r: "6.5.0-35-generic"
  std::string docker_version;  // not collected here: the caller fills it from the runtime
};

// Reads <proc_root>/cpuinfo, meminfo, sys/kernel/{hostname,osrelease}; os-release from
// <etc_root>/os-release, else from usr/lib/os-release beside etc_root (the systemd
// fallback); and statvfs(work_dir).
// Fails with kUnavailable when /proc's cpuinfo or meminfo cannot be read or lack the
// CPU list or MemTotal, kNotFound when work_dir does not exist, kUnavailable when it
// cannot be examined otherwise. A missing os-release, hostname or kernel file leaves that
// fact empty.
StatusOr<HostFacts> CollectHostFacts(const std::string& work_dir,
                                     const std::string& proc_root = "/proc",
                                     const std::string& etc_root = "/etc");

// Wire format (agent -> platform): hostname, cpu_model, cpu_cores, ram_mb,
// disk_total_mb, disk_free_mb, os, kernel, docker_version.
json::object ToJson(const HostFacts& facts);

}  // namespace gpunex::agent
