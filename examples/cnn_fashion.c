/* A small convolutional network (examples/models.c: conv 3x3 (32) + ReLU + max-pool 2, conv 3x3
 * (64) + ReLU + max-pool 2, dense 128 + ReLU, dense 10) trained with Adam on Fashion-MNIST
 * through simdgrad's public API. Usage: cnn_fashion [epochs [training images]];
 * FASHION_MNIST_DIR overrides the data directory, SIMDGRAD_THREADS the thread count,
 * FM_KEEP_DENORMALS=1 keeps denormals (flushed by default, see fashion_mnist.c). */
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h"

int main(int argc, char **argv) {
  int epochs = argc > 1 ? atoi(argv[1]) : 5;
  int64_t max_train = argc > 2 ? atoll(argv[2]) : 0;
  return fm_run_example("cnn_fashion", fm_cnn, epochs, max_train);
}
