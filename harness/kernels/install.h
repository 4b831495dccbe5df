// Installs the registry (built-ins and the plugin loader) into this process: configs are checked
// against it from then on. Idempotent; the lockstep binary calls it before reading any config.
// (A header of its own so that main.cpp need not include LibTorch.)
#pragma once

namespace lockstep::registry {

void install();

}  // namespace lockstep::registry
