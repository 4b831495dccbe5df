#!/bin/sh
# A test this build cannot run (tests/CMakeLists.txt lockstep_skip_test): says why, exit 77 (ctest:
# "Skipped").
echo "SKIPPED: $1"
exit 77
