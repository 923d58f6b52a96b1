#!/bin/sh
# Every allocation of the library goes through engine/alloc.c's counted path (sg__malloc,
# sg__calloc, sg__realloc, sg__aligned_alloc, sg__free), so that tests/test_alloc_fault.c can
# make each one fail. Prints each direct call of the C library's allocator in engine/ or a
# kernel folder, and exits 1 if there is one. Usage: check_alloc_path.sh <source root>.
root=${1:?usage: check_alloc_path.sh <source root>}
cd "$root" || exit 2
calls='(^|[^_[:alnum:].>])(malloc|calloc|realloc|aligned_alloc|posix_memalign|free|strdup|strndup)[[:space:]]*\('
if grep -nE "$calls" engine/*.c engine/*.h kernels_*/*.c kernels_*/*.h kernels_*/*.inc 2>/dev/null |
  grep -v '^engine/alloc\.c:' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*|//)'; then
  echo "check_alloc_path: the calls above bypass engine/alloc.h (use sg__malloc and friends)"
  exit 1
fi
echo "check_alloc_path: every allocation in engine/ and kernels_*/ goes through engine/alloc.h"
