/* gguf.h - GGUF model files (the format of llama.cpp and Ollama): read one, bounded and
 * memory-mapped, and write one. Version 3 (and 2) of the public specification: a header,
 * metadata key/value pairs, tensor descriptions, then the tensors' bytes, each at an offset
 * aligned to general.alignment (default 32) from the start of the data section.
 *
 * Nothing in a file is trusted: every count, length, dimension and offset is bounded before
 * it is used (GL_GGUF_MAX_*), every tensor must lie inside the file, and a file that breaks a
 * rule is refused with EINVAL (EFBIG for one over a bound) and a message naming what broke.
 * Tensor types are gpool/kernels.h's gk_qtype_t (GGUF's numbering); another type is refused.
 *
 * Dimensions are GGUF's: dims[0] varies fastest, so a weight W[out][in] has dims {in, out}. */
#ifndef GL_GGUF_H
#define GL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "gpool/kernels.h"

#define GL_GGUF_MAX_TENSORS  65536
#define GL_GGUF_MAX_KV	     65536
#define GL_GGUF_MAX_STRING   (1u << 20) /* bytes in one string (a chat template fits) */
#define GL_GGUF_MAX_ARRAY    (1u << 24) /* elements in one array (a vocabulary fits) */
#define GL_GGUF_MAX_DIMS     4
#define GL_GGUF_MAX_NAME     256
#define GL_GGUF_MAX_META     (256u << 20) /* bytes of header and metadata in all */

/* Metadata value types, GGUF's numbering. */
typedef enum {
	GL_GGUF_U8 = 0,
	GL_GGUF_I8 = 1,
	GL_GGUF_U16 = 2,
	GL_GGUF_I16 = 3,
	GL_GGUF_U32 = 4,
	GL_GGUF_I32 = 5,
	GL_GGUF_F32 = 6,
	GL_GGUF_BOOL = 7,
	GL_GGUF_STRING = 8,
	GL_GGUF_ARRAY = 9,
	GL_GGUF_U64 = 10,
	GL_GGUF_I64 = 11,
	GL_GGUF_F64 = 12,
} gl_gguf_vtype_t;

typedef struct gl_gguf gl_gguf_t;

typedef struct {
	const char *name; /* NUL-terminated copy */
	int ndims;
	uint64_t dims[GL_GGUF_MAX_DIMS];
	uint64_t nelem;
	gk_qtype_t type;
	uint64_t offset; /* from the start of the file */
	size_t bytes;
	const void *data; /* inside the mapping; NULL when opened with gl_gguf_open_header */
} gl_tensor_t;

/* Map the file at PATH and check all of it. NULL with errno and ERR set. */
gl_gguf_t *gl_gguf_open(const char *path, gp_error_t *err);
/* Read and check only the header, metadata and tensor descriptions (a rank that loads a range of
 * layers reads their bytes with gl_gguf_read); tensors' data is NULL. Every tensor is still
 * checked against the file's size. */
gl_gguf_t *gl_gguf_open_header(const char *path, gp_error_t *err);
/* Parse LEN bytes at BUF (not copied: BUF must outlive the handle). For tests and fuzzing. */
gl_gguf_t *gl_gguf_open_mem(const void *buf, size_t len, gp_error_t *err);
/* Takes NULL; sets *G to NULL. */
void gl_gguf_close(gl_gguf_t **g);

uint32_t gl_gguf_version(const gl_gguf_t *g);
uint64_t gl_gguf_file_size(const gl_gguf_t *g);
uint64_t gl_gguf_data_offset(const gl_gguf_t *g); /* file offset of the data section */
int gl_gguf_ntensors(const gl_gguf_t *g);
const gl_tensor_t *gl_gguf_tensor(const gl_gguf_t *g, int i);
/* By name; NULL (ENOENT) if absent. */
const gl_tensor_t *gl_gguf_find(const gl_gguf_t *g, const char *name);
/* Copy tensor T's bytes into DST (T->bytes of room), from the mapping or by pread. */
int gl_gguf_read(const gl_gguf_t *g, const gl_tensor_t *t, void *dst, gp_error_t *err);

