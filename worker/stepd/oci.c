/* oci.c: index.json, image manifests and image configs of an OCI archive (oci.h). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "worker/stepd/oci.h"

bool gp_oci_digest_ok(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + 64)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static json_t *load(const char *json, size_t len, const char *what, gp_error_t *err)
{
	json_error_t je;
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		gp_errprintf(err, "the image's %s is not a JSON object", what);
		return NULL;
	}
	return j;
}

int gp_oci_index(const char *json, size_t len, char digest[GP_OCI_DIGEST], gp_error_t *err)
{
	json_t *j = load(json, len, "index.json", err);
	if (!j)
		return -1;
	json_t *mans = json_object_get(j, "manifests");
	const char *d = NULL;
	if (json_is_array(mans) && json_array_size(mans) > 0)
		d = json_string_value(json_object_get(json_array_get(mans, 0), "digest"));
	int rc = 0;
	if (!json_is_array(mans) || json_array_size(mans) == 0)
		rc = gp_errprintf(err, "the image's index.json lists no manifest");
	else if (!gp_oci_digest_ok(d))
		rc = gp_errprintf(err, "the image's index.json names no sha256 manifest");
	else
		snprintf(digest, GP_OCI_DIGEST, "%s", d);
	json_decref(j);
	return rc;
}

int gp_oci_manifest(const char *json, size_t len, struct gp_oci_manifest *m, gp_error_t *err)
{
	json_t *j = load(json, len, "manifest", err);
	if (!j)
		return -1;
	int rc = -1;
	const char *c = json_string_value(json_object_get(json_object_get(j, "config"), "digest"));
	json_t *layers = json_object_get(j, "layers");
	if (!gp_oci_digest_ok(c)) {
		gp_errprintf(err, "the image's manifest has no config");
		goto out;
	}
	snprintf(m->config, sizeof(m->config), "%s", c);
	if (!json_is_array(layers) || json_array_size(layers) > GP_OCI_LAYERS_MAX) {
		gp_errprintf(err, "the image's manifest has no usable layer list");
		goto out;
	}
	m->nlayers = 0;
	size_t i;
	json_t *l;
	json_array_foreach(layers, i, l)
	{
		struct gp_oci_layer *o = &m->layers[m->nlayers++];
		const char *d = json_string_value(json_object_get(l, "digest"));
		const char *mt = json_string_value(json_object_get(l, "mediaType"));
		json_t *sz = json_object_get(l, "size");
		if (!gp_oci_digest_ok(d)) {
			gp_errprintf(err, "layer %zu of the image has no sha256 digest", i);
			goto out;
		}
		snprintf(o->digest, sizeof(o->digest), "%s", d);
		o->zstd = mt && strstr(mt, "zstd");
		o->size = json_is_integer(sz) && json_integer_value(sz) >= 0
			      ? json_integer_value(sz)
			      : -1;
	}
	rc = 0;
out:
	json_decref(j);
	return rc;
}

int gp_oci_config(const char *json, size_t len, char *path, size_t pathlen, gp_error_t *err)
{
	json_t *j = load(json, len, "config", err);
	if (!j)
		return -1;
	int rc = 0;
	const char *os = json_string_value(json_object_get(j, "os"));
	path[0] = '\0';
	if (os && strcmp(os, "linux") != 0) {
		rc = gp_errprintf(err, "the image is for '%.32s', not linux", os);
	} else {
		json_t *env = json_object_get(json_object_get(j, "config"), "Env");
		size_t i;
		json_t *v;
		json_array_foreach(env, i, v)
		{
			const char *s = json_string_value(v);
			if (s && !strncmp(s, "PATH=", 5) && !strchr(s, '\n')) {
				snprintf(path, pathlen, "%s", s + 5);
				break;
			}
		}
	}
	json_decref(j);
	return rc;
}
