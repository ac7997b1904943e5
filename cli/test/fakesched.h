/* fakesched.h: a stand-in gschedd for the command tests. A thread binds a ROUTER socket,
 * opens each sealed request, asks the test's handler for the reply and seals it with this
 * process's MUNGE credential (the tests run the commands with sched_uid = our uid). Every
 * request is kept, so a test can check what a command sent, or that it sent nothing. */
#ifndef FAKESCHED_H
#define FAKESCHED_H

#include "proto/gpool.pb-c.h"

/* Fill *reply (its id is set by the fake) for req; the reply's memory must stay valid until
 * the handler's next call. */
typedef void (*fakesched_f)(const Gpool__Msg *req, Gpool__Msg *reply, void *arg);

typedef struct fakesched fakesched_t;

/* NULL when munged or ZeroMQ is not usable. */
fakesched_t *fakesched_start(const char *endpoint, fakesched_f handler, void *arg);
void fakesched_stop(fakesched_t **f);

/* Requests received so far; the i-th (unpacked copy, owned by the fake) or NULL. */
int fakesched_count(fakesched_t *f);
Gpool__Msg *fakesched_request(fakesched_t *f, int i);

#endif
