/* The versions and the kernel ABI: the version macros against the library, and the layout of
 * struct sg_backend pinned slot by slot (docs/embedding.md, "ABI policy"). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

Test(version, macros_match_the_library) {
  cr_assert_eq(sg_version(), SG_VERSION_MAJOR * 10000 + SG_VERSION_MINOR * 100 + SG_VERSION_PATCH);
  cr_assert_eq(sg_version(), SG_VERSION);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", SG_VERSION_MAJOR, SG_VERSION_MINOR, SG_VERSION_PATCH);
  cr_assert_str_eq(sg_version_string(), want);
}
