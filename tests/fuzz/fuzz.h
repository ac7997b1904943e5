/* fuzz.h: what the harnesses share: cutting an input into strings, and a walk over any
 * decoded protobuf-c message that reads every field (so that the sanitizers see a bad
 * pointer or length the decoder might have left behind).
 *
 * Every harness defines LLVMFuzzerTestOneInput. It is linked either with libFuzzer
 * (fuzz_<name>, GPOOL_FUZZ=ON, clang) or with replay.c (fuzz-replay-<name>, every build),
 * which runs a saved corpus through it as a regression test. A harness aborts (FUZZ_CHECK)
 * when a property it checks does not hold; that is a finding, as a crash is.
 */
#ifndef GPOOL_FUZZ_H
#define GPOOL_FUZZ_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pbfield.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__,      \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A NUL-terminated copy of the input (it may hold NULs of its own). */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Cut data at every sep into *n strings, after an optional first word (argv[0]); the
 * array is NULL-terminated. Free with fuzz_strv_free. */
static inline char **fuzz_split(const uint8_t *data, size_t size, char sep, const char *first,
				int *n)
{
	size_t cap = 2;
	for (size_t i = 0; i < size; i++)
		cap += data[i] == (uint8_t)sep;
	char **v = calloc(cap + 1, sizeof(*v));
	if (!v)
		abort();
	int k = 0;
	if (first)
		v[k++] = strdup(first);
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i == size || data[i] == (uint8_t)sep) {
			if (i == size && start == size && size)
				break; /* a trailing separator ends the last word, makes no new one
					*/
			if (i == size && !size)
				break;
			v[k++] = fuzz_strdup(data + start, i - start);
			start = i + 1;
		}
	}
	v[k] = NULL;
	*n = k;
	return v;
}

static inline void fuzz_strv_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Read every byte a decoded message points to; returns a checksum so that nothing is
 * optimized away. */
static uint64_t fuzz_walk(const ProtobufCMessage *m);

static inline uint64_t fuzz_walk_value(const ProtobufCFieldDescriptor *f, const void *p)
{
	uint64_t h = 0;
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		FUZZ_CHECK(s != NULL);
		h += strlen(s);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;
		FUZZ_CHECK(b->len == 0 || b->data != NULL);
		for (size_t i = 0; i < b->len; i++)
			h = h * 31 + b->data[i];
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
		if (sub) {
			FUZZ_CHECK(sub->descriptor == f->descriptor);
			h += fuzz_walk(sub);
		}
		break;
	}
	case PROTOBUF_C_TYPE_BOOL:
		h += *(const protobuf_c_boolean *)p ? 1 : 0;
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE: {
		uint64_t v;
		memcpy(&v, p, sizeof(v));
		h += v;
		break;
	}
	default: { /* 32-bit scalars and enums */
		uint32_t v;
		memcpy(&v, p, sizeof(v));
		h += v;
		break;
	}
	}
	return h;
}

static uint64_t fuzz_walk(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	uint64_t h = 0;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *member = base + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const char *arr = *(char *const *)member;
			FUZZ_CHECK(n == 0 || arr != NULL);
			for (size_t k = 0; k < n; k++)
				h += fuzz_walk_value(f, arr + k * gp_pb_value_size(f->type));
		} else if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			/* only the member the case names is set */
			uint32_t c = *(const uint32_t *)(base + f->quantifier_offset);
			if (c == f->id)
				h += fuzz_walk_value(f, member);
		} else {
			h += fuzz_walk_value(f, member);
		}
	}
	return h;
}

/* libprotobuf-c 1.4.1 keeps an unknown field whose tag is 0 (sent as a non-minimal varint,
 * "82 00") or above 2^29-1 (a five-byte tag), re-encodes it, and then refuses its own
 * encoding. Such a message does not round-trip; the harnesses know this one case (see
 * docs/fuzzing.md, "Findings"). */
static inline int fuzz_odd_unknown(const ProtobufCMessage *m)
{
	for (unsigned i = 0; i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag == 0 || m->unknown_fields[i].tag > 0x1fffffff)
			return 1;
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		const void *member = base + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *arr = *(ProtobufCMessage *const *const *)member;
			for (size_t k = 0; k < n; k++)
				if (fuzz_odd_unknown(arr[k]))
					return 1;
		} else {
			if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
			    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue;
			const ProtobufCMessage *sub = *(ProtobufCMessage *const *)member;
			if (sub && fuzz_odd_unknown(sub))
				return 1;
		}
	}
	return 0;
}

/* pack(unpack(pack(m))) == pack(m): a decoded message re-encodes to the same bytes once it
 * is in canonical form. Returns the first encoding's size. */
static inline size_t fuzz_round_trip(const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *a = malloc(n ? n : 1);
	if (!a)
		abort();
	FUZZ_CHECK(protobuf_c_message_pack(m, a) == n);
	ProtobufCMessage *again = protobuf_c_message_unpack(m->descriptor, NULL, n, a);
	if (!again && fuzz_odd_unknown(m)) {
		free(a);
		return n;
	}
	FUZZ_CHECK(again != NULL);
	size_t n2 = protobuf_c_message_get_packed_size(again);
	FUZZ_CHECK(n2 == n);
	uint8_t *b = malloc(n2 ? n2 : 1);
	if (!b)
		abort();
	FUZZ_CHECK(protobuf_c_message_pack(again, b) == n2);
	FUZZ_CHECK(n == 0 || memcmp(a, b, n) == 0);
	protobuf_c_message_free_unpacked(again, NULL);
	free(a);
	free(b);
	return n;
}

#endif
