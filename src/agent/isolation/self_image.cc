#include "agent/isolation/self_image.h"

#include <elf.h>
#include <link.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>

#include "common/thread_annotations.h"

namespace gpunex::agent::isolation {
namespace {

// The loader's interpreter and the shared objects it had mapped (absolute paths), in load
// order.
struct LoadedObjects {
  std::string interpreter;
  std::vector<std::string> libraries;
};

int CollectObject(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<LoadedObjects*>(data);
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') {
    // The executable: its PT_INTERP names the loader, mapped with the rest of the image.
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      if (info->dlpi_phdr[i].p_type == PT_INTERP) {
        out->interpreter =
            reinterpret_cast<const char*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      }
    }
  } else if (name[0] == '/') {  // linux-vdso.so.1 has no file
    out->libraries.emplace_back(name);
  }
  return 0;
}

LoadedObjects Snapshot() {
  LoadedObjects objects;
  dl_iterate_phdr(CollectObject, &objects);
  return objects;
}

// Taken while static objects are initialised: before main(), so before any dlopen().
const LoadedObjects& StartupObjects() {
  static const LoadedObjects objects = Snapshot();
  return objects;
}
[[maybe_unused]] const LoadedObjects& g_startup_objects = StartupObjects();

// The running program's files do not change under it (/proc/self/exe is the file it
// started from, even if replaced since): EnsureSelfImage hashes them once per process.
Mutex g_ref_mu;
std::string g_ref GUARDED_BY(g_ref_mu);

constexpr size_t kBlock = 512;

// Octal, zero-padded to `width` digits, then NUL: a ustar number field of width + 1 bytes.
void PutOctal(char* field, size_t width, uint64_t value) {
  for (size_t i = width; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  field[width] = '\0';
}

// One ustar header for `path` (relative, without the leading '/').
Status PutHeader(std::FILE* out, const std::string& path, char type, uint64_t size) {
  char h[kBlock] = {};
  std::string name = path, prefix;
  if (name.size() > 100) {
    // Split at a '/' so that the name fits in 100 bytes and the prefix in 155.
    size_t cut = path.find('/', path.size() - 101);
    if (cut == std::string::npos || cut + 1 >= path.size() || cut > 155) {
      return InvalidArgument("path " + path + " is too long for a ustar archive");
    }
    prefix = path.substr(0, cut);
    name = path.substr(cut + 1);
  }
  std::memcpy(h, name.data(), name.size());
  PutOctal(h + 100, 7, 0755);
  PutOctal(h + 108, 7, 0);
  PutOctal(h + 116, 7, 0);
  PutOctal(h + 124, 11, size);
  PutOctal(h + 136, 11, 0);
  h[156] = type;
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memcpy(h + 345, prefix.data(), prefix.size());
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  PutOctal(h + 148, 6, sum);
  h[155] = ' ';
  if (std::fwrite(h, 1, kBlock, out) != kBlock) return Internal("cannot write the image tar");
  return Status::Ok();
}

// Feeds the file at `source` to `on_chunk`; its size.
StatusOr<uint64_t> ReadFile(const std::string& source,
                            const std::function<Status(const char*, size_t)>& on_chunk) {
  std::FILE* f = std::fopen(source.c_str(), "rb");
  if (!f) return NotFound("cannot read " + source + ": " + std::strerror(errno));
  char buf[1 << 16];
  uint64_t total = 0;
  Status st;
  while (st.ok()) {
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    if (n == 0) break;
    st = on_chunk(buf, n);
    total += n;
  }
  if (st.ok() && std::ferror(f)) st = Internal("cannot read " + source);
  std::fclose(f);
  if (!st.ok()) return st;
  return total;
}

}  // namespace

StatusOr<std::vector<ImageFile>> SelfImageFiles() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return Internal(std::string("cannot read /proc/self/exe: ") + std::strerror(errno));
  std::vector<ImageFile> files{{kSelfImageExecutable, "/proc/self/exe"}};
  std::set<std::string> seen{kSelfImageExecutable};
  const LoadedObjects& objects = StartupObjects();
  std::vector<std::string> paths = objects.libraries;
  if (!objects.interpreter.empty()) paths.push_back(objects.interpreter);
  for (const auto& p : paths) {
    if (seen.insert(p).second) files.push_back({p, p});
  }
  return files;
}

