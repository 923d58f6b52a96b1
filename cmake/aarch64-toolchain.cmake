# Cross-compiling simdgrad for aarch64 Linux on a Debian x86-64 host, with the tests run under
# qemu-user (`make test-arm64` sets all of this up):
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake \
#         -DARM64_SYSROOT=/abs/path/sysroot
#
# Compilers: gcc-aarch64-linux-gnu / g++-aarch64-linux-gnu. Libraries: the multiarch arm64
# packages (libsleef-dev:arm64, libbenchmark-dev:arm64, libgomp1:arm64, ...) plus ARM64_SYSROOT,
# a folder holding Criterion's arm64 .debs unpacked with dpkg -x (libcriterion-dev:arm64 cannot
# be installed next to the amd64 one: its dependencies' versions differ between the two).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(NOT ARM64_SYSROOT)
  set(ARM64_SYSROOT "$ENV{ARM64_SYSROOT}")
endif()
# try_compile projects re-read this file; pass the folder on to them.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ARM64_SYSROOT)

set(_arm64_libdirs "${ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu:${ARM64_SYSROOT}/lib/aarch64-linux-gnu")
# Search the host root (multiarch arm64 packages) and the sysroot, for arm64 libraries only.
set(CMAKE_FIND_ROOT_PATH "/" "${ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The linker must find libcriterion's own dependencies (libgit2, nanomsg, ...) in the sysroot.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_arm64_libdirs}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_arm64_libdirs}")
# pkg-config must see the arm64 sleef.pc, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# ctest runs the binaries through qemu. No -L: with libc6:arm64 installed, qemu's -L would pair
# the cross ld.so with the multiarch libc.so.6, and then pthread_create spins forever.
set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-E;LD_LIBRARY_PATH=${_arm64_libdirs}")
