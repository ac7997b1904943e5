/* gz.h - zlib's gz file calls, or plain stdio stand-ins in a standalone build without zlib
 * (GT_NO_ZLIB: train/CMakeLists.txt); there only uncompressed files can be read. */
#ifndef GT_GZ_H
#define GT_GZ_H

#ifndef GT_NO_ZLIB
#include <zlib.h>
#else
#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef FILE *gzFile;
#define Z_OK	     0
#define Z_STREAM_END 1

/* a gzip'd file fails to open with ENOTSUP rather than reading as garbage */
static inline gzFile gzopen(const char *path, const char *mode)
{
	FILE *f = fopen(path, mode);
	if (f) {
		int a = getc(f), b = getc(f);
		if (a == 0x1f && b == 0x8b) {
			fclose(f);
			errno = ENOTSUP;
			return NULL;
		}
		rewind(f);
	}
	return f;
}
static inline char *gzgets(gzFile f, char *buf, int len)
{
	return fgets(buf, len, f);
}
static inline int gzeof(gzFile f)
{
	return feof(f);
}
static inline int gzclose(gzFile f)
{
	return fclose(f);
}
static inline int gzread(gzFile f, void *buf, unsigned len)
{
	size_t n = fread(buf, 1, len, f);
	return n == 0 && ferror(f) ? -1 : (int)n;
}
static inline const char *gzerror(gzFile f, int *code)
{
	*code = ferror(f) ? -1 : Z_OK;
	return *code ? strerror(errno ? errno : EIO) : "ok";
}
#endif

#endif
