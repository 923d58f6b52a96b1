# Warning flags for every simdgrad target, -Werror when SIMDGRAD_WERROR (CI) is on, and the
# sanitizer build when SIMDGRAD_SANITIZE names some.
add_compile_options($<$<COMPILE_LANGUAGE:C>:-Wall> $<$<COMPILE_LANGUAGE:C>:-Wextra>
                    $<$<COMPILE_LANGUAGE:C>:-Wpedantic> $<$<COMPILE_LANGUAGE:C>:-Wshadow>
                    $<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes>)
if(SIMDGRAD_WERROR)
  add_compile_options(-Werror)
endif()
if(SIMDGRAD_SANITIZE)
  add_compile_options(-fsanitize=${SIMDGRAD_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SIMDGRAD_SANITIZE})
endif()
if(SIMDGRAD_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SIMDGRAD_FUZZ needs clang (libFuzzer): CC=clang cmake ...")
  endif()
  # Coverage for the fuzzer everywhere; the harnesses link libFuzzer (tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()
