/* fuzz_gtrain: gtrain's file decoders on the same input: the model file the model server
 * also reads and the checkpoint a resumed job reads (possibly fetched from a store)
 * (train/ckpt.h), and the training-data readers (train/data.h: CSV, plain or gzip, and MNIST
 * IDX), which read the input from a file. A decoded table must have dim > 0 features a row and
 * labels below its class count. Properties checked: a decoded model has exactly the parameters its
 * layer sizes call for and writes back to the same bytes' meaning (parse, write, parse again:
 * equal); a decoded checkpoint's state vectors are as many as it says; a failure sets errno. */
#include <errno.h>
#include <unistd.h>

#include "train/ckpt.h"
#include "train/data.h"
#include "tests/fuzz/fuzz.h"

static void model(const uint8_t *data, size_t size)
{
	gt_model_t m, back;
	gp_error_t err;
	errno = 0;
	if (gt_model_parse(data, size, &m, &err) < 0) {
		FUZZ_CHECK(errno != 0);
		return;
	}
	FUZZ_CHECK(m.nparams == gt_model_nparams(m.sizes, m.nsizes) && m.nparams > 0);
	volatile float sum = 0;
	for (size_t i = 0; i < m.nparams; i++)
		sum += m.params[i];
	(void)sum; /* read every parameter: the sanitizers see an out-of-bounds one */
	char path[64];
	snprintf(path, sizeof(path), "/tmp/fuzz_gtrain.%d.gpm", (int)getpid());
	FUZZ_CHECK(gt_model_write(path, &m, &err) == 0);
	FUZZ_CHECK(gt_model_read(path, &back, &err) == 0);
	unlink(path);
	FUZZ_CHECK(back.nsizes == m.nsizes && back.nparams == m.nparams);
	FUZZ_CHECK(memcmp(back.params, m.params, m.nparams * sizeof(float)) == 0);
	gt_model_free(&back);
	gt_model_free(&m);
}

static void ckpt(const uint8_t *data, size_t size)
{
	gt_ckpt_t c;
	gp_error_t err;
	errno = 0;
	if (gt_ckpt_parse(data, size, &c, &err) < 0) {
		FUZZ_CHECK(errno != 0);
		return;
	}
	FUZZ_CHECK(c.nstate >= 0 && c.nstate <= 2);
	for (int i = 0; i < c.nstate; i++)
		FUZZ_CHECK(c.state[i] != NULL);
	FUZZ_CHECK(c.global_batch >= 1 && c.loss_scale > 0);
	gt_ckpt_free(&c);
}

static void table(const gt_data_t *d)
{
	FUZZ_CHECK(d->n > 0 && d->dim > 0 && d->classes > 0);
	for (size_t i = 0; i < d->n; i++)
		FUZZ_CHECK(d->y[i] >= 0 && d->y[i] < d->classes);
}

static void tables(const uint8_t *data, size_t size)
{
	char path[64];
	gt_data_t d;
	gp_error_t err;
	snprintf(path, sizeof(path), "/tmp/fuzz_gtrain.%d.data", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(data, 1, size, f);
	fclose(f);
	if (gt_data_load_csv(path, &d, &err) == 0) {
		table(&d);
		gt_data_free(&d);
	}
	/* the same bytes as images and as labels: both headers are checked */
	if (gt_data_load_idx(path, path, &d, &err) == 0) {
		table(&d);
		gt_data_free(&d);
	}
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	model(data, size);
	ckpt(data, size);
	tables(data, size);
	return 0;
}
