/* The avx512 kernels of transpose.pattern and transpose.copy: bench/transpose_pattern.inc over
 * the avx512 vocabulary, compiled with the avx512 backend's flags (bench/CMakeLists.txt). */
#include "kernels_avx512/vec_avx512.h"

#include "transpose_pattern.inc"
