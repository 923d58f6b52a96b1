/* A DLPack round trip against an installed simdgrad (pkg-config), built by .ci/run: the header
 * <simdgrad/dlpack.h> and the two functions are installed, and share the buffer. */
#include <simdgrad/dlpack.h>
#include <stdio.h>
int main(void) {
  const int64_t n = 3;
  sg_tensor *t = sg_ones(&n, 1);
  DLManagedTensor *m = sg_to_dlpack(t);
  sg_tensor *u = sg_from_dlpack(m);
  int ok = u && sg_data_f32(u) == sg_data_f32(t);
  sg_dispose(u);
  sg_dispose(t);
  printf("dlpack consumer: %s\n", ok && sg_memory().num_tensors == 0 ? "ok" : "FAIL");
  return !ok;
}
