/* A rank that dies in the middle of a step: the last rank kills itself (SIGKILL, no MPI call
 * after it) after back-propagation, while the others wait in sg_reducer_wait for its buckets.
 * What must happen, and what mpi_run.sh checks with "dies": the job ends with a non-zero status
 * well within the test's timeout instead of hanging. MPI itself promises nothing here (a failed
 * process leaves the others' collectives undefined); OpenMPI's launcher notices the lost process
 * and kills the rest of the job (docs/distributed.md, "When a rank dies"). */
#include <signal.h>
#include <stdio.h>

#include "simdgrad/distributed.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (sg_dist_init(MPI_COMM_WORLD) != SG_OK) return 1;
  const int64_t shape[] = {256, 256};
  sg_tensor *init = sg_random_normal(shape, 2, 0, 1, 1), *w = sg_variable(init);
  sg_dispose(init);
  sg_reducer *r = sg_reducer_new(&w, 1, 0);
  if (!r) return 1;
  sg_tape_begin();
  sg_reducer_attach(r);
  sg_tensor *l = sg_sum(sg_square(sg_matmul(w, w, false, false)), NULL, 0, false), *local;
  sg_tape_end(l, NULL, &w, 1, &local);
  if (sg_dist_rank() == sg_dist_size() - 1) raise(SIGKILL);
  sg_tensor *g;
  sg_status st = sg_reducer_wait(r, &g);
  /* Reached only if the launcher did not end the job: say what came back. */
  fprintf(stderr, "test_dist_die: rank %d: sg_reducer_wait returned %d: %s\n", sg_dist_rank(),
          (int)st, sg_last_error());
  MPI_Finalize();
  return st == SG_OK ? 0 : 3;
}
