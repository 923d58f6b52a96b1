#!/bin/sh
# The kernel folders' layout rule (docs/kernels.md): the templates in kernels_simd/ name no ISA
# (no intrinsic, vector type, ISA macro or ISA-suffixed SLEEF call: those belong in a
# vec_<isa>.h), and no kernels_<isa>/ file includes anything from a sibling ISA's folder.
# Usage: check_layout.sh <source root>. Prints each violation and exits 1 if there is one.
root=${1:?usage: check_layout.sh <source root>}
cd "$root" || exit 2
bad=0

isa_words='_mm[0-9]*_|__m(64|128|256|512)|__AVX|__SSE|__ARM_|__aarch64__|__x86_64__'
isa_words="$isa_words|float32x[0-9]|uint32x[0-9]|int32x[0-9]|\\bv[a-z0-9]+q_[a-z0-9_]+\\("
isa_words="$isa_words|Sleef_[a-z0-9]+_u[0-9]+(avx|sse|advsimd|sve)"
if grep -nE "$isa_words" kernels_simd/*.inc; then
  echo "check_layout: the ISA-specific code above belongs in kernels_<isa>/vec_<isa>.h"
  bad=1
fi

for dir in kernels_*/; do
  own=${dir%/}
  for file in "$own"/*; do
    [ -f "$file" ] || continue
    grep -nE '#include +"kernels_[a-z0-9]+/' "$file" | while IFS= read -r line; do
      target=$(printf '%s\n' "$line" | sed -E 's/.*#include +"(kernels_[a-z0-9]+)\/.*/\1/')
      case $target in
      "$own" | kernels_simd | kernels_scalar) ;;
      *) echo "$file: includes from $target: $line" ;;
      esac
    done
  done
done >"${TMPDIR:-/tmp}/check_layout.$$"
if [ -s "${TMPDIR:-/tmp}/check_layout.$$" ]; then
  cat "${TMPDIR:-/tmp}/check_layout.$$"
  echo "check_layout: a kernels_<isa>/ folder includes from a sibling ISA's folder"
  bad=1
fi
rm -f "${TMPDIR:-/tmp}/check_layout.$$"

[ $bad = 0 ] && echo "check_layout: kernels_simd/ names no ISA; no ISA folder includes a sibling's"
exit $bad
