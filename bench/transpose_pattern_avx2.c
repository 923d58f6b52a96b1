/* The avx2 kernels of transpose.pattern and transpose.copy: bench/transpose_pattern.inc over
 * the avx2 vocabulary, compiled with the avx2 backend's flags (bench/CMakeLists.txt). */
#include "kernels_avx2/vec_avx2.h"

#include "transpose_pattern.inc"
