/* json.c - any gpool message as JSON for the commands' --json, by walking the protobuf-c
 * descriptors (json.h) */
#include "cli/lib/json.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/pbfield.h"

static json_t *message(const ProtobufCMessage *m);

static json_t *base64(const ProtobufCBinaryData *b)
{
	size_t cap = sodium_base64_ENCODED_LEN(b->len, sodium_base64_VARIANT_ORIGINAL);
	char *out = malloc(cap);
	if (!out)
		return NULL;
	sodium_bin2base64(out, cap, b->data, b->len, sodium_base64_VARIANT_ORIGINAL);
	json_t *v = json_string(out);
	free(out);
	return v;
}

static json_t *enum_name(const ProtobufCEnumDescriptor *d, int value)
{
	const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(d, value);
	return ev ? json_string(ev->name) : json_integer(value);
}

/* One value of field f stored at p. */
static json_t *value(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return json_integer(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return json_integer((json_int_t) * (const uint64_t *)p);
	case PROTOBUF_C_TYPE_FLOAT:
		return json_real(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_real(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM:
		return enum_name(f->descriptor, *(const int *)p);
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		json_t *v = json_string(s ? s : "");
		/* not UTF-8 (a name from a broken host): keep the bytes visible as base64 */
		if (!v && s) {
			ProtobufCBinaryData b = {strlen(s), (uint8_t *)s};
			v = base64(&b);
		}
		return v;
	}
	case PROTOBUF_C_TYPE_BYTES:
		return base64((const ProtobufCBinaryData *)p);
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
		return sub ? message(sub) : json_null();
	}
	}
	return json_null();
}

static json_t *message(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *o = json_object();
	if (!o)
		return NULL;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;
		json_t *v;
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			/* only the member the oneof holds */
			if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue;
			v = value(f, base + f->offset);
		} else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const char *arr = *(char *const *)(base + f->offset);
			v = json_array();
			for (size_t k = 0; v && k < n; k++)
				if (json_array_append_new(
					v, value(f, arr + k * gp_pb_value_size(f->type))) < 0) {
					json_decref(v);
					v = NULL;
				}
		} else {
			v = value(f, base + f->offset);
		}
		if (!v || json_object_set_new(o, f->name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *gp_json_message(const ProtobufCMessage *m)
{
	return m ? message(m) : json_null();
}

json_t *gp_json_job(const Gpool__JobInfo *job)
{
	return gp_json_message(&job->base);
}

json_t *gp_json_node(const Gpool__NodeInfo *node)
{
	return gp_json_message(&node->base);
}

json_t *gp_json_card(const Gpool__Card *card)
{
	return gp_json_message(&card->base);
}

int gp_json_print(json_t *v, FILE *f)
{
	if (!v)
		return -1;
	int rc = json_dumpf(v, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(v);
	if (rc < 0 || fputc('\n', f) == EOF)
		return -1;
	return 0;
}
