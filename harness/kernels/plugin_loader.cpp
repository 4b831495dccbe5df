// Loading a plugin: dlopen, the interface and LibTorch checks, then its init against a staging
// registry that commits only when the init succeeded. Every failure is one line naming the reason
// (the config error adds the file).
#include <dlfcn.h>

#include <filesystem>
#include <memory>

#include "harness/kernels/kernel_table.h"
#include "harness/kernels/registry.h"
#include "harness/util/sha256.h"

namespace lockstep::registry {
namespace fs = std::filesystem;

namespace {

std::string major_minor(const std::string& v) {
  const auto a = v.find('.');
  const auto b = a == std::string::npos ? a : v.find('.', a + 1);
  return v.substr(0, b);
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

PluginFile load_plugin_file(const std::string& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) throw std::runtime_error("no such file");
  if (fs::is_directory(file, ec)) throw std::runtime_error("a folder, not a shared library");
  PluginFile id{file, util::sha256_file(file)};

  // RTLD_LOCAL: two plugins may define the same symbols; RTLD_NOW: a missing symbol is an
  // error here, not a crash in the middle of a run. A plugin that fails is never dlclose'd: its
  // code may still be referenced (an exception object, a static initialiser's registrations),
  // and the process is about to stop on the config error anyway.
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error("cannot load: " + one_line(::dlerror()));

  using AbiFn = int (*)();
  using VersionFn = const char* (*)();
  using InitFn = void (*)(plugin::Registry&);
  auto abi = reinterpret_cast<AbiFn>(::dlsym(handle, "lockstep_plugin_abi"));
  auto init = reinterpret_cast<InitFn>(::dlsym(handle, "lockstep_plugin_init"));
  auto torch = reinterpret_cast<VersionFn>(::dlsym(handle, "lockstep_plugin_torch_version"));
  if (!init)
    throw std::runtime_error(
        "no entry point: it does not export extern \"C\" void "
        "lockstep_plugin_init(lockstep::plugin::Registry&)");
  if (!abi)
    throw std::runtime_error(
        "no lockstep_plugin_abi(): it was not built against include/lockstep/plugin.h");
  if (abi() != LOCKSTEP_PLUGIN_ABI)
    throw std::runtime_error("built against plugin ABI " + std::to_string(abi()) +
                             ", this lockstep has plugin ABI " +
                             std::to_string(LOCKSTEP_PLUGIN_ABI) +
                             ": rebuild it against this lockstep's include/lockstep/plugin.h");
  if (torch && major_minor(torch()) != major_minor(TORCH_VERSION))
    throw std::runtime_error("built against LibTorch " + std::string(torch()) +
                             ", this lockstep uses " + TORCH_VERSION +
                             ": rebuild it against the same LibTorch");
  StagingRegistry staged(file);
  std::string failure;
  try {
    init(staged);
  } catch (const RegistrationError& e) {
    failure = e.what();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    failure = "lockstep_plugin_init threw: " + what.substr(0, what.find('\n'));
  } catch (...) {
    failure = "lockstep_plugin_init threw a non-standard exception";
  }
  if (!failure.empty()) throw std::runtime_error(one_line(failure));
  staged.commit();  // the library stays loaded for the life of the process
  return id;
}

}  // namespace lockstep::registry
