/* A program outside the simdgrad tree using simdgrad_mpi: built against an install (CMake
 * package component mpi, or pkg-config simdgrad_mpi) and run on 2 ranks by .ci/run. Each rank's
 * gradient of sum(rank + 1 times w) is rank + 1; the average over N ranks is (N + 1) / 2. */
#include <mpi.h>
#include <simdgrad/distributed.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int ok = sg_dist_init(MPI_COMM_WORLD) == SG_OK;
  const int64_t shape[] = {3};
  sg_tensor *init = sg_zeros(shape, 1), *w = sg_variable(init), *g = NULL, *local = NULL;
  sg_dispose(init);
  sg_reducer *r = ok ? sg_reducer_new(&w, 1, 0) : NULL;
  sg_scope_begin("consumer");
  sg_tape_begin();
  ok = ok && r && sg_reducer_attach(r) == SG_OK;
  sg_tensor *y = sg_sum(sg_mul(sg_scalar((float)(sg_dist_rank() + 1)), w), NULL, 0, false);
  ok = sg_tape_end(y, NULL, &w, 1, &local) == SG_OK && ok;
  ok = r && sg_reducer_wait(r, &g) == SG_OK && ok;
  float want = (float)(sg_dist_size() + 1) / 2;
  for (int i = 0; ok && i < 3; i++) ok = sg_data_f32(g)[i] == want;
  printf("simdgrad_mpi consumer, rank %d of %d: %s\n", sg_dist_rank(), sg_dist_size(),
         ok ? "ok" : sg_last_error());
  sg_scope_end(NULL, 0);
  sg_reducer_free(r);
  sg_dispose(w);
  MPI_Finalize();
  return ok ? 0 : 1;
}
