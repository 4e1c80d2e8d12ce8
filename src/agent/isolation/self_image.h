// An image of the running program, for the network isolation check's throw-away
// containers (isolation_check.h runs it as `<executable> netprobe ...`).
//
// The image holds the process's executable at kSelfImageExecutable, and the shared
// libraries the dynamic loader mapped for it when the process started, with the loader
// itself, each at the path the process loaded it from (the loader finds them there without
// ld.so.cache). Nothing else: no shell, no /etc. It is imported into the engine (as
// `docker import` does) under kSelfImageRepo, tagged with the first 16 hex digits of the
// SHA-256 of its files, so the same build of the agent imports it once per engine and a new
// build gets its own. It works the same for the agent in its container (the installer's
// way) and for the agent run as a plain process (tests, development), needs no registry and
// cannot fall out of step with the agent that runs it.
//
// Libraries loaded later with dlopen (NVML) are left out: the snapshot of the loaded
// objects is taken while the program's static objects are initialised, before main().
//
// Thread-safety: EnsureSelfImage may be called from any thread; calls for one engine
// should not overlap (two imports of one tag are harmless, only slower).
#pragma once

#include <string>
#include <vector>

#include "agent/runtime/docker_client.h"
#include "common/status.h"

namespace gpunex::agent::isolation {

inline constexpr char kSelfImageRepo[] = "gpunex/netprobe";
inline constexpr char kSelfImageExecutable[] = "/gpunex/self";

// One file of the image.
struct ImageFile {
  std::string path;    // inside the image, absolute
  std::string source;  // where it is read from
};

// The files of the image: the executable first, then the libraries and the loader.
// Fails when /proc/self/exe cannot be read.
StatusOr<std::vector<ImageFile>> SelfImageFiles();

// The tag the files would be imported under (kSelfImageRepo:<16 hex digits>).
StatusOr<std::string> SelfImageRef(const std::vector<ImageFile>& files);

// Writes `files` as an uncompressed tar (ustar: their parent folders, then the files, mode
// 0755, owned by root) to `tar_path`. Fails when a file cannot be read or a path is longer
// than ustar allows (255 bytes).
Status WriteImageTar(const std::vector<ImageFile>& files, const std::string& tar_path);

// Makes sure the engine holds the image of this program, importing it when it does not
// (through a tar file in `work_dir`, removed afterwards); returns its reference.
StatusOr<std::string> EnsureSelfImage(DockerClient& docker, const std::string& work_dir);

}  // namespace gpunex::agent::isolation
