/* mlp_fashion's model trained data-parallel over MPI (examples/fashion_dist.c):
 *   mpirun -np 2 build/examples/mlp_fashion_dist [epochs [training images]] */
#include "fashion_dist.h"

int main(int argc, char **argv) { return fm_run_dist(&argc, &argv, "mlp_fashion_dist", fm_mlp); }
