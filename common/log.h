/* log.h: daemon and tool logging. One line per event, "<time> <prog>[pid] <level>: text",
 * to stderr (or a file chosen by the program). Levels are filtered at the call site cost of
 * one comparison.
 */
#ifndef GPOOL_LOG_H
#define GPOOL_LOG_H

enum gp_log_level { GP_LOG_ERR = 0, GP_LOG_WARN, GP_LOG_INFO, GP_LOG_DEBUG };

void gp_log_init(const char *prog, int level);
/* Redirect to a file (appended), opened again on every call (after logrotate moved it): the
 * old file stays in use when the new one cannot be opened. NULL or "": back to stderr.
 * 0 / -1 with errno. */
int gp_log_file(const char *path);
void gp_log_set_level(int level);
int gp_log_level(void);
void gp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse "err|warn|info|debug"; -1 if unknown. */
int gp_log_level_parse(const char *s);

#define gp_err(...)  gp_log(GP_LOG_ERR, __VA_ARGS__)
#define gp_warn(...) gp_log(GP_LOG_WARN, __VA_ARGS__)
#define gp_info(...) gp_log(GP_LOG_INFO, __VA_ARGS__)
#define gp_debug(...)                                                                              \
	do {                                                                                       \
		if (gp_log_level() >= GP_LOG_DEBUG)                                                \
			gp_log(GP_LOG_DEBUG, __VA_ARGS__);                                         \
	} while (0)

#endif
