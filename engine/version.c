/* The library's version, from the SG_VERSION_* macros it was compiled with. */
#include <simdgrad/simdgrad.h>

#define SG_STR_(x) #x
#define SG_STR(x) SG_STR_(x)

int sg_version(void) { return SG_VERSION; }

const char *sg_version_string(void) {
  return SG_STR(SG_VERSION_MAJOR) "." SG_STR(SG_VERSION_MINOR) "." SG_STR(SG_VERSION_PATCH);
}
