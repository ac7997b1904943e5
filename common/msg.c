/* msg.c: building protocol messages with no I/O: a batch member, an error reply (msg.h). */
#include "common/msg.h"

#include <stdlib.h>

uint8_t *gp_batch_member(const Gpool__Msg *m, size_t *len)
{
	Gpool__Batch one = GPOOL__BATCH__INIT;
	Gpool__Msg *msgs[1] = {(Gpool__Msg *)m};
	one.n_msgs = 1;
	one.msgs = msgs;
	*len = gpool__batch__get_packed_size(&one);
	uint8_t *d = malloc(*len);
	if (d)
		gpool__batch__pack(&one, d);
	return d;
}

void gp_msg_error(Gpool__Msg *m, Gpool__Error *e, uint64_t id, Gpool__ErrorCode code,
		  const char *text)
{
	gpool__msg__init(m);
	gpool__error__init(e);
	e->code = code;
	e->text = (char *)text;
	m->id = id;
	m->m_case = GPOOL__MSG__M_ERROR;
	m->error = e;
}
