# Third-party libraries: OpenMP (threads), SLEEF (vector math, through pkg-config: Debian ships
# no CMake package for it) and libm. simdgrad_deps carries them to every target that links it.
find_package(OpenMP REQUIRED COMPONENTS C)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SLEEF REQUIRED IMPORTED_TARGET sleef)
find_package(Threads REQUIRED)

add_library(simdgrad_deps INTERFACE)
target_link_libraries(simdgrad_deps INTERFACE OpenMP::OpenMP_C PkgConfig::SLEEF Threads::Threads
                                              m)
