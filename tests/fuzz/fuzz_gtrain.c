/* fuzz_gtrain: gtrain's own decoders on the same input: the checkpoint a resumed job reads
 * (possibly fetched from a store) (train/ckpt.h), and the training-data readers (train/data.h:
 * CSV, plain or gzip, and MNIST IDX), which read the input from a file. (The model file is
 * model/'s: fuzz_model.c.) Properties checked: a decoded checkpoint's model has the parameters
 * its sizes call for and its state vectors are as many as it says; a failure sets errno; a
 * decoded table has dim > 0 features a row and labels below its class count. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "train/ckpt.h"
#include "train/data.h"
#include "tests/fuzz/fuzz.h"

static void ckpt(const uint8_t *data, size_t size)
{
	gt_ckpt_t c;
	gp_error_t err;
	errno = 0;
	if (gt_ckpt_parse(data, size, &c, &err) < 0) {
		FUZZ_CHECK(errno != 0);
		return;
	}
	FUZZ_CHECK(c.model != NULL && gm_model_nparams(c.model) > 0);
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
	ckpt(data, size);
	tables(data, size);
	return 0;
}
