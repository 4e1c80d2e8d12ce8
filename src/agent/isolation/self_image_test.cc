#include "agent/isolation/self_image.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <link.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "agent/runtime/test_dockerd.h"

namespace gpunex::agent::isolation {
namespace {

using ::testing::Contains;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using testing::RunShell;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpunex-selfimage.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::string out;
    RunShell("rm -rf " + path_, &out);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ + "/" + name, std::ios::binary) << content;
    return path_ + "/" + name;
  }

 private:
  std::string path_;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> Paths(const std::vector<ImageFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.path);
  return out;
}

TEST(SelfImage, HoldsTheExecutableItsLibrariesAndTheLoader) {
  auto files = SelfImageFiles();
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_FALSE(files->empty());
  EXPECT_EQ(files->front().path, kSelfImageExecutable);
  EXPECT_EQ(files->front().source, "/proc/self/exe");
  const std::vector<std::string> paths = Paths(*files);
  EXPECT_THAT(paths, Contains(EndsWith("/libc.so.6")));
  EXPECT_THAT(paths, Contains(MatchesRegex(".*/ld-linux.*\\.so\\.[0-9]+")))
      << "the loader, at the path the executable names";
  for (const auto& p : paths) EXPECT_EQ(p[0], '/') << p;
}

TEST(SelfImage, LeavesOutWhatIsLoadedLater) {
  // A library this program does not link, loaded now as NVML is by the agent.
  void* lib = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) GTEST_SKIP() << "no libcrypt.so.1 to load: " << dlerror();
  std::string loaded;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("libcrypt.so.1") != std::string::npos)
          *static_cast<std::string*>(data) = name;
        return 0;
      },
      &loaded);
  ASSERT_FALSE(loaded.empty());
  auto files = SelfImageFiles();
  ASSERT_TRUE(files.ok());
  EXPECT_THAT(Paths(*files), ::testing::Not(Contains(loaded)));
  dlclose(lib);
}

TEST(SelfImage, TagFollowsTheContent) {
  TempDir dir;
  std::vector<ImageFile> files{{"/gpunex/self", dir.Write("a", "program")},
                               {"/lib/x.so", dir.Write("b", "library")}};
  auto ref = SelfImageRef(files);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_THAT(*ref, MatchesRegex("gpunex/netprobe:[0-9a-f]{16}"));
  EXPECT_EQ(*SelfImageRef(files), *ref) << "stable";
  dir.Write("b", "library, rebuilt");
  EXPECT_NE(*SelfImageRef(files), *ref);
  files[1].path = "/lib/y.so";
  dir.Write("b", "library");
  EXPECT_NE(*SelfImageRef(files), *ref) << "the paths count too";
  files[1].source = dir.path() + "/missing";
  EXPECT_EQ(SelfImageRef(files).status().code(), StatusCode::kNotFound);
}

TEST(SelfImage, WritesATarThatTarReads) {
  TempDir dir;
  const std::string long_dir = "/usr/lib/" + std::string(60, 'd') + "/" + std::string(60, 'e');
  std::vector<ImageFile> files{{"/gpunex/self", dir.Write("a", std::string(1000, 'x'))},
                               {"/usr/lib/x86_64-linux-gnu/liba.so.1", dir.Write("b", "")},
                               {long_dir + "/libc.so", dir.Write("c", "long path")}};
  const std::string tar = dir.path() + "/image.tar";
  Status st = WriteImageTar(files, tar);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Slurp(tar).size() % 512, 0u);
  std::string out;
  ASSERT_EQ(RunShell("tar -tf " + tar, &out), 0) << out;
  const std::string long_rel = long_dir.substr(1);
  EXPECT_EQ(out, "gpunex/\nusr/\nusr/lib/\nusr/lib/" + std::string(60, 'd') + "/\n" + long_rel +
                     "/\nusr/lib/x86_64-linux-gnu/\ngpunex/self\n"
                     "usr/lib/x86_64-linux-gnu/liba.so.1\n" +
                     long_rel + "/libc.so\n");
  ASSERT_EQ(RunShell("mkdir " + dir.path() + "/x && tar -C " + dir.path() + "/x -xf " + tar, &out),
            0)
      << out;
  EXPECT_EQ(Slurp(dir.path() + "/x/gpunex/self"), std::string(1000, 'x'));
  EXPECT_EQ(Slurp(dir.path() + "/x" + long_dir + "/libc.so"), "long path");
  ASSERT_EQ(RunShell("stat -c %a " + dir.path() + "/x/gpunex/self", &out), 0);
  EXPECT_EQ(out, "755\n");
}

TEST(SelfImage, RefusesWhatATarCannotHold) {
  TempDir dir;
  const std::string tar = dir.path() + "/image.tar";
  const std::string a = dir.Write("a", "x");
  EXPECT_EQ(WriteImageTar({{"relative/path", a}}, tar).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteImageTar({{"/" + std::string(300, 'p'), a}}, tar).code(),
            StatusCode::kInvalidArgument);
  Status missing = WriteImageTar({{"/gpunex/self", dir.path() + "/missing"}}, tar);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("missing"));
  EXPECT_FALSE(std::ifstream(tar).good()) << "no half-written tar is left";
}

}  // namespace
}  // namespace gpunex::agent::isolation
