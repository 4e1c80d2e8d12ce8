// Test support: a self-signed certificate for "localhost" and 127.0.0.1 with its key, as
// PEM files in a temporary folder removed on destruction. For tests only.
#pragma once

#include <filesystem>
#include <string>

namespace gpunex::testing {

class TlsFiles {
 public:
  TlsFiles();
  ~TlsFiles();
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  // Whether the files were made.
  bool ok() const { return ok_; }
  std::string cert_path() const { return (dir_ / "cert.pem").string(); }
  std::string key_path() const { return (dir_ / "key.pem").string(); }

 private:
  std::filesystem::path dir_;
  bool ok_ = false;
};

}  // namespace gpunex::testing
