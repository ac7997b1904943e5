/* chat.c - a conversation into a prompt (llm/chat.h): each template is a small table of the
 * texts around a message, the same texts the models' own Jinja templates write; Mistral's
 * alternation rule and its system message (put before the first user message) are its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "llm/chat.h"

typedef struct {
	char *s;
	size_t n, cap;
	int failed;
} buf_t;

static void put(buf_t *b, const char *s, size_t len)
{
	if (b->failed)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->failed = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, len);
	b->n += len;
	b->s[b->n] = '\0';
}

static void puts_(buf_t *b, const char *s)
{
	put(b, s, strlen(s));
}

static const char *const roles[] = {"system", "user", "assistant"};
enum { R_SYSTEM, R_USER, R_ASSISTANT };

static int role_of(const gl_msg_t *m)
{
	for (int i = 0; m->role && i < 3; i++)
		if (strcmp(m->role, roles[i]) == 0)
			return i;
	return -1;
}

/* Llama 3's template trims each message's content, as its Jinja text does ("| trim") */
static void put_trimmed(buf_t *b, const char *s)
{
	size_t len = strlen(s);
	while (len && strchr(" \t\n\r", s[0])) {
		s++;
		len--;
	}
	while (len && strchr(" \t\n\r", s[len - 1]))
		len--;
	put(b, s, len);
}

/* Each template's renderer: 0, or -1 with errno and ERR for a conversation it cannot write. */
typedef int (*render_f)(buf_t *b, const gl_msg_t *msgs, int n, int add_assistant, const char *bos,
			gp_error_t *err);

