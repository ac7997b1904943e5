/* gsub's command line to JobSpec: every option, script directives, --export forms, --stage,
 * and bad input rejected with the exact message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/lib/directive.h"
#include "cli/lib/env.h"
#include "cli/lib/submit.h"
#include "common/util.h"

static char dir[] = "/tmp/gpool-submit-test.XXXXXX";
static char *test_env[] = {"HOME=/home/alice", "PATH=/usr/bin:/bin", "LANG=C", NULL};

static gp_submit_t *parse_v(int argc, char **argv, int *rc, gp_error_t *err)
{
	gp_submit_t *s = gp_submit_create();
	assert_non_null(s);
	*rc = gp_submit_parse(s, argc, argv, test_env, err);
	return s;
}

#define PARSE(rc, err, ...)                                                                        \
	parse_v((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)),                           \
		(char *[]){__VA_ARGS__, NULL}, rc, err)

static char *write_file(const char *name, const char *content, int mode)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	chmod(path, mode);
	return path;
}

static void every_option(void **state)
{
	int rc;
	gp_error_t err;
	char *stage = strdup(write_file("data.bin", "12345", 0640));
	gp_submit_t *s =
	    PARSE(&rc, &err, "gsub", "-n", "8", "-N", "2-4", "-c", "3", "--mem", "4G", "-t",
		  "1-02:03:04", "-J", "myjob", "-o", "out.%j", "-e", "err.%j.%t", "--priority",
		  "-5", "--hold", "-w", "pc[1-3]", "-x", "lab1", "-D", "/scratch/a",
		  "--export=NONE,FOO=bar", "--stage", stage, "--no-requeue", "--gpus-per-task", "1",
		  "--gpus", "8", "--gpus-per-node", "2", "--gpu-mem", "6G", "--gpu-vendor", "amd",
		  "--gpu-model", "*6700*", "--gpu-cc", "gfx1030", "--gpu-mixed", "--gpu-index",
		  "0,2-3", "--screen", "--service", "--replicas", "4", "--health-path", "/health",
		  "--port", "8000", "--parsable", "--wait", "--", "prog", "arg1");
	free(stage);
	assert_int_equal(rc, 0);
	Gpool__JobSpec *sp = gp_submit_spec(s);
	assert_int_equal(sp->ntasks, 8);
	assert_int_equal(sp->nodes_min, 2);
	assert_int_equal(sp->nodes_max, 4);
	assert_int_equal(sp->cpus_per_task, 3);
	assert_int_equal(sp->mem_per_node_mb, 4096);
	assert_int_equal(sp->time_limit_sec, 86400 + 2 * 3600 + 3 * 60 + 4);
	assert_string_equal(sp->name, "myjob");
	assert_string_equal(sp->output, "out.%j");
	assert_string_equal(sp->error, "err.%j.%t");
	assert_int_equal(sp->priority, -5);
	assert_true(sp->hold);
	assert_int_equal(sp->n_nodelist, 3);
	assert_string_equal(sp->nodelist[2], "pc3");
	assert_int_equal(sp->n_exclude, 1);
	assert_string_equal(sp->chdir, "/scratch/a");
	assert_int_equal(sp->n_env, 1);
	assert_string_equal(sp->env[0]->name, "FOO");
	assert_string_equal(sp->env[0]->value, "bar");
	size_t nstage;
	char *const *staged = gp_submit_stage(s, &nstage);
	assert_int_equal(nstage, 1);
	assert_non_null(strstr(staged[0], "data.bin"));
	assert_int_equal(sp->n_files, 0); /* no bytes in the spec: gsub uploads them */
	assert_true(sp->no_requeue);
	assert_int_equal(sp->gpus_per_task, 1);
	assert_int_equal(sp->gpus_total, 8);
	assert_int_equal(sp->gpus_per_node, 2);
	assert_int_equal(sp->gpu_mem_min, 6ULL << 30);
	assert_int_equal(sp->gpu_vendor, GPOOL__VENDOR__VENDOR_AMD);
	assert_string_equal(sp->gpu_model, "*6700*");
	assert_string_equal(sp->gpu_cc_min, "gfx1030");
	assert_true(sp->gpu_mixed);
	assert_int_equal(sp->n_gpu_index, 3);
	assert_int_equal(sp->gpu_index[0], 0);
	assert_int_equal(sp->gpu_index[2], 3);
	assert_true(sp->screen);
	assert_true(sp->service);
	assert_int_equal(sp->replicas, 4);
	assert_string_equal(sp->health_path, "/health");
	assert_int_equal(sp->service_port, 8000);
	assert_int_equal(sp->n_argv, 2);
	assert_string_equal(sp->argv[0], "prog");
	assert_int_equal(sp->script.len, 0);
	assert_int_equal(gp_submit_flags(s), GP_SUBMIT_PARSABLE | GP_SUBMIT_WAIT);
	gp_submit_destroy(&s);
	assert_null(s);
}

