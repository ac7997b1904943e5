/* core_alone.c: gschedd's core linked with nothing but the base library, the protocol's code and
 * its helpers (scheduler/CMakeLists.txt links every object of libgschedd_core.a into it): a core
 * that gained a call into SQLite, ZeroMQ, MUNGE, libuv, Raft or the shell does not link. Run, it
 * makes a core on a clock of its own, registers a node, runs a placement pass over an empty
 * queue and unmakes it. */
#include <stdio.h>
#include <string.h>

#include "scheduler/core/core.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/nodes.h"
#include "scheduler/core/plan.h"

/* the time given to the core: a fixed instant */
static double fixed_now(void)
{
	return 1.8e9;
}

static int64_t fixed_mono_ms(void)
{
	return 1000;
}

int main(void)
{
	static struct gsched s;
	if (sched_core_init(&s, 1) < 0) {
		fprintf(stderr, "core_alone: cannot make a core\n");
		return 1;
	}
	s.clock = (struct sched_clock){fixed_now, fixed_mono_ms};
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = "node1";
	reg.cpus = 4;
	reg.mem_mb = 1024;
	int rc = nodes_register(s.nodes, &reg, (const uint8_t *)"node1", 5) < 0 ||
		 nodes_get(s.nodes, 0)->last_heard != fixed_now(); /* heard at the time given */
	plan_run(&s);
	sched_core_release(&s);
	if (rc)
		fprintf(stderr, "core_alone: cannot register a node\n");
	return rc;
}
