/* output.c: a task's stdout and stderr pipes into Output messages. */
#include <errno.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/step.h"

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

void output_close(struct step *s, struct task *t, int i)
{
	if (t->fd[i] < 0)
		return;
	close(t->fd[i]);
	t->fd[i] = -1;
	send_chunk(s, t, i, NULL, 0, true);
}

void output_read(struct step *s, struct task *t, int i)
{
	static uint8_t buf[STEP_CHUNK];
	/* a few chunks per wakeup, so one chatty task cannot starve the loop */
	for (int k = 0; k < 4 && t->fd[i] >= 0; k++) {
		ssize_t n = read(t->fd[i], buf, sizeof(buf));
		if (n > 0) {
			send_chunk(s, t, i, buf, (size_t)n, false);
			if ((size_t)n < sizeof(buf))
				return;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		output_close(s, t, i);
	}
}
