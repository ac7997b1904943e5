/* spawn.h - run N ranks of a function as forked processes on this host (tests, bench). */
#ifndef GCOMM_SPAWN_H
#define GCOMM_SPAWN_H

typedef int (*gc_rank_fn)(int rank, int size, const char *rdv, void *arg);

/* A free TCP port on 127.0.0.1 for a rendezvous. */
int gc_free_port(void);
/* Fork SIZE processes running FN(rank, size, "tcp://127.0.0.1:PORT", ARG); each exits with
 * FN's value. Waits for all (killing all after TIMEOUT_S). Returns 0 when every rank exited
 * 0, else 1; prints each failing rank. */
int gc_spawn(int size, gc_rank_fn fn, void *arg, int timeout_s);

#endif
