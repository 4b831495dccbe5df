#include "harness/util/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace lockstep::util {

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot read");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: cannot initialise OpenSSL's digest");
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error(path.string() + ": read error");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  std::string hex;
  char h[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(h, sizeof h, "%02x", md[i]);
    hex += h;
  }
  return hex;
}

}  // namespace lockstep::util
