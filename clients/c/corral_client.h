/*
 * corral_client.h — tell corral which thread is handling user input.
 *
 * A framework (input dispatcher, compositor, launcher) calls
 * corral_boost(tid, 0) right before it hands an event to the thread that
 * will handle it. corral raises that thread and keeps CPU hogs off its CPU
 * until the thread blocks after running, exits, is unboosted, or the cap
 * (max_ms; 0 = the daemon's default) passes. Two lines:
 *
 *     #include "corral_client.h"
 *     corral_boost(handler_tid, 0);
 *
 * The daemon's socket is $CORRAL_SOCKET, or /run/corral.sock. Every call
 * opens one connection, sends one JSON line and reads one reply; it does
 * not keep state and is safe from any thread. On failure it returns -1,
 * sets errno (ECONNREFUSED/ENOENT: no daemon; EPERM: not your thread;
 * EINVAL: refused for another reason) and corral_last_error() says why in
 * the daemon's words.
 */
#ifndef CORRAL_CLIENT_H
#define CORRAL_CLIENT_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Boost thread `tid` for at most `max_ms` ms (0: the daemon's default). */
int corral_boost(pid_t tid, unsigned int max_ms);

/* End a boost early. */
int corral_unboost(pid_t tid);

/* The last failure's message (thread-local; empty after a success). */
const char *corral_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* CORRAL_CLIENT_H */
