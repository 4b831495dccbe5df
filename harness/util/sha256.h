// SHA-256 of a file's bytes (OpenSSL's libcrypto), as 64 lowercase hex digits: identifies the
// exact build of a plugin in reports and the history.
#pragma once

#include <filesystem>
#include <string>

namespace lockstep::util {

// Throws std::runtime_error naming the path when the file cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace lockstep::util
