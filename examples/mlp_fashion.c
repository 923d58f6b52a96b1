/* A multilayer perceptron, 784-1024-1024-10 with ReLU (examples/models.c), trained with Adam on
 * Fashion-MNIST through simdgrad's public API. Usage: mlp_fashion [epochs [training images]];
 * FASHION_MNIST_DIR overrides the data directory, SIMDGRAD_THREADS the thread count,
 * FM_KEEP_DENORMALS=1 keeps denormals (flushed by default, see fashion_mnist.c). */
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h"

int main(int argc, char **argv) {
  int epochs = argc > 1 ? atoi(argv[1]) : 5;
  int64_t max_train = argc > 2 ? atoll(argv[2]) : 0;
  return fm_run_example("mlp_fashion", fm_mlp, epochs, max_train);
}
