#ifndef CPOSTGRES_SHIM_H
#define CPOSTGRES_SHIM_H
// libpq imports cleanly; the shim only fixes the include path that Debian uses.
#include <postgresql/libpq-fe.h>
#endif
