/* replay: runs saved fuzz inputs through a harness's LLVMFuzzerTestOneInput, as a
 * regression test in every build (no clang, no libFuzzer). Arguments are files or
 * directories (every regular file in them, sorted). Exit 0 when every input ran; a harness
 * that finds a fault aborts, and the test fails with the input's name on stderr. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"
#include "common/util.h"

static int run_file(const char *path)
{
	uint8_t *data;
	size_t len;
	if (gp_read_file(path, 16u << 20, &data, &len) < 0) {
		fprintf(stderr, "replay: cannot read '%s': %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	/* an exact-size copy, so that ASan sees a read past the end of the input */
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy) {
		free(data);
		return -1;
	}
	memcpy(copy, data, len);
	free(data);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", dir, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		if (!names || asprintf(&names[n], "%s/%s", dir, e->d_name) < 0)
			abort();
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(names[i]) < 0)
				rc = -1;
			else
				(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0, count = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: '%s': %s\n", argv[i], strerror(errno));
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i], &count) < 0)
				rc = -1;
		} else if (run_file(argv[i]) < 0) {
			rc = -1;
		} else {
			count++;
		}
	}
	fprintf(stderr, "replay: %d inputs\n", count);
	if (count == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	return rc < 0 ? 1 : 0;
}