/* Metadata. Each getter returns 0, or -1 with errno ENOENT (no such key) or EINVAL (a value of
 * another type, or one out of the target's range). Integers of any width and sign are accepted
 * where the value fits; f32 getters accept f32 and f64. */
int gl_gguf_nkv(const gl_gguf_t *g);
const char *gl_gguf_key(const gl_gguf_t *g, int i);
int gl_gguf_type(const gl_gguf_t *g, const char *key, gl_gguf_vtype_t *t);
int gl_gguf_get_u32(const gl_gguf_t *g, const char *key, uint32_t *v);
int gl_gguf_get_i64(const gl_gguf_t *g, const char *key, int64_t *v);
int gl_gguf_get_f32(const gl_gguf_t *g, const char *key, float *v);
int gl_gguf_get_bool(const gl_gguf_t *g, const char *key, int *v);
/* A string's bytes (not NUL-terminated in the file: *LEN says how many; the pointer is to a
 * NUL-terminated copy the handle owns). */
int gl_gguf_get_str(const gl_gguf_t *g, const char *key, const char **s, size_t *len);
/* An array: its element type and length. */
int gl_gguf_get_arr(const gl_gguf_t *g, const char *key, gl_gguf_vtype_t *et, uint64_t *n);
/* Element I of an array of strings / of numbers (any integer or float type, as f32 / i64). */
int gl_gguf_arr_str(const gl_gguf_t *g, const char *key, uint64_t i, const char **s, size_t *len);
int gl_gguf_arr_f32(const gl_gguf_t *g, const char *key, uint64_t i, float *v);
int gl_gguf_arr_i64(const gl_gguf_t *g, const char *key, uint64_t i, int64_t *v);

/* ---- writing ---- */
typedef struct gl_gguf_writer gl_gguf_writer_t;

gl_gguf_writer_t *gl_gguf_writer_create(void);
void gl_gguf_writer_destroy(gl_gguf_writer_t **w);
int gl_gguf_set_str(gl_gguf_writer_t *w, const char *key, const char *v);
int gl_gguf_set_u32(gl_gguf_writer_t *w, const char *key, uint32_t v);
int gl_gguf_set_i32(gl_gguf_writer_t *w, const char *key, int32_t v);
int gl_gguf_set_f32(gl_gguf_writer_t *w, const char *key, float v);
int gl_gguf_set_bool(gl_gguf_writer_t *w, const char *key, int v);
int gl_gguf_set_arr_str(gl_gguf_writer_t *w, const char *key, const char *const *v, uint64_t n);
int gl_gguf_set_arr_f32(gl_gguf_writer_t *w, const char *key, const float *v, uint64_t n);
int gl_gguf_set_arr_i32(gl_gguf_writer_t *w, const char *key, const int32_t *v, uint64_t n);
/* A tensor of NDIMS DIMS (GGUF order) and type T, its bytes (gk_qtype_row_bytes(t, dims[0]) *
 * the other dims) copied from DATA, or, with DATA NULL, produced when the file is written by
 * FILL(ARG, dst, bytes) (a 7B-shaped random model is never held in memory whole). FILL is
 * called several times, in order, each time for the next BYTES of the tensor: a whole number
 * of rows (of dims[0] values), a few MiB at a time; it returns 0, or -1 with errno to fail the
 * write. -1 with errno EINVAL for a bad shape, name or type, EEXIST for a name used twice. */
typedef int (*gl_gguf_fill_f)(void *arg, void *dst, size_t bytes);
int gl_gguf_add_tensor(gl_gguf_writer_t *w, const char *name, int ndims, const uint64_t *dims,
		       gk_qtype_t t, const void *data, gl_gguf_fill_f fill, void *arg);
/* Write the file (to PATH.tmp, then renamed; general.alignment, where set with
 * gl_gguf_set_u32, is the alignment used). The setters return -1 with errno EEXIST for a key
 * set twice, EINVAL for an empty or over-long key or value. */
int gl_gguf_write(gl_gguf_writer_t *w, const char *path, gp_error_t *err);

#endif