static int llama3(buf_t *b, const gl_msg_t *msgs, int n, int add_assistant, const char *bos,
		  gp_error_t *err)
{
	(void)err;
	if (bos)
		puts_(b, bos);
	for (int i = 0; i < n; i++) {
		puts_(b, "<|start_header_id|>");
		puts_(b, msgs[i].role);
		puts_(b, "<|end_header_id|>\n\n");
		put_trimmed(b, msgs[i].content);
		puts_(b, "<|eot_id|>");
	}
	if (add_assistant)
		puts_(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
	return 0;
}

/* ChatML writes no BOS text */
static int chatml(buf_t *b, const gl_msg_t *msgs, int n, int add_assistant, const char *bos,
		  gp_error_t *err)
{
	(void)bos, (void)err;
	for (int i = 0; i < n; i++) {
		puts_(b, "<|im_start|>");
		puts_(b, msgs[i].role);
		puts_(b, "\n");
		puts_(b, msgs[i].content);
		puts_(b, "<|im_end|>\n");
	}
	if (add_assistant)
		puts_(b, "<|im_start|>assistant\n");
	return 0;
}

/* a base model's plain text, no BOS text */
static int plain(buf_t *b, const gl_msg_t *msgs, int n, int add_assistant, const char *bos,
		 gp_error_t *err)
{
	(void)bos, (void)err;
	for (int i = 0; i < n; i++) {
		puts_(b, msgs[i].role);
		puts_(b, ": ");
		puts_(b, msgs[i].content);
		puts_(b, "\n");
	}
	if (add_assistant)
		puts_(b, "assistant:");
	return 0;
}

/* "<s>[INST] user [/INST]answer</s>[INST] ..." : a system message only first, then user and
 * assistant in turn from a user message (the template raises otherwise); the model answers
 * after the last [/INST] whatever ADD_ASSISTANT says. */
static int mistral(buf_t *b, const gl_msg_t *msgs, int n, int add_assistant, const char *bos,
		   gp_error_t *err)
{
	(void)add_assistant;
	const char *system = NULL;
	int i = 0;
	if (role_of(&msgs[0]) == R_SYSTEM) {
		system = msgs[0].content;
		i = 1;
	}
	if (i == n) {
		errno = EINVAL;
		return gp_errprintf(
		    err, "chat: mistral: a system message needs a user message after it");
	}
	if (bos)
		puts_(b, bos);
	for (int turn = 0; i < n; i++, turn++) {
		int r = role_of(&msgs[i]);
		if (r == R_SYSTEM) {
			errno = EINVAL;
			return gp_errprintf(err,
					    "chat: mistral: a system message only comes first");
		}
		if (r != (turn % 2 ? R_ASSISTANT : R_USER)) {
			errno = EINVAL;
			return gp_errprintf(err,
					    "chat: mistral: message %d: user and assistant must "
					    "take turns, from a user message",
					    i);
		}
		if (r == R_ASSISTANT) {
			puts_(b, msgs[i].content);
			puts_(b, "</s>");
			continue;
		}
		puts_(b, "[INST] ");
		if (system && turn == 0) {
			puts_(b, system);
			puts_(b, "\n\n");
		}
		puts_(b, msgs[i].content);
		puts_(b, " [/INST]");
	}
	return 0;
}

static const struct {
	gl_chat_t c;
	const char *name;
	const char *marker; /* in the model's Jinja template */
	const char *const stops[3];
	render_f render;
} templates[] = {
    {GL_CHAT_LLAMA3, "llama3", "<|start_header_id|>", {"<|eot_id|>", "<|end_of_text|>"}, llama3},
    {GL_CHAT_CHATML, "chatml", "<|im_start|>", {"<|im_end|>", "<|endoftext|>"}, chatml},
    {GL_CHAT_MISTRAL, "mistral", "[INST]", {"</s>"}, mistral},
    {GL_CHAT_NONE, "none", NULL, {"\nuser:", "\nsystem:"}, plain},
};
#define NTEMPLATES (sizeof(templates) / sizeof(templates[0]))

char *gl_chat_render(gl_chat_t c, const gl_msg_t *msgs, int n, int add_assistant, const char *bos,
		     gp_error_t *err)
{
	if (n <= 0 || !msgs) {
		errno = EINVAL;
		gp_errprintf(err, "chat: no messages");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (role_of(&msgs[i]) < 0 || !msgs[i].content) {
			errno = EINVAL;
			gp_errprintf(err,
				     "chat: message %d: role '%.32s' is not system, user or "
				     "assistant, or it has no content",
				     i, msgs[i].role ? msgs[i].role : "(null)");
			return NULL;
		}
	}
	size_t k = 0;
	while (k < NTEMPLATES && templates[k].c != c)
		k++;
	if (k == NTEMPLATES) {
		errno = EINVAL;
		gp_errprintf(err, "chat: unknown template %d", (int)c);
		return NULL;
	}
	buf_t b = {0};
	puts_(&b, "");
	if (templates[k].render(&b, msgs, n, add_assistant, bos, err) < 0) {
		free(b.s);
		return NULL;
	}
	if (b.failed) {
		free(b.s);
		errno = ENOMEM;
		gp_errprintf(err, "chat: out of memory");
		return NULL;
	}
	return b.s;
}

gl_chat_t gl_chat_detect(const char *jinja)
{
	for (size_t i = 0; jinja && i < NTEMPLATES; i++)
		if (templates[i].marker && strstr(jinja, templates[i].marker))
			return templates[i].c;
	return GL_CHAT_NONE;
}

int gl_chat_parse(const char *name, gl_chat_t *c)
{
	for (size_t i = 0; name && i < NTEMPLATES; i++)
		if (strcmp(name, templates[i].name) == 0) {
			*c = templates[i].c;
			return 0;
		}
	errno = EINVAL;
	return -1;
}

const char *gl_chat_name(gl_chat_t c)
{
	for (size_t i = 0; i < NTEMPLATES; i++)
		if (templates[i].c == c)
			return templates[i].name;
	return "unknown";
}

const char *const *gl_chat_stops(gl_chat_t c)
{
	for (size_t i = 0; i < NTEMPLATES; i++)
		if (templates[i].c == c)
			return templates[i].stops;
	return templates[NTEMPLATES - 1].stops;
}
