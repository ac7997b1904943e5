/* chat.h - turning a conversation into a prompt: the chat templates of Llama 3, ChatML (qwen2,
 * many fine-tunes), Mistral/Llama 2 ([INST]) and a plain fallback. The model file's own
 * template (tokenizer.chat_template, a Jinja text) is recognised by its markers, not run. */
#ifndef GL_CHAT_H
#define GL_CHAT_H

#include <stddef.h>

#include "common/error.h"

typedef enum {
	GL_CHAT_NONE = 0, /* "role: content" lines and "assistant:": a base model */
	GL_CHAT_LLAMA3 = 1,
	GL_CHAT_CHATML = 2,
	GL_CHAT_MISTRAL = 3,
} gl_chat_t;

typedef struct {
	const char *role; /* "system", "user", "assistant" */
	const char *content;
} gl_msg_t;

/* The template of a tokenizer.chat_template text (NULL: GL_CHAT_NONE). */
gl_chat_t gl_chat_detect(const char *jinja);
/* By name: "llama3", "chatml", "mistral", "none"; -1 (EINVAL) otherwise. */
int gl_chat_parse(const char *name, gl_chat_t *c);
const char *gl_chat_name(gl_chat_t c);
/* The prompt text of N messages, then the assistant's header (ADD_ASSISTANT) so the model
 * answers; BOS is the model's begin-of-text text where the template writes it (NULL: none). A
 * malloc'd string, or NULL with errno (EINVAL: an unknown role, a system message Mistral's
 * template cannot place) and ERR. */
char *gl_chat_render(gl_chat_t c, const gl_msg_t *msgs, int n, int add_assistant, const char *bos,
		     gp_error_t *err);
/* Texts that end the assistant's turn in this template ("<|eot_id|>", "<|im_end|>", ...),
 * NULL-terminated: the engine stops on them as on stop strings. */
const char *const *gl_chat_stops(gl_chat_t c);

#endif
