/* gss_lazy.c: the GSSAPI calls libzmq's archive refers to, forwarded to libgssapi_krb5.so.2
 * loaded at the first call.
 *
 * The user commands link libzmq from its archive (top-level CMakeLists.txt, GPOOL_STATIC_LINK).
 * libzmq's GSSAPI mechanism is in every build Debian ships, so the archive refers to 11 gss_
 * calls and 2 name-type OIDs; linked as they are, they make every command map GSSAPI and the 6
 * Kerberos libraries under it at each start (7 of gsub's 14 libraries). gpool never sets
 * ZMQ_GSSAPI_*, so libzmq never reaches these calls; if a program ever does, each call loads the
 * real library once and behaves as it would have linked (GSS_S_UNAVAILABLE when the library is
 * not installed). The two OIDs are the RFC 2744 constants, compared by value by every GSSAPI. */
#include <dlfcn.h>
#include <gssapi/gssapi.h>
#include <pthread.h>

/* 1.2.840.113554.1.2.1.4 and 1.2.840.113554.1.2.1.1 (RFC 2744, 4.1 and 4.2) */
static gss_OID_desc nt_hostbased = {10, (void *)"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04"};
static gss_OID_desc nt_user_name = {10, (void *)"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x01"};
gss_OID GSS_C_NT_HOSTBASED_SERVICE = &nt_hostbased;
gss_OID GSS_C_NT_USER_NAME = &nt_user_name;

enum {
	F_ACCEPT,
	F_ACQUIRE,
	F_DELETE,
	F_DISPLAY,
	F_IMPORT,
	F_INIT,
	F_REL_BUFFER,
	F_REL_CRED,
	F_REL_NAME,
	F_UNWRAP,
	F_WRAP,
	F_COUNT
};
static const char *const names[F_COUNT] = {[F_ACCEPT] = "gss_accept_sec_context",
					   [F_ACQUIRE] = "gss_acquire_cred",
					   [F_DELETE] = "gss_delete_sec_context",
					   [F_DISPLAY] = "gss_display_name",
					   [F_IMPORT] = "gss_import_name",
					   [F_INIT] = "gss_init_sec_context",
					   [F_REL_BUFFER] = "gss_release_buffer",
					   [F_REL_CRED] = "gss_release_cred",
					   [F_REL_NAME] = "gss_release_name",
					   [F_UNWRAP] = "gss_unwrap",
					   [F_WRAP] = "gss_wrap"};
static void *fns[F_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *h = dlopen("libgssapi_krb5.so.2", RTLD_NOW | RTLD_LOCAL);
	for (int i = 0; h && i < F_COUNT; i++)
		fns[i] = dlsym(h, names[i]);
}

/* the real call, or NULL (the caller answers GSS_S_UNAVAILABLE) */
static void *fn(int i)
{
	pthread_once(&once, load);
	return fns[i];
}

/* a forwarder: T is the function's type, the rest its call */
#define FORWARD(i, T, ...)                                                                         \
	do {                                                                                       \
		T *f = (T *)fn(i);                                                                 \
		if (!f) {                                                                          \
			*minor = 0;                                                                \
			return GSS_S_UNAVAILABLE;                                                  \
		}                                                                                  \
		return f(__VA_ARGS__);                                                             \
	} while (0)

OM_uint32 gss_accept_sec_context(OM_uint32 *minor, gss_ctx_id_t *ctx, gss_cred_id_t cred,
				 gss_buffer_t in, gss_channel_bindings_t chan, gss_name_t *src,
				 gss_OID *mech, gss_buffer_t out, OM_uint32 *flags,
				 OM_uint32 *time_rec, gss_cred_id_t *delegated)
{
	FORWARD(F_ACCEPT, __typeof__(gss_accept_sec_context), minor, ctx, cred, in, chan, src, mech,
		out, flags, time_rec, delegated);
}

OM_uint32 gss_acquire_cred(OM_uint32 *minor, gss_name_t name, OM_uint32 time_req, gss_OID_set mechs,
			   gss_cred_usage_t usage, gss_cred_id_t *cred, gss_OID_set *actual,
			   OM_uint32 *time_rec)
{
	FORWARD(F_ACQUIRE, __typeof__(gss_acquire_cred), minor, name, time_req, mechs, usage, cred,
		actual, time_rec);
}

OM_uint32 gss_delete_sec_context(OM_uint32 *minor, gss_ctx_id_t *ctx, gss_buffer_t out)
{
	FORWARD(F_DELETE, __typeof__(gss_delete_sec_context), minor, ctx, out);
}

OM_uint32 gss_display_name(OM_uint32 *minor, gss_name_t name, gss_buffer_t out, gss_OID *type)
{
	FORWARD(F_DISPLAY, __typeof__(gss_display_name), minor, name, out, type);
}

OM_uint32 gss_import_name(OM_uint32 *minor, gss_buffer_t in, gss_OID type, gss_name_t *out)
{
	FORWARD(F_IMPORT, __typeof__(gss_import_name), minor, in, type, out);
}

OM_uint32 gss_init_sec_context(OM_uint32 *minor, gss_cred_id_t cred, gss_ctx_id_t *ctx,
			       gss_name_t target, gss_OID mech, OM_uint32 req_flags,
			       OM_uint32 time_req, gss_channel_bindings_t chan, gss_buffer_t in,
			       gss_OID *actual, gss_buffer_t out, OM_uint32 *flags,
			       OM_uint32 *time_rec)
{
	FORWARD(F_INIT, __typeof__(gss_init_sec_context), minor, cred, ctx, target, mech, req_flags,
		time_req, chan, in, actual, out, flags, time_rec);
}

OM_uint32 gss_release_buffer(OM_uint32 *minor, gss_buffer_t buf)
{
	FORWARD(F_REL_BUFFER, __typeof__(gss_release_buffer), minor, buf);
}

OM_uint32 gss_release_cred(OM_uint32 *minor, gss_cred_id_t *cred)
{
	FORWARD(F_REL_CRED, __typeof__(gss_release_cred), minor, cred);
}

OM_uint32 gss_release_name(OM_uint32 *minor, gss_name_t *name)
{
	FORWARD(F_REL_NAME, __typeof__(gss_release_name), minor, name);
}

OM_uint32 gss_unwrap(OM_uint32 *minor, gss_ctx_id_t ctx, gss_buffer_t in, gss_buffer_t out,
		     int *conf, gss_qop_t *qop)
{
	FORWARD(F_UNWRAP, __typeof__(gss_unwrap), minor, ctx, in, out, conf, qop);
}

OM_uint32 gss_wrap(OM_uint32 *minor, gss_ctx_id_t ctx, int conf_req, gss_qop_t qop, gss_buffer_t in,
		   int *conf, gss_buffer_t out)
{
	FORWARD(F_WRAP, __typeof__(gss_wrap), minor, ctx, conf_req, qop, in, conf, out);
}
