/* The data-parallel training loop of mlp_fashion_dist and cnn_fashion_dist (simdgrad_mpi). */
#ifndef SIMDGRAD_EXAMPLES_FASHION_DIST_H
#define SIMDGRAD_EXAMPLES_FASHION_DIST_H

#include <stdint.h>

#include "models.h"

/* An example's main under mpirun: MPI_Init, each rank loads Fashion-MNIST and keeps its shard of
   the training set (rank r of N: images [r * n / N, (r + 1) * n / N)), the model is built and
   broadcast from rank 0, and every step each rank trains on 128 / N of its shard's images with
   the gradients averaged by a reducer: the same global batch of 128 as mlp_fashion. Each rank
   prints its images/s per epoch, rank 0 the mean loss and the test accuracy. Returns the exit
   status. */
int fm_run_dist(int *argc, char ***argv, const char *prog, sg_status (*make_model)(fm_model *));

#endif