StatusOr<std::string> SelfImageRef(const std::vector<ImageFile>& files) {
  if (sodium_init() < 0) return Internal("libsodium failed to initialise");
  crypto_hash_sha256_state state;
  crypto_hash_sha256_init(&state);
  for (const auto& f : files) {
    crypto_hash_sha256_update(&state, reinterpret_cast<const unsigned char*>(f.path.c_str()),
                              f.path.size() + 1);
    GPUNEX_ASSIGN_OR_RETURN(
        uint64_t size, ReadFile(f.source, [&state](const char* data, size_t len) {
          crypto_hash_sha256_update(&state, reinterpret_cast<const unsigned char*>(data), len);
          return Status::Ok();
        }));
    const std::string sz = std::to_string(size);
    crypto_hash_sha256_update(&state, reinterpret_cast<const unsigned char*>(sz.c_str()),
                              sz.size() + 1);
  }
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(&state, digest);
  char hex[crypto_hash_sha256_BYTES * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
  return std::string(kSelfImageRepo) + ":" + std::string(hex, 16);
}

Status WriteImageTar(const std::vector<ImageFile>& files, const std::string& tar_path) {
  std::set<std::string> dirs;
  for (const auto& f : files) {
    if (!f.path.starts_with('/')) return InvalidArgument("path " + f.path + " is not absolute");
    for (size_t slash = f.path.find('/', 1); slash != std::string::npos;
         slash = f.path.find('/', slash + 1)) {
      dirs.insert(f.path.substr(1, slash));  // "usr/", "usr/lib/": parents first
    }
  }
  std::FILE* out = std::fopen(tar_path.c_str(), "wb");
  if (!out) return Internal("cannot write " + tar_path + ": " + std::strerror(errno));
  Status st;
  for (auto it = dirs.begin(); st.ok() && it != dirs.end(); ++it) {
    st = PutHeader(out, *it, '5', 0);
  }
  for (auto it = files.begin(); st.ok() && it != files.end(); ++it) {
    struct stat info {};
    if (stat(it->source.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
      st = NotFound("cannot read " + it->source);
      break;
    }
    st = PutHeader(out, it->path.substr(1), '0', static_cast<uint64_t>(info.st_size));
    if (!st.ok()) break;
    auto size = ReadFile(it->source, [out](const char* data, size_t len) {
      return std::fwrite(data, 1, len, out) == len ? Status::Ok()
                                                   : Internal("cannot write the image tar");
    });
    if (!size.ok()) {
      st = size.status();
    } else if (*size != static_cast<uint64_t>(info.st_size)) {
      st = Internal(it->source + " changed while it was read");
    } else if (size_t pad = (kBlock - *size % kBlock) % kBlock; pad > 0) {
      const char zeros[kBlock] = {};
      if (std::fwrite(zeros, 1, pad, out) != pad) st = Internal("cannot write the image tar");
    }
  }
  if (st.ok()) {
    const char end[2 * kBlock] = {};
    if (std::fwrite(end, 1, sizeof end, out) != sizeof end) {
      st = Internal("cannot write the image tar");
    }
  }
  if (std::fclose(out) != 0 && st.ok()) st = Internal("cannot write " + tar_path);
  if (!st.ok()) std::remove(tar_path.c_str());
  return st;
}

StatusOr<std::string> EnsureSelfImage(DockerClient& docker, const std::string& work_dir) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<ImageFile> files, SelfImageFiles());
  std::string ref;
  {
    MutexLock lock(&g_ref_mu);
    if (g_ref.empty()) {
      GPUNEX_ASSIGN_OR_RETURN(g_ref, SelfImageRef(files));
    }
    ref = g_ref;
  }
  GPUNEX_ASSIGN_OR_RETURN(bool exists, docker.ImageExists(ref));
  if (exists) return ref;
  const std::string tar = work_dir + "/netprobe-image.tar";
  GPUNEX_RETURN_IF_ERROR(WriteImageTar(files, tar));
  Status st = docker.ImportImage(tar, ref);
  std::remove(tar.c_str());
  GPUNEX_RETURN_IF_ERROR(st);
  return ref;
}

}  // namespace gpunex::agent::isolation
