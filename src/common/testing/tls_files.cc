#include "common/testing/tls_files.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace gpunex::testing {

TlsFiles::TlsFiles() {
  static std::atomic<int> counter{0};
  dir_ = std::filesystem::temp_directory_path() /
         ("gpunex_tls_" + std::to_string(::getpid()) + "_" + std::to_string(++counter));
  std::filesystem::create_directories(dir_);
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX v3;
  X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san =
      X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  ok_ = key != nullptr && san != nullptr && X509_add_ext(cert, san, -1) == 1 &&
        X509_sign(cert, key, EVP_sha256()) > 0;
  X509_EXTENSION_free(san);
  FILE* f = std::fopen(cert_path().c_str(), "w");
  ok_ = ok_ && f != nullptr && PEM_write_X509(f, cert) == 1;
  if (f != nullptr) std::fclose(f);
  f = std::fopen(key_path().c_str(), "w");
  ok_ = ok_ && f != nullptr &&
        PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (f != nullptr) std::fclose(f);
  X509_free(cert);
  EVP_PKEY_free(key);
}

TlsFiles::~TlsFiles() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace gpunex::testing
