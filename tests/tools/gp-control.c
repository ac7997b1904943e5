/* gp-control: one JobControl with a request id the caller chooses, as a command that retries
 * would send it again (t0390-haclients): the scheduler applies an id once per uid and answers
 * its retries with the first answer.
 *
 *     gp-control ACTION JOB VALUE HEXID     ACTION: cancel, hold, release or priority
 *     gp-control share USER SHARE HEXID      a ShareSet (gpool share set USER SHARE; t1244)
 *
 * Talks to $GPOOL_SCHEDULER (one endpoint or a list) with gpool.conf's sched_uid. Prints
 * "ok" or "CODE: text" for the job's result, or "reply: CODE: text" for an Error reply. Exit
 * status: 0 ok, 4 an error result or reply, 1 no reply, 2 usage.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sched_client.h"
#include "common/config.h"
#include "common/wire.h"
#include "proto/gpool.pb-c.h"

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		Gpool__JobAction action;
	} actions[] = {{"cancel", GPOOL__JOB_ACTION__JOB_CANCEL},
		       {"hold", GPOOL__JOB_ACTION__JOB_HOLD},
		       {"release", GPOOL__JOB_ACTION__JOB_RELEASE},
		       {"priority", GPOOL__JOB_ACTION__JOB_SET_PRIORITY}};
	uint8_t rid[GP_REQUEST_ID_LEN];
	Gpool__JobControl c = GPOOL__JOB_CONTROL__INIT;
	Gpool__ShareSet ss = GPOOL__SHARE_SET__INIT;
	bool share = argc == 5 && !strcmp(argv[1], "share");
	for (size_t i = 0; argc == 5 && i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(argv[1], actions[i].name))
			c.action = actions[i].action;
	if (argc != 5 || (!c.action && !share) || strlen(argv[4]) != 2 * GP_REQUEST_ID_LEN) {
		fprintf(stderr,
			"usage: gp-control cancel|hold|release|priority JOB VALUE HEXID(32)\n"
			"       gp-control share USER SHARE HEXID(32)\n");
		return 2;
	}
	for (int i = 0; i < GP_REQUEST_ID_LEN; i++) {
		unsigned v;
		if (sscanf(argv[4] + 2 * i, "%2x", &v) != 1)
			return 2;
		rid[i] = (uint8_t)v;
	}
	uint64_t id = strtoull(argv[2], NULL, 10);
	c.ids = &id;
	c.n_ids = 1;
	c.value = atoi(argv[3]);
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_CONTROL;
	m.job_control = &c;
	if (share) {
		ss.user = argv[2];
		ss.set_share = 1;
		ss.share = strtod(argv[3], NULL);
		m.m_case = GPOOL__MSG__M_SHARE_SET;
		m.share_set = &ss;
	}
	m.request_id = (ProtobufCBinaryData){GP_REQUEST_ID_LEN, rid};
	gp_error_t err = {{0}};
	gp_config_t *cfg = gp_config_create(GP_CLI);
	if (!cfg || gp_config_load_file(cfg, NULL, &err) < 0) {
		fprintf(stderr, "gp-control: %s\n", err.text);
		return 1;
	}
	gp_client_t *cl = gp_client_create(cfg, &err);
	Gpool__Msg *r = cl ? gp_client_call(cl, &m, 30000, &err) : NULL;
	if (!r) {
		fprintf(stderr, "gp-control: %s\n", err.text);
		return 1;
	}
	int rc = 0;
	if (r->m_case == GPOOL__MSG__M_ERROR) {
		printf("reply: %s: %s\n", gp_error_code_name(r->error->code), r->error->text);
		rc = 4;
	} else if (r->m_case == GPOOL__MSG__M_SHARE_SET_REPLY && r->share_set_reply->user) {
		printf("ok %g\n", r->share_set_reply->user->share);
	} else if (r->m_case == GPOOL__MSG__M_JOB_CONTROL_REPLY &&
		   r->job_control_reply->n_results == 1) {
		const Gpool__JobResult *res = r->job_control_reply->results[0];
		if (res->code)
			printf("%s: %s\n", gp_error_code_name(res->code), res->text);
		else
			printf("ok\n");
		rc = res->code ? 4 : 0;
	} else {
		printf("unexpected reply\n");
		rc = 4;
	}
	gp_client_destroy(&cl);
	gp_config_destroy(&cfg);
	return rc;
}