static void defaults(void **state)
{
	int rc;
	gp_error_t err;
	gp_submit_t *s = PARSE(&rc, &err, "gsub", "--", "/bin/hostname");
	assert_int_equal(rc, 0);
	Gpool__JobSpec *sp = gp_submit_spec(s);
	assert_int_equal(sp->ntasks, 1);
	assert_int_equal(sp->cpus_per_task, 1);
	assert_string_equal(sp->name, "hostname");
	assert_int_equal(sp->n_env, 3); /* --export=ALL */
	assert_int_equal(sp->time_limit_sec, 0);
	assert_string_equal(sp->chdir, "");
	gp_submit_destroy(&s);
	/* -N without -n: a task a node, as Slurm */
	s = PARSE(&rc, &err, "gsub", "-N", "3", "--", "x");
	assert_int_equal(rc, 0);
	assert_int_equal(gp_submit_spec(s)->ntasks, 3);
	gp_submit_destroy(&s);
	/* long options with '=' and short options glued to their value */
	s = PARSE(&rc, &err, "gsub", "--ntasks=5", "-t30", "--mem=512", "--", "x");
	assert_int_equal(rc, 0);
	assert_int_equal(gp_submit_spec(s)->ntasks, 5);
	assert_int_equal(gp_submit_spec(s)->time_limit_sec, 1800);
	assert_int_equal(gp_submit_spec(s)->mem_per_node_mb, 512);
	gp_submit_destroy(&s);
	/* a relative -D is made absolute where gsub runs */
	s = PARSE(&rc, &err, "gsub", "-D", "sub", "--", "x");
	assert_int_equal(rc, 0);
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(strncmp(gp_submit_spec(s)->chdir, cwd, strlen(cwd)), 0);
	gp_submit_destroy(&s);
}

