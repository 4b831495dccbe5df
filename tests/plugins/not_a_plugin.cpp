// A shared library that is not a Lockstep plugin: no lockstep_plugin_init (tests only).
extern "C" int lockstep_test_not_a_plugin() {
  return 42;
}
