/* files.c: installing a file whole or not at all, and running the init system's commands. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/join/join.h"
#include "common/util.h"

int gpj_install_file(const char *path, const void *data, size_t len, uid_t uid, gid_t gid,
		     mode_t mode, gp_error_t *err)
{
	char dir[4096], tmp[4200];
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(tmp, sizeof(tmp), "%s/.gpool-join.XXXXXX", dirname(dir));
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return gp_errprintf(err, "'%s' exists and is not a plain file: not replaced", path);
	int fd = mkstemp(tmp);
	if (fd < 0)
		return gp_errprintf(err, "cannot write in '%s': %s", dir, strerror(errno));
	if (fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0 || gp_write_all(fd, data, len) < 0 ||
	    fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return gp_errprintf(err, "cannot write '%s': %s", tmp, strerror(e));
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return gp_errprintf(err, "cannot put '%s' in place: %s", path, strerror(e));
	}
	return 0;
}

bool gpj_systemd(void)
{
	struct stat st;
	return lstat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
}

int gpj_run(char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
