/* A program outside the simdgrad tree: built against an installed simdgrad (CMake package or
 * pkg-config) by .ci/run. Exits non-zero unless the results and the gradient are right. */
#include <math.h>
#include <simdgrad/simdgrad.h>
#include <stdio.h>

int main(void) {
  const float av[] = {1, 2, 3}, bv[] = {4, 5, 6};
  const int64_t shape[] = {3};
  sg_scope_begin("consumer");
  sg_tensor *a = sg_tensor_f32(av, shape, 1);
  sg_tensor *b = sg_tensor_f32(bv, shape, 1);
  sg_tape_begin();
  sg_tensor *dot = sg_sum(sg_mul(a, b), NULL, 0, false); /* 4 + 10 + 18 */
  sg_tensor *grad[1];
  sg_status st = sg_tape_end(dot, NULL, &a, 1, grad);
  int ok = st == SG_OK && sg_data_f32(dot)[0] == 32.0f;
  for (int i = 0; ok && i < 3; i++) ok = sg_data_f32(grad[0])[i] == bv[i]; /* d(a.b)/da = b */
  printf("simdgrad consumer on %s: a.b = %g, %s\n", sg_backend_name(),
         dot ? (double)sg_data_f32(dot)[0] : NAN, ok ? "ok" : sg_last_error());
  sg_scope_end(NULL, 0);
  return ok && sg_memory().num_tensors == 0 ? 0 : 1;
}
