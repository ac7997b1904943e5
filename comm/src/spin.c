/* spin.c - poll or sleep. A wake-up from epoll costs more than a small message's whole trip
 * on a quiet pair of hosts (this VM: 55.9 µs sleeping vs 3.6 µs polling, 8-byte allreduce,
 * one rank per core), but ranks that outnumber the cores starve each other when they poll
 * (on this 2-core VM, 3 namespaces: Open MPI 4.1.4 busy polling took 4-10 ms for an 8-byte
 * allreduce, 52 us with mpi_yield_when_idle 1; three busy-polling ucx_perftest tag_bw links in
 * a ring got about 0.5 GB/s each against 1.2-1.6 GB/s for blocking iperf3). So a wait polls only
 * when something is about to complete, for at most `us`; it yields the CPU between polls while the
 * machine has more runnable tasks than the CPUs we may use, so the rank we wait for gets the core;
 * and a poll that ends empty doubles how many following waits sleep at once (up to SKIP_MAX), a
 * poll that gets something resets that. */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "comm/src/spin.h"

#define SKIP_MAX       1024
#define CROWD_EVERY_NS (5 * 1000 * 1000)

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void gc_spin_init(gc_spin_t *s, int us)
{
	*s = (gc_spin_t){.us = us};
}

/* Tasks running now, this one included: /proc/loadavg's fourth field ("3/412"). */
static int running_now(void)
{
	char buf[128];
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	int running = 0;
	if (n > 0) {
		buf[n] = 0;
		if (sscanf(buf, "%*s %*s %*s %d/", &running) != 1)
			running = 0;
	}
	return running;
}

static void check_crowded(gc_spin_t *s)
{
	int64_t now = now_ns();
	if (now < s->crowd_next)
		return;
	s->crowd_next = now + CROWD_EVERY_NS;
	if (!s->ncpu) {
		cpu_set_t cs;
		s->ncpu = sched_getaffinity(0, sizeof(cs), &cs) == 0 ? CPU_COUNT(&cs) : 1;
	}
	int running = running_now();
	s->yield = running <= 0 || running > s->ncpu; /* unknown: be polite */
}

int gc_spin_begin(gc_spin_t *s, int soon)
{
	if (s->us <= 0 || !soon)
		return 0;
	if (s->skip > 0) {
		s->skip--;
		return 0;
	}
	s->end = now_ns() + (int64_t)s->us * 1000;
	return 1;
}

int gc_spin_step(gc_spin_t *s)
{
	if (now_ns() >= s->end) {
		s->backoff = s->backoff ? s->backoff * 2 : 1;
		if (s->backoff > SKIP_MAX)
			s->backoff = SKIP_MAX;
		s->skip = s->backoff;
		return 0;
	}
	check_crowded(s);
	if (s->yield)
		sched_yield();
	return 1;
}

void gc_spin_hit(gc_spin_t *s)
{
	s->backoff = 0;
}
