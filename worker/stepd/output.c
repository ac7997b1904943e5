/* output.c: a task's stdout and stderr pipes into Output messages.
 *
 * Output goes out in whole lines, as Slurm's I/O does unless --unbuffered: all ranks of a job
 * and both streams append to one file by default, and a line cut where a read happened to end
 * (a program that writes a line's text and its newline in two calls, as Python and C++ streams
 * do) would be glued to another rank's line. What follows the last newline of a read waits for
 * its end, at most STEP_LINE_MS (a prompt still shows up in `glogs -f`) or STEP_CHUNK bytes (a
 * line longer than that goes out in pieces), and goes out at the stream's end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/stepd/step.h"

static void send_chunk(struct step *s, struct task *t, int i, uint8_t *data, size_t len, bool eof)
{
	Gpool__Output o = GPOOL__OUTPUT__INIT;
	o.job_id = s->launch->job_id;
	o.attempt = s->launch->attempt;
	o.rank = t->tp->rank;
	o.stream = (uint32_t)i;
	o.offset = t->off[i];
	o.data.data = data;
	o.data.len = len;
	o.eof = eof;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_OUTPUT;
	m.output = &o;
	if (step_send(s, &m) < 0)
		gp_err("job %llu rank %u: output lost: out of memory",
		       (unsigned long long)s->launch->job_id, t->tp->rank);
	t->off[i] += len;
}

/* Send the whole lines of the partial buffer (all of it when all is set); keep the rest. */
static void send_lines(struct step *s, struct task *t, int i, bool all)
{
	size_t len = t->partlen[i];
	if (!len)
		return;
	size_t cut = len;
	if (!all && len < STEP_CHUNK) {
		while (cut > 0 && t->part[i][cut - 1] != '\n')
			cut--;
		if (!cut) {
			if (!t->part_ms[i])
				t->part_ms[i] = gp_mono_ms();
			return;
		}
	}
	send_chunk(s, t, i, t->part[i], cut, false);
	memmove(t->part[i], t->part[i] + cut, len - cut);
	t->partlen[i] = len - cut;
	t->part_ms[i] = t->partlen[i] ? gp_mono_ms() : 0;
}

void output_close(struct step *s, struct task *t, int i)
{
	if (t->fd[i] < 0)
		return;
	close(t->fd[i]);
	t->fd[i] = -1;
	send_lines(s, t, i, true);
	free(t->part[i]);
	t->part[i] = NULL;
	send_chunk(s, t, i, NULL, 0, true);
}

void output_read(struct step *s, struct task *t, int i)
{
	if (!t->part[i] && t->fd[i] >= 0 && !(t->part[i] = malloc(STEP_CHUNK))) {
		gp_err("job %llu rank %u: out of memory reading its output",
		       (unsigned long long)s->launch->job_id, t->tp->rank);
		return;
	}
	/* a few chunks per wakeup, so one chatty task cannot starve the loop */
	for (int k = 0; k < 4 && t->fd[i] >= 0; k++) {
		size_t room = STEP_CHUNK - t->partlen[i];
		ssize_t n = read(t->fd[i], t->part[i] + t->partlen[i], room);
		if (n > 0) {
			t->partlen[i] += (size_t)n;
			send_lines(s, t, i, false);
			if ((size_t)n < room)
				return;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		output_close(s, t, i);
	}
}

int64_t output_tick(struct step *s, struct task *t, int64_t now)
{
	int64_t next = INT64_MAX;
	for (int i = 1; i <= 2; i++) {
		if (!t->partlen[i])
			continue;
		if (now - t->part_ms[i] >= STEP_LINE_MS)
			send_lines(s, t, i, true);
		else if (t->part_ms[i] + STEP_LINE_MS < next)
			next = t->part_ms[i] + STEP_LINE_MS;
	}
	return next;
}
