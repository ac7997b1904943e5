/* settings.c: gschedd's live settings and their reload on SIGHUP. */
#include "scheduler/shell/settings.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/shell/budget.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/http/http.h"
#include "common/log.h"
#include "scheduler/shell/net.h"
#include "scheduler/features/output.h"
#include "scheduler/features/retention.h"

void settings_apply(struct gsched *s)
{
	const gp_config_t *c = s->cfg;
	int level = gp_log_level_parse(gp_config_str(c, "log_level"));
	gp_log_set_level(level < 0 ? GP_LOG_INFO : level);
	s->heartbeat_ms = gp_config_int(c, "heartbeat_interval");
	s->node_timeout_ms = gp_config_int(c, "node_timeout");
	s->kill_grace_ms = gp_config_int(c, "kill_grace");
	s->service_drain_ms = gp_config_int(c, "service_drain");
	s->service_drain_max_ms = gp_config_int(c, "service_drain_max");
	s->commit_delay_ms = gp_config_int(c, "commit_delay");
	s->default_time_limit = (uint32_t)(gp_config_int(c, "default_time_limit") / 1000);
	s->max_time_limit = (uint32_t)(gp_config_int(c, "max_time_limit") / 1000);
	s->max_jobs = (uint64_t)gp_config_int(c, "max_jobs");
	s->requeue = gp_config_bool(c, "requeue");
	s->max_attempts = (uint32_t)gp_config_int(c, "max_attempts");
	s->power_cap_watts = (uint32_t)gp_config_int(c, "power_cap_watts");
	s->preempt = gp_config_bool(c, "preempt");
	s->preempt_grace_ms = gp_config_int(c, "preempt_grace");
	if (s->lists)
		budget_set_rate(s->lists, (double)gp_config_int(c, "list_records_per_user"));
	if (s->net)
		net_set_rate(s->net, (int)gp_config_int(c, "rate_per_addr"),
			     (double)gp_config_int(c, "bytes_per_addr"));
	if (s->http)
		http_set_token_ttl(s->http, gp_config_int(c, "api_token_ttl"));
	if (s->retention)
		retention_set(s->retention, gp_config_int(c, "job_retention"),
			      (uint32_t)gp_config_int(c, "retention_batch"));
	if (s->output)
		output_set_limit(s->output, (uint64_t)gp_config_int(c, "output_limit"));
	gp_error_t err = {{0}};
	if (settings_fairshare(s, &err) < 0)
		gp_err("%s: keeping the previous shares and limits", err.text);
}

int settings_fairshare(struct gsched *s, gp_error_t *err)
{
	const gp_config_t *c = s->cfg;
	if (!s->fairshare)
		return 0;
	return fairshare_configure(
	    s->fairshare, (double)gp_config_int(c, "fairshare_half_life") / 1000.0,
	    (double)gp_config_int(c, "fairshare_card_weight"), gp_config_str(c, "fairshare_shares"),
	    gp_config_str(c, "user_limits"), err);
}

static void changed(const char *key, int applied, void *arg)
{
	const gp_config_t *c = arg;
	if (applied)
		gp_info("reload: %s = '%s'", key, gp_config_str(c, key));
	else
		gp_warn("reload: %s changed: it takes effect at the next restart", key);
}

int settings_reload(struct gsched *s)
{
	gp_error_t err = {{0}};
	/* reopen first: after logrotate the old file is gone from the directory */
	char lf[1024];
	snprintf(lf, sizeof(lf), "%s", gp_config_str(s->cfg, "log_file"));
	if (*lf && gp_log_file(lf) < 0)
		gp_err("reload: cannot reopen log file '%s': %s", lf, strerror(errno));
	int n = gp_config_reload(s->cfg, s->argc, s->argv, changed, s->cfg, &err);
	if (n < 0) {
		gp_err("reload: %s: keeping the running configuration", err.text);
		return -1;
	}
	const char *nlf = gp_config_str(s->cfg, "log_file");
	if (strcmp(lf, nlf) != 0 && gp_log_file(nlf) < 0)
		gp_err("reload: cannot open log file '%s': %s", nlf, strerror(errno));
	settings_apply(s);
	gp_info("reload: done, %d setting(s) changed", n);
	return 0;
}
