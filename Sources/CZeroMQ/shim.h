#ifndef CZEROMQ_SHIM_H
#define CZEROMQ_SHIM_H
#include <zmq.h>
#include <sys/eventfd.h>
#include <errno.h>

// errno is a macro over a thread-local; Swift cannot read it portably through Glibc in all
// contexts, and zmq_errno() covers ZeroMQ's own errors. This shim reads the C errno for the
// eventfd wake-up pipe that the ZeroMQ actor thread polls beside its sockets.
static inline int czeromq_errno(void) { return errno; }
#endif
