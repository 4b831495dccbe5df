# Install rules of the plugin SDK. The package's version is the plugin ABI (LOCKSTEP_PLUGIN_ABI in
# the header, the one place it is written); a plugin asking for another ABI does not find it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(STRINGS "${PROJECT_SOURCE_DIR}/include/lockstep/plugin.h" _abi_line
     REGEX "^#define LOCKSTEP_PLUGIN_ABI [0-9]+")
string(REGEX REPLACE "^#define LOCKSTEP_PLUGIN_ABI ([0-9]+).*" "\\1" LOCKSTEP_PLUGIN_ABI "${_abi_line}")

set(_pkg_dir ${CMAKE_INSTALL_LIBDIR}/cmake/LockstepPlugin)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/LockstepPluginConfig.cmake.in
  ${PROJECT_BINARY_DIR}/LockstepPluginConfig.cmake
  INSTALL_DESTINATION ${_pkg_dir}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/LockstepPluginConfigVersion.cmake
  VERSION ${LOCKSTEP_PLUGIN_ABI}
  COMPATIBILITY ExactVersion)

install(FILES ${PROJECT_SOURCE_DIR}/include/lockstep/plugin.h ${PROJECT_SOURCE_DIR}/include/lockstep/trainer.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockstep COMPONENT plugin_sdk)
install(FILES ${PROJECT_BINARY_DIR}/LockstepPluginConfig.cmake
              ${PROJECT_BINARY_DIR}/LockstepPluginConfigVersion.cmake
        DESTINATION ${_pkg_dir} COMPONENT plugin_sdk)
install(TARGETS lockstep RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
