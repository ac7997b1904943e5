/* fuzz_config: gpool.conf through gp_config_load_file (the file is a memfd, so nothing is
 * written to disk), then every key read back for the program the first byte picks. With the
 * first byte's high bit set, the rest is instead a daemon's argv (NUL-separated words)
 * through gp_config_parse_args, with $GPOOL_CONF pointing at an empty file. */
#include <sys/mman.h>
#include <unistd.h>

#include "common/config.h"
#include "tests/fuzz/fuzz.h"

static const enum gp_prog progs[] = {GP_SCHED, GP_WORKER, GP_CLI, GP_STEPD};

static void read_all(const gp_config_t *cfg)
{
	for (int i = 0; i < gp_conf_nkeys; i++) {
		const char *v = gp_config_str(cfg, gp_conf_keys[i].name);
		FUZZ_CHECK(v != NULL);
		(void)gp_config_int(cfg, gp_conf_keys[i].name);
		if (gp_conf_keys[i].type == GP_CONF_BOOL) {
			int b = gp_config_bool(cfg, gp_conf_keys[i].name);
			FUZZ_CHECK(b == 0 || b == 1);
		}
	}
}

static void from_file(gp_config_t *cfg, const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("gpool-fuzz.conf", MFD_CLOEXEC);
		FUZZ_CHECK(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
	gp_error_t err;
	err.text[0] = '\0';
	if (gp_config_load_file(cfg, path, &err) < 0)
		FUZZ_CHECK(err.text[0] != '\0');
}

static void from_args(gp_config_t *cfg, const uint8_t *data, size_t size)
{
	int argc, help = 0;
	char **argv = fuzz_split(data, size, '\0', "gschedd", &argc);
	gp_error_t err;
	err.text[0] = '\0';
	if (gp_config_parse_args(cfg, argc, argv, &help, &err) < 0)
		FUZZ_CHECK(err.text[0] != '\0');
	fuzz_strv_free(argv, argc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;
	if (!once) {
		/* the default file must not come from the machine this runs on */
		setenv("GPOOL_CONF", "/dev/null", 1);
		once = 1;
	}
	if (size == 0)
		return 0;
	uint8_t mode = data[0];
	gp_config_t *cfg = gp_config_create(progs[mode & 3]);
	FUZZ_CHECK(cfg != NULL);
	if (mode & 0x80)
		from_args(cfg, data + 1, size - 1);
	else
		from_file(cfg, data + 1, size - 1);
	read_all(cfg);
	gp_config_destroy(&cfg);
	return 0;
}
