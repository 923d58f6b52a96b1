# Installation: headers, both libraries, the CMake package (simdgrad::simdgrad, the shared
# library; simdgrad::simdgrad_static) and simdgrad.pc for pkg-config.
include(CMakePackageConfigHelpers)

set(SIMDGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/simdgrad)

# Two export sets: the shared library's (no dependencies for its consumers: OpenMP, SLEEF and
# libm are the .so's own, private) and the static library's, which simdgradConfig.cmake loads
# only once it has found SLEEF and threads.
install(TARGETS simdgrad EXPORT simdgradTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS simdgrad_static EXPORT simdgradStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# simdgrad/dlpack.h only when the library has its functions; it includes <dlpack/dlpack.h>, so
# its consumers need that header too (Debian: libdlpack-dev).
# simdgrad/distributed.h likewise only with simdgrad_mpi (distributed/CMakeLists.txt).
set(SIMDGRAD_HEADER_EXCLUDES "")
if(NOT SIMDGRAD_HAVE_DLPACK)
  list(APPEND SIMDGRAD_HEADER_EXCLUDES PATTERN dlpack.h EXCLUDE)
endif()
if(NOT SIMDGRAD_HAVE_MPI)
  list(APPEND SIMDGRAD_HEADER_EXCLUDES PATTERN distributed.h EXCLUDE)
endif()
install(DIRECTORY include/simdgrad DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        ${SIMDGRAD_HEADER_EXCLUDES})

install(EXPORT simdgradTargets NAMESPACE simdgrad:: DESTINATION ${SIMDGRAD_CMAKE_DIR})
install(EXPORT simdgradStaticTargets NAMESPACE simdgrad:: DESTINATION ${SIMDGRAD_CMAKE_DIR})
configure_package_config_file(cmake/simdgradConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/simdgradConfig.cmake
                              INSTALL_DESTINATION ${SIMDGRAD_CMAKE_DIR})
# 0.x: a minor release may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/simdgradConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/simdgradConfig.cmake
              ${PROJECT_BINARY_DIR}/simdgradConfigVersion.cmake
        DESTINATION ${SIMDGRAD_CMAKE_DIR})

# simdgrad.pc sits in <libdir>/pkgconfig and names the prefix relative to itself, so the
# install can move (cmake --install --prefix, make install PREFIX=...).
file(RELATIVE_PATH SIMDGRAD_PC_PREFIX_FROM_PCDIR /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" SIMDGRAD_PC_PREFIX_FROM_PCDIR "${SIMDGRAD_PC_PREFIX_FROM_PCDIR}")
configure_file(cmake/simdgrad.pc.in ${PROJECT_BINARY_DIR}/simdgrad.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/simdgrad.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
