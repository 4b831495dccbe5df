// A plugin built against another plugin ABI (999): the loader must refuse it before calling its
// init, naming both ABI numbers (tests only). Written without the header on purpose.
extern "C" __attribute__((visibility("default"))) int lockstep_plugin_abi() {
  return 999;
}
extern "C" __attribute__((visibility("default"))) void lockstep_plugin_init(void*) {
  __builtin_trap();  // never called
}
