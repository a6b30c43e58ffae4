// Declaration of the one <sys/sysctl.h> function native/metal uses, for `npm run check:metal`
// (glibc no longer ships this header). Signature from the macOS sysctlbyname(3) manual page.
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
int sysctlbyname(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
#ifdef __cplusplus
}
#endif
