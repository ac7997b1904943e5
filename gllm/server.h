/* server.h - gllm's OpenAI-compatible HTTP server on the head rank: the HTTP side on
 * libevent's loop (http/server.h) in the calling thread, the engine in a thread of its own.
 * Requests go to the engine through a locked queue; text and endings come back through a
 * second one, and a byte on a pipe wakes the loop: no HTTP callback ever runs in the engine's
 * thread, and the engine never waits on a client. */
#ifndef GLLM_SERVER_H
#define GLLM_SERVER_H

#include "gllm/rank.h"
#include "llm/chat.h"

typedef struct {
	const char *host; /* listen address (default 127.0.0.1) */
	int port;
	const char *model_id;	  /* the name /v1/models gives (default: the file's) */
	const char *api_key_file; /* one key a line; NULL: no authentication */
	gl_chat_t chat;
	int keepalive_ms; /* an SSE comment this often while a stream is silent */
	size_t max_body;
} gllm_server_opts_t;

/* Serve R (rank 0, loaded) until SIGINT/SIGTERM (0) or the engine fails (-1: the requests in
 * flight were ended with an error each; ERR says why). */
int gllm_serve(gllm_rank_t *r, const gllm_server_opts_t *so, gp_error_t *err);

/* Read an API key file: keys one a line (blank lines and '#' comments skipped) into a
 * malloc'd NULL-terminated array; NULL with errno and ERR. */
char **gllm_read_keys(const char *path, gp_error_t *err);
/* 1 if the Authorization header value AUTH (LEN bytes) is "Bearer K" for a key K of KEYS. */
int gllm_key_ok(char *const *keys, const char *auth, size_t len);

#endif
