/*
 * example.c — a framework boosting the thread that handles an event.
 * Build: cc -O2 -o corral-example example.c corral_client.c
 * Run:   CORRAL_SOCKET=/run/corral.sock ./corral-example [MAX_MS]
 * It boosts its own thread, burns ~20 ms of CPU as an input handler
 * would, then sleeps (which ends the boost).
 */
#define _GNU_SOURCE
#include "corral_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    unsigned max_ms = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    pid_t me = gettid();
    if (corral_boost(me, max_ms) != 0) {
        fprintf(stderr, "corral_boost(%d): %s\n", (int)me, corral_last_error());
        return 1;
    }
    printf("boosted thread %d\n", (int)me);
    fflush(stdout);
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do { /* handle the event */
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000000L);
    if (argc > 2)
        sleep((unsigned)atoi(argv[2])); /* stay alive (tests look at us) */
    return 0;
}
