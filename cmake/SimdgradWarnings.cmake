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
