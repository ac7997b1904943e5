/* svcport.h: the port a service replica listens on. `gsub --port` is a wish: the agent gives
 * the wished port when nothing on the PC holds it and no other replica was given it, the next
 * free one above it otherwise (up to 100 above), else one the kernel picks. The replica finds
 * it in GPOOL_PORT. */
#ifndef GPOOL_SVCPORT_H
#define GPOOL_SVCPORT_H

#include <stddef.h>
#include <stdint.h>

/* A free TCP port (bind-tested on every address), not one of taken[0..ntaken). wish 0: any.
 * 0 with errno set when none could be found. */
uint32_t gp_svcport_pick(uint32_t wish, const uint32_t *taken, size_t ntaken);

#endif
