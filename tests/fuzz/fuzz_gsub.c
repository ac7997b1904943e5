/* fuzz_gsub: gsub's whole command line turned into a JobSpec (gp_submit_parse), with a
 * script. The input is "ARG\0ARG\0...\0\0SCRIPT": the words before the first empty word are
 * argv after "gsub", the rest is the content of job.sh in the harness's own directory (so a
 * script's #GPOOL lines are fuzzed through the real option table too). data.txt is there to
 * be staged. A spec that parses must encode and decode again. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "cli/lib/submit.h"
#include "common/util.h"

static char *const fake_env[] = {"PATH=/usr/bin:/bin", "HOME=/home/u", "USER=u", NULL};
static char dir[64];

static void cleanup_at_exit(void)
{
	gp_rm_rf(dir);
}

static void write_file(const char *name, const void *data, size_t len)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(len == 0 || write(fd, data, len) == (ssize_t)len);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* into the harness's directory for this input only: libFuzzer reads its corpus by
	 * relative paths between inputs */
	int home = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(home >= 0);
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/gp-fuzz-gsub-XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		FUZZ_CHECK(mkdtemp(dir) != NULL && chdir(dir) == 0);
		write_file("data.txt", "staged\n", 7);
		atexit(cleanup_at_exit);
	}
	FUZZ_CHECK(chdir(dir) == 0);
	/* split at the first "\0\0" */
	size_t alen = size;
	const uint8_t *script = NULL;
	size_t slen = 0;
	for (size_t i = 0; i + 1 < size; i++) {
		if (data[i] == 0 && data[i + 1] == 0) {
			alen = i;
			script = data + i + 2;
			slen = size - i - 2;
			break;
		}
	}
	write_file("job.sh", script ? script : (const uint8_t *)"", slen);
	int argc;
	char **argv = fuzz_split(data, alen, '\0', "gsub", &argc);
	/* getopt permutes argv: hand it a copy of the pointers, free the originals */
	char **args = calloc(argc + 1, sizeof(*args));
	FUZZ_CHECK(args != NULL);
	memcpy(args, argv, argc * sizeof(*args));

	gp_submit_t *s = gp_submit_create();
	FUZZ_CHECK(s != NULL);
	gp_error_t err;
	err.text[0] = '\0';
	errno = 0;
	if (gp_submit_parse(s, argc, args, fake_env, &err) < 0) {
		FUZZ_CHECK(err.text[0] != '\0');
	} else if (!(gp_submit_flags(s) & GP_SUBMIT_HELP)) {
		Gpool__JobSpec *sp = gp_submit_spec(s);
		FUZZ_CHECK(sp->n_argv >= 1 && sp->ntasks >= 1 && sp->cpus_per_task >= 1);
		FUZZ_CHECK(sp->nodes_min <= sp->ntasks);
		(void)fuzz_walk(&sp->base);
		(void)fuzz_round_trip(&sp->base);
	}
	gp_submit_destroy(&s);
	free(args);
	fuzz_strv_free(argv, argc);
	FUZZ_CHECK(fchdir(home) == 0);
	close(home);
	return 0;
}