static void bad_input(void **state)
{
	struct {
		char *argv[8];
		int eno;
		const char *msg;
	} cases[] = {
	    {{"gsub", "-n", "0", "--", "true"}, EINVAL, "invalid number of tasks '0'"},
	    {{"gsub", "-t", "3x", "--", "true"}, EINVAL, "invalid time limit '3x'"},
	    {{"gsub", "--mem", "lots", "--", "true"}, EINVAL, "invalid memory size 'lots'"},
	    {{"gsub"}, EINVAL, "no script or command given (see gsub --help)"},
	    {{"gsub", "-n", "2"}, EINVAL, "no script or command given (see gsub --help)"},
	    {{"gsub", "--"}, EINVAL, "no command after '--'"},
	    {{"gsub", "/nonexistent.sh"},
	     ENOENT,
	     "cannot read script '/nonexistent.sh': No such file or directory"},
	    {{"gsub", "/tmp"}, EINVAL, "script '/tmp' is not a regular file"},
	    {{"gsub", "--frobnicate", "--", "true"}, EINVAL, "unknown option '--frobnicate'"},
	    {{"gsub", "-q", "--", "true"}, EINVAL, "unknown option '-q'"},
	    {{"gsub", "--time"}, EINVAL, "option '--time' needs a value"},
	    {{"gsub", "-N", "4-2", "--", "x"}, EINVAL, "invalid node count '4-2'"},
	    {{"gsub", "-N", "3", "-n", "2", "--", "x"}, EINVAL, "3 nodes asked for only 2 tasks"},
	    {{"gsub", "-c", "0", "--", "x"}, EINVAL, "invalid cpus per task '0'"},
	    {{"gsub", "--priority", "high", "--", "x"}, EINVAL, "invalid priority 'high'"},
	    {{"gsub", "-w", "pc[1-", "--", "x"}, EINVAL, "invalid host list 'pc[1-'"},
	    {{"gsub", "-w", "pc1", "-x", "pc1", "--", "x"},
	     EINVAL,
	     "host 'pc1' is both wanted and excluded"},
	    {{"gsub", "--export=", "--", "x"}, EINVAL, "invalid --export value ''"},
	    {{"gsub", "--mpi=ssh", "--", "x"},
	     EINVAL,
	     "invalid MPI launch (none, mpirun or pmix) 'ssh'"},
	    {{"gsub", "--mpi=pmix", "--service", "--", "x"},
	     EINVAL,
	     "options '--service' and '--mpi' exclude each other"},
	    {{"gsub", "--mpi=mpirun", "--service", "--", "x"},
	     EINVAL,
	     "options '--service' and '--mpi' exclude each other"},
	    {{"gsub", "--export=A-B", "--", "x"}, EINVAL, "invalid --export item 'A-B'"},
	    {{"gsub", "--stage", "/nonexistent", "--", "x"},
	     ENOENT,
	     "cannot read file to stage '/nonexistent': No such file or directory"},
	    {{"gsub", "--gpus", "-1", "--", "x"}, EINVAL, "invalid number of cards '-1'"},
	    {{"gsub", "--gpu-mem", "big", "--", "x"}, EINVAL, "invalid card memory size 'big'"},
	    {{"gsub", "--gpu-vendor", "intel", "--", "x"},
	     EINVAL,
	     "invalid card vendor 'intel' (nvidia, amd or any)"},
	    {{"gsub", "--gpu-cc", "7.x", "--", "x"}, EINVAL, "invalid compute capability '7.x'"},
	    {{"gsub", "--gpu-index", "64", "--", "x"}, EINVAL, "invalid card index list '64'"},
	    {{"gsub", "--gpu-index", "1,1", "--", "x"}, EINVAL, "invalid card index list '1,1'"},
	    {{"gsub", "--gpu-index", "3-1", "--", "x"}, EINVAL, "invalid card index list '3-1'"},
	    {{"gsub", "--gpu-index", "0,", "--", "x"}, EINVAL, "invalid card index list '0,'"},
	    {{"gsub", "--replicas", "2", "--", "x"},
	     EINVAL,
	     "option '--replicas' needs '--service'"},
	    {{"gsub", "--service", "--port", "0", "--", "x"}, EINVAL, "invalid service port '0'"},
	    {{"gsub", "--route-prefix", "keep", "--", "x"},
	     EINVAL,
	     "option '--route-prefix' needs '--service'"},
	    {{"gsub", "--service", "--route-prefix", "whole", "--", "x"},
	     EINVAL,
	     "invalid route prefix 'whole' (strip or keep)"},
	    {{"gsub", "--json", "--parsable", "--", "x"},
	     EINVAL,
	     "options '--json' and '--parsable' exclude each other"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int argc = 0, rc;
		gp_error_t err = {{0}};
		while (cases[i].argv[argc])
			argc++;
		gp_submit_t *s = parse_v(argc, cases[i].argv, &rc, &err);
		int eno = errno;
		if (rc != -1 || strcmp(err.text, cases[i].msg) != 0 || eno != cases[i].eno)
			fail_msg("case %zu: rc %d errno %d '%s'", i, rc, eno, err.text);
		gp_submit_destroy(&s);
	}
}

static void script_directives(void **state)
{
	int rc;
	gp_error_t err;
	char *path = strdup(write_file("job.sh",
				       "#!/bin/bash\n"
				       "# a comment\n"
				       "\n"
				       "#GPOOL -n 4 --time=2:00   # trailing comment\n"
				       "#GPOOL -J 'my job' --export=NONE,X=1\n"
				       "#GPOOLX -n 99\n"
				       "echo start\n"
				       "#GPOOL -n 77\n",
				       0755));
	gp_submit_t *s = PARSE(&rc, &err, "gsub", "-J", "cli", path, "one", "two");
	assert_int_equal(rc, 0);
	Gpool__JobSpec *sp = gp_submit_spec(s);
	assert_int_equal(sp->ntasks, 4);	   /* not 99, not 77 */
	assert_int_equal(sp->time_limit_sec, 120); /* 2:00 = M:S */
	assert_string_equal(sp->name, "cli");	   /* the command line wins */
	assert_int_equal(sp->n_env, 1);
	assert_int_equal(sp->n_argv, 3);
	assert_string_equal(sp->argv[0], "./job.sh");
	assert_string_equal(sp->argv[1], "one");
	assert_true(sp->script.len > 0 && !memcmp(sp->script.data, "#!/bin/bash", 11));
	gp_submit_destroy(&s);

	/* without -J the directive names it; without either, the script's name */
	s = PARSE(&rc, &err, "gsub", path);
	assert_int_equal(rc, 0);
	assert_string_equal(gp_submit_spec(s)->name, "my job");
	gp_submit_destroy(&s);

	/* options after the script are its arguments, not gsub's */
	s = PARSE(&rc, &err, "gsub", path, "-n", "9");
	assert_int_equal(rc, 0);
	assert_int_equal(gp_submit_spec(s)->ntasks, 4);
	assert_string_equal(gp_submit_spec(s)->argv[1], "-n");
	gp_submit_destroy(&s);
	free(path);

	struct {
		const char *text;
		const char *msg;
	} bad[] = {
	    {"#!/bin/sh\n#GPOOL -t 3x\n", "bad.sh:2: invalid time limit '3x'"},
	    {"#GPOOL --wait\n", "bad.sh:1: option '--wait' is not allowed in a script"},
	    {"#GPOOL -n 2 extra\n", "bad.sh:1: unexpected argument 'extra'"},
	    {"#GPOOL -J 'open\n", "bad.sh: line 1: unterminated quote"},
	    {"#GPOOL --nope\n", "bad.sh:1: unknown option '--nope'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *p = write_file("bad.sh", bad[i].text, 0644);
		char cwdsave[4096];
		assert_non_null(getcwd(cwdsave, sizeof(cwdsave)));
		assert_int_equal(chdir(dir), 0);
		s = PARSE(&rc, &err, "gsub", "bad.sh");
		assert_int_equal(chdir(cwdsave), 0);
		(void)p;
		assert_int_equal(rc, -1);
		assert_int_equal(errno, EINVAL);
		assert_string_equal(err.text, bad[i].msg);
		gp_submit_destroy(&s);
	}
}

static void export_forms(void **state)
{
	Gpool__EnvVar **v;
	size_t n;
	gp_error_t err;
	assert_int_equal(gp_export_build(NULL, test_env, &v, &n, &err), 0);
	assert_int_equal(n, 3);
	gp_export_free(v, n);
	assert_int_equal(gp_export_build("ALL,LANG=de_DE,NEW=1", test_env, &v, &n, &err), 0);
	assert_int_equal(n, 4);
	assert_string_equal(v[2]->name, "LANG");
	assert_string_equal(v[2]->value, "de_DE");
	assert_string_equal(v[3]->name, "NEW");
	gp_export_free(v, n);
	assert_int_equal(gp_export_build("NONE", test_env, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	gp_export_free(v, n);
	assert_int_equal(gp_export_build("PATH,UNSET_VAR,A=x=y", test_env, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0]->value, "/usr/bin:/bin");
	assert_string_equal(v[1]->value, "x=y");
	gp_export_free(v, n);
	assert_int_equal(gp_export_build("PATH,,HOME", test_env, &v, &n, &err), -1);
	assert_string_equal(err.text, "invalid --export item ''");
}

static void stage_files(void **state)
{
	int rc;
	gp_error_t err;
	char *a = strdup(write_file("a.txt", "aaa", 0600));
	char *b = strdup(write_file("run.py", "print(1)\n", 0755));
	gp_submit_t *s =
	    PARSE(&rc, &err, "gsub", "--stage", a, "--stage", b, "--collect", "out/*.txt",
		  "--collect", "res.%t", "--collect-dir", "/tmp/r", "--", "x");
	assert_int_equal(rc, 0);
	Gpool__JobSpec *sp = gp_submit_spec(s);
	size_t n;
	char *const *staged = gp_submit_stage(s, &n);
	assert_int_equal(n, 2);
	assert_string_equal(staged[1], b);
	assert_int_equal(sp->n_files, 0);
	assert_int_equal(sp->n_collect, 2);
	assert_string_equal(sp->collect[1], "res.%t");
	assert_string_equal(gp_submit_collect_dir(s), "/tmp/r");
	gp_submit_destroy(&s);
	/* the same name twice */
	s = PARSE(&rc, &err, "gsub", "--stage", a, "--stage", a, "--", "x");
	assert_int_equal(rc, -1);
	assert_string_equal(err.text, "two staged files are named 'a.txt'");
	gp_submit_destroy(&s);
	/* a directory is staged whole (recursively, by gsub) */
	s = PARSE(&rc, &err, "gsub", "--stage", dir, "--", "x");
	assert_int_equal(rc, 0);
	gp_submit_destroy(&s);
	/* --stage-lazy: staged as --stage, and marked; a file only */
	s = PARSE(&rc, &err, "gsub", "--stage", a, "--stage-lazy", b, "--", "x");
	assert_int_equal(rc, 0);
	staged = gp_submit_stage(s, &n);
	assert_int_equal(n, 2);
	assert_string_equal(staged[1], b);
	assert_true(gp_submit_stage_lazy(s, b));
	assert_false(gp_submit_stage_lazy(s, a));
	gp_submit_destroy(&s);
	s = PARSE(&rc, &err, "gsub", "--stage-lazy", dir, "--", "x");
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err.text, "not a regular file"));
	gp_submit_destroy(&s);
	s = PARSE(&rc, &err, "gsub", "--stage", a, "--stage-lazy", a, "--", "x");
	assert_int_equal(rc, -1); /* one name, once */
	gp_submit_destroy(&s);
	/* no cap: a sparse file of 65 MiB is fine (and not read here) */
	char big[512];
	snprintf(big, sizeof(big), "%s/big.bin", dir);
	FILE *f = fopen(big, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 65 << 20), 0);
	fclose(f);
	s = PARSE(&rc, &err, "gsub", "--stage", a, "--stage", big, "--", "x");
	assert_int_equal(rc, 0);
	gp_submit_destroy(&s);
	/* collect patterns stay inside the working directory */
	s = PARSE(&rc, &err, "gsub", "--collect", "../x", "--", "x");
	assert_int_equal(rc, -1);
	gp_submit_destroy(&s);
	s = PARSE(&rc, &err, "gsub", "--collect", "/etc/passwd", "--", "x");
	assert_int_equal(rc, -1);
	gp_submit_destroy(&s);
	free(a);
	free(b);
}

static void mpi_modes(void **state)
{
	int rc;
	gp_error_t err;
	gp_submit_t *s = PARSE(&rc, &err, "gsub", "--mpi=mpirun", "-N", "3", "-n", "6", "--", "x");
	assert_int_equal(rc, 0);
	assert_int_equal(gp_submit_spec(s)->mpi, GPOOL__MPI_LAUNCH__MPI_MPIRUN);
	assert_int_equal(gp_submit_spec(s)->ntasks, 6);
	gp_submit_destroy(&s);
	s = PARSE(&rc, &err, "gsub", "--mpi", "none", "--", "x");
	assert_int_equal(rc, 0);
	assert_int_equal(gp_submit_spec(s)->mpi, GPOOL__MPI_LAUNCH__MPI_NONE);
	gp_submit_destroy(&s);
	s = PARSE(&rc, &err, "gsub", "--mpi=pmix", "-n", "4", "--", "./prog");
	assert_int_equal(rc, 0);
	assert_int_equal(gp_submit_spec(s)->mpi, GPOOL__MPI_LAUNCH__MPI_PMIX);
	gp_submit_destroy(&s);
	/* a script's directive sets it too */
	char *path =
	    write_file("mpi.sh", "#!/bin/sh\n#GPOOL --mpi=mpirun -N 2\nmpirun ./a\n", 0755);
	s = PARSE(&rc, &err, "gsub", path);
	assert_int_equal(rc, 0);
	assert_int_equal(gp_submit_spec(s)->mpi, GPOOL__MPI_LAUNCH__MPI_MPIRUN);
	assert_int_equal(gp_submit_spec(s)->nodes_min, 2);
	gp_submit_destroy(&s);
}

static void help_short_circuits(void **state)
{
	int rc;
	gp_error_t err;
	gp_submit_t *s = PARSE(&rc, &err, "gsub", "-n", "0", "--help");
	/* -n 0 is scanned, not applied: --help wins */
	assert_int_equal(rc, 0);
	assert_true(gp_submit_flags(s) & GP_SUBMIT_HELP);
	gp_submit_destroy(&s);
	s = PARSE(&rc, &err, "gsub", "--config", "/x.conf", "--scheduler", "tcp://10.0.0.1:1", "--",
		  "x");
	assert_int_equal(rc, 0);
	assert_string_equal(gp_submit_common(s)->config, "/x.conf");
	assert_string_equal(gp_submit_common(s)->scheduler, "tcp://10.0.0.1:1");
	gp_submit_destroy(&s);
	char *const *none = NULL;
	(void)none;
}

static void directive_parser(void **state)
{
	struct gp_directive *d;
	int n;
	gp_error_t err;
	const char *t = "#!/bin/sh\n#GPOOL\n  #GPOOL -o \"a b\" x'y z'\n#SBATCH -n 3\nrun\n";
	assert_int_equal(gp_directives_parse(t, strlen(t), "gsub", &d, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(d[0].argc, 1);
	assert_int_equal(d[1].lineno, 3);
	assert_int_equal(d[1].argc, 4);
	assert_string_equal(d[1].argv[2], "a b");
	assert_string_equal(d[1].argv[3], "xy z");
	assert_null(d[1].argv[4]);
	gp_directives_free(d, n);
}

/* a service's -N MIN-MAX is a gang of MAX ranks at most (one a node); --gpus-per-task 0-N */
static void gang_service_options(void **state)
{
	(void)state;
	int rc;
	gp_error_t err;
	gp_submit_t *s = PARSE(&rc, &err, "gsub", "--service", "-N", "2-3", "--gpus-per-task",
			       "0-1", "--", "gllm");
	assert_int_equal(rc, 0);
	Gpool__JobSpec *sp = gp_submit_spec(s);
	assert_int_equal(sp->ntasks, 3);
	assert_int_equal(sp->nodes_min, 2);
	assert_int_equal(sp->nodes_max, 3);
	assert_int_equal(sp->gpus_per_task, 1);
	assert_true(sp->gpus_optional);
	gp_submit_destroy(&s);
	/* a batch job's -N 2-3 keeps one task a node of the minimum, as before */
	s = PARSE(&rc, &err, "gsub", "-N", "2-3", "--gpus-per-task", "2", "--", "prog");
	assert_int_equal(rc, 0);
	sp = gp_submit_spec(s);
	assert_int_equal(sp->ntasks, 2);
	assert_int_equal(sp->gpus_per_task, 2);
	assert_false(sp->gpus_optional);
	gp_submit_destroy(&s);
	const char *bad[] = {"1-2", "0-0", "0-x", "-1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		s = PARSE(&rc, &err, "gsub", "--gpus-per-task", (char *)bad[i], "--", "prog");
		assert_int_equal(rc, -1);
		assert_non_null(strstr(err.text, "number of cards"));
		gp_submit_destroy(&s);
	}
}

/* grun: a first word without a '/' is a command (srun's `-n 2 hostname`), one with a '/' a
 * script read here, and anything after '--' a command */
static void step_word_forms(void **state)
{
	char *env[] = {"GPOOL_JOB_ID=57", "PATH=/usr/bin:/bin", NULL};
	char *script = strdup(write_file("prep.sh", "#!/bin/sh\necho prep\n", 0755));
	char *bare[] = {"grun", "-n", "2", "hostname", "-f", NULL};
	char *slash[] = {"grun", script, "x", NULL};
	char *dashed[] = {"grun", "--", "hostname", NULL};
	char *missing[] = {"grun", "./no-such-script", NULL};
	gp_error_t err;
	gp_submit_t *s = gp_submit_create();
	assert_int_equal(gp_submit_parse_step(s, 5, bare, env, &err), 0);
	Gpool__JobSpec *sp = gp_submit_spec(s);
	assert_int_equal(sp->step_of, 57);
	assert_int_equal(sp->ntasks, 2);
	assert_int_equal(sp->script.len, 0);
	assert_int_equal(sp->n_argv, 2);
	assert_string_equal(sp->argv[0], "hostname");
	assert_string_equal(sp->argv[1], "-f");
	gp_submit_destroy(&s);
	s = gp_submit_create();
	assert_int_equal(gp_submit_parse_step(s, 3, slash, env, &err), 0);
	sp = gp_submit_spec(s);
	assert_int_equal(sp->script.len, strlen("#!/bin/sh\necho prep\n"));
	assert_string_equal(sp->argv[0], "./prep.sh");
	assert_string_equal(sp->argv[1], "x");
	gp_submit_destroy(&s);
	s = gp_submit_create();
	assert_int_equal(gp_submit_parse_step(s, 3, dashed, env, &err), 0);
	assert_int_equal(gp_submit_spec(s)->script.len, 0);
	assert_string_equal(gp_submit_spec(s)->argv[0], "hostname");
	gp_submit_destroy(&s);
	s = gp_submit_create();
	assert_int_equal(gp_submit_parse_step(s, 2, missing, env, &err), -1);
	assert_string_equal(err.text,
			    "cannot read script './no-such-script': No such file or directory");
	gp_submit_destroy(&s);
	/* gsub (sbatch) keeps reading a bare word as a script */
	int rc;
	s = PARSE(&rc, &err, "gsub", "hostname");
	assert_int_equal(rc, -1);
	assert_string_equal(err.text, "cannot read script 'hostname': No such file or directory");
	gp_submit_destroy(&s);
	free(script);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(mpi_modes),
	    cmocka_unit_test(every_option),
	    cmocka_unit_test(gang_service_options),
	    cmocka_unit_test(defaults),
	    cmocka_unit_test(bad_input),
	    cmocka_unit_test(script_directives),
	    cmocka_unit_test(export_forms),
	    cmocka_unit_test(stage_files),
	    cmocka_unit_test(help_short_circuits),
	    cmocka_unit_test(directive_parser),
	    cmocka_unit_test(step_word_forms),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	gp_rm_rf(dir);
	return rc;
}
