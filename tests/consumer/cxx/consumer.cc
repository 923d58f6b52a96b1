// A C++17 program outside the simdgrad tree: both public headers, the engine and the kernel ABI
// (a kernel through sg_backend, the checked table's error), the versions. Built by .ci/run
// against an installed simdgrad; exits non-zero unless everything is right.
#include <simdgrad/backend.h>
#include <simdgrad/simdgrad.h>

#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  bool ok = sg_version() == SG_VERSION && std::strlen(sg_version_string()) > 0;

  const std::vector<float> x{1, 2, 3, 4, 5};
  std::vector<float> y(x.size());
  const sg_backend *b = sg_backend_current();
  ok = ok && b->size >= sizeof(sg_backend) && b->abi_version == SG_BACKEND_ABI_VERSION &&
       SG_BACKEND_HAS(b, relu);
  b->square(x.data(), y.data(), x.size());
  for (size_t i = 0; i < x.size(); i++) ok = ok && y[i] == x[i] * x[i];

  const sg_backend *checked = sg_backend_checked(nullptr);
  checked->square(nullptr, y.data(), 3);
  ok = ok && sg_last_status() == SG_ERR_ARG && std::strstr(sg_last_error(), "x is NULL");
  sg_clear_error();

  const int64_t shape[] = {2, 2};
  sg_scope_begin("cxx");
  sg_tensor *t = sg_sum(sg_relu(sg_tensor_f32(x.data(), shape, 2)), nullptr, 0, false);
  ok = ok && t && sg_data_f32(t)[0] == 10.0f;
  sg_scope_end(nullptr, 0);

  std::printf("simdgrad %s C++ consumer on %s: %s\n", sg_version_string(), b->name,
              ok ? "ok" : "FAILED");
  return ok && sg_memory().num_tensors == 0 ? 0 : 1;
}
