# Third-party libraries: OpenMP (threads), SLEEF (vector math, through pkg-config: Debian ships
# no CMake package for it) and libm. simdgrad_deps carries them to every target that links it.
find_package(OpenMP REQUIRED COMPONENTS C)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SLEEF REQUIRED IMPORTED_TARGET sleef)
find_package(Threads REQUIRED)

add_library(simdgrad_deps INTERFACE)
target_link_libraries(simdgrad_deps INTERFACE OpenMP::OpenMP_C PkgConfig::SLEEF Threads::Threads
                                              m)

# DLPack (Debian: libdlpack-dev, header only) is optional: with it the library has sg_to_dlpack
# and sg_from_dlpack (and their DLPack 1.x versioned forms) and installs simdgrad/dlpack.h;
# without it, neither. SIMDGRAD_DLPACK_INCLUDE_DIR names another header's folder (the one
# holding dlpack/dlpack.h), e.g. a DLPack 1.x one, instead of the system's.
set(SIMDGRAD_DLPACK_INCLUDE_DIR "" CACHE PATH "folder holding dlpack/dlpack.h (default: find it)")
if(SIMDGRAD_DLPACK_INCLUDE_DIR)
  if(NOT EXISTS ${SIMDGRAD_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h)
    message(FATAL_ERROR "SIMDGRAD_DLPACK_INCLUDE_DIR: no dlpack/dlpack.h in "
                        "${SIMDGRAD_DLPACK_INCLUDE_DIR}")
  endif()
  add_library(dlpack::dlpack INTERFACE IMPORTED)
  set_target_properties(dlpack::dlpack PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                  ${SIMDGRAD_DLPACK_INCLUDE_DIR})
else()
  find_package(dlpack QUIET)
endif()
if(TARGET dlpack::dlpack)
  set(SIMDGRAD_HAVE_DLPACK ON)
else()
  set(SIMDGRAD_HAVE_DLPACK OFF)
  message(STATUS "simdgrad: no DLPack header (Debian: libdlpack-dev): building without "
                 "sg_to_dlpack / sg_from_dlpack")
endif()
