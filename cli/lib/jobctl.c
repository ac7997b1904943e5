/* jobctl.c - the JobControl request of gcancel and gpool: cancel, signal, hold, release,
 * priority (jobctl.h) */
#include "cli/lib/jobctl.h"

#include <inttypes.h>

int gp_jobctl(gp_session_t *s, Gpool__JobAction action, uint64_t *ids, size_t n, int32_t value,
	      const char *prog, FILE *report, int *failed, gp_error_t *err)
{
	return gp_jobctl_sel(s, action, ids, n, NULL, 0, value, prog, report, failed, err);
}

int gp_jobctl_sel(gp_session_t *s, Gpool__JobAction action, uint64_t *ids, size_t n, char **sel,
		  size_t nsel, int32_t value, const char *prog, FILE *report, int *failed,
		  gp_error_t *err)
{
	Gpool__JobControl jc = GPOOL__JOB_CONTROL__INIT;
	jc.action = action;
	jc.value = value;
	jc.ids = ids;
	jc.n_ids = n;
	jc.selectors = sel;
	jc.n_selectors = nsel;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_CONTROL;
	m.job_control = &jc;
	*failed = 0;
	Gpool__Msg *r =
	    gp_session_call(s, &m, GPOOL__MSG__M_JOB_CONTROL_REPLY, GP_CLI_TIMEOUT_MS, NULL, err);
	if (!r)
		return -1;
	Gpool__JobControlReply *jr = r->job_control_reply;
	for (size_t i = 0; i < jr->n_results; i++) {
		if (jr->results[i]->code != GPOOL__ERROR_CODE__ERROR_NONE) {
			fprintf(report, "%s: job %" PRIu64 ": %s\n", prog, jr->results[i]->id,
				jr->results[i]->text);
			(*failed)++;
		}
	}
	return 0;
}
