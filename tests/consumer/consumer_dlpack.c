/* A DLPack round trip against an installed simdgrad (pkg-config), built by .ci/run: the header
 * <simdgrad/dlpack.h> and its functions are installed and share the buffer, in both forms (the
 * versioned one through an opaque pointer where the DLPack header is 0.6). */
#include <simdgrad/dlpack.h>
#include <stdio.h>
int main(void) {
  const int64_t n = 3;
  sg_tensor *t = sg_ones(&n, 1);
  sg_tensor *u = sg_from_dlpack(sg_to_dlpack(t));
  sg_tensor *v = sg_from_dlpack_versioned(sg_to_dlpack_versioned(t));
  int ok = u && v && sg_data_f32(u) == sg_data_f32(t) && sg_data_f32(v) == sg_data_f32(t);
  sg_dispose(v);
  sg_dispose(u);
  sg_dispose(t);
  printf("dlpack consumer: %s\n", ok && sg_memory().num_tensors == 0 ? "ok" : "FAIL");
  return !ok;
}
