/* test_chat: the chat templates (llm/chat.c): each template's exact text for a system message
 * and several turns, with and without the assistant's header; the Jinja markers recognised;
 * names; stop texts; refused conversations (no messages, an unknown role, a system message
 * Mistral cannot place, turns out of order). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/chat.h"
#include "llm/test/tok_check.h"

static const gl_msg_t conv[] = {
    {"system", "Be brief."},
    {"user", "Hi"},
    {"assistant", "Hello!"},
    {"user", "Why?"},
};

static void expect(gl_chat_t c, const gl_msg_t *m, int n, int add, const char *bos,
		   const char *want)
{
	gp_error_t err = {{0}};
	char *s = gl_chat_render(c, m, n, add, bos, &err);
	if (!s || strcmp(s, want) != 0)
		fprintf(stderr, "%s: got '%s' (%s)\nexpected '%s'\n", gl_chat_name(c),
			s ? s : "(null)", err.text, want);
	CHECK(s && strcmp(s, want) == 0);
	free(s);
}

static void refused(gl_chat_t c, const gl_msg_t *m, int n, const char *words)
{
	gp_error_t err = {{0}};
	errno = 0;
	CHECK(gl_chat_render(c, m, n, 1, NULL, &err) == NULL && errno == EINVAL);
	if (!strstr(err.text, words))
		fprintf(stderr, "message '%s' lacks '%s'\n", err.text, words);
	CHECK(strstr(err.text, words) != NULL);
}

static void llama3(void)
{
	expect(GL_CHAT_LLAMA3, conv, 4, 1, "<|begin_of_text|>",
	       "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
	       "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
	       "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
	       "<|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>"
	       "<|start_header_id|>assistant<|end_header_id|>\n\n");
	/* no BOS text, no header; the template trims each content */
	expect(GL_CHAT_LLAMA3, (gl_msg_t[]){{"user", "  Hi there \n"}}, 1, 0, NULL,
	       "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>");
}

static void chatml(void)
{
	expect(GL_CHAT_CHATML, conv, 4, 1, "<s>",
	       "<|im_start|>system\nBe brief.<|im_end|>\n"
	       "<|im_start|>user\nHi<|im_end|>\n"
	       "<|im_start|>assistant\nHello!<|im_end|>\n"
	       "<|im_start|>user\nWhy?<|im_end|>\n"
	       "<|im_start|>assistant\n");
	expect(GL_CHAT_CHATML, conv + 1, 1, 0, NULL, "<|im_start|>user\nHi<|im_end|>\n");
}

static void mistral(void)
{
	expect(GL_CHAT_MISTRAL, conv, 4, 1, "<s>",
	       "<s>[INST] Be brief.\n\nHi [/INST]Hello!</s>[INST] Why? [/INST]");
	expect(GL_CHAT_MISTRAL, conv + 1, 3, 0, NULL,
	       "[INST] Hi [/INST]Hello!</s>[INST] Why? [/INST]");
	/* ending on the assistant's message: the model goes on after its </s> */
	expect(GL_CHAT_MISTRAL, conv + 1, 2, 1, "<s>", "<s>[INST] Hi [/INST]Hello!</s>");
	refused(GL_CHAT_MISTRAL, (gl_msg_t[]){{"user", "a"}, {"system", "b"}}, 2, "system");
	refused(GL_CHAT_MISTRAL, conv, 1, "system");
	refused(GL_CHAT_MISTRAL, conv + 2, 2, "turns");
	refused(GL_CHAT_MISTRAL, (gl_msg_t[]){{"user", "a"}, {"user", "b"}}, 2, "turns");
}

static void plain(void)
{
	expect(GL_CHAT_NONE, conv, 4, 1, "<s>",
	       "system: Be brief.\nuser: Hi\nassistant: Hello!\nuser: Why?\nassistant:");
	expect(GL_CHAT_NONE, conv + 1, 1, 0, NULL, "user: Hi\n");
}

static void errors(void)
{
	static const gl_chat_t all[] = {GL_CHAT_NONE, GL_CHAT_LLAMA3, GL_CHAT_CHATML,
					GL_CHAT_MISTRAL};
	for (int i = 0; i < 4; i++) {
		refused(all[i], conv, 0, "no messages");
		refused(all[i], NULL, 1, "no messages");
		refused(all[i], (gl_msg_t[]){{"user", "a"}, {"tool", "b"}}, 2, "'tool'");
		refused(all[i], (gl_msg_t[]){{NULL, "a"}}, 1, "role");
		refused(all[i], (gl_msg_t[]){{"user", NULL}}, 1, "no content");
	}
	refused((gl_chat_t)42, conv, 4, "template");
}

static void names(void)
{
	CHECK(gl_chat_detect(NULL) == GL_CHAT_NONE);
	CHECK(gl_chat_detect("{% for m in messages %}{{ m.content }}{% endfor %}") == GL_CHAT_NONE);
	CHECK(
	    gl_chat_detect("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' }}") ==
	    GL_CHAT_LLAMA3);
	CHECK(gl_chat_detect("{{'<|im_start|>' + message['role'] + '\n'}}") == GL_CHAT_CHATML);
	CHECK(gl_chat_detect("{{ bos_token }}{{ '[INST] ' + message['content'] + ' [/INST]' }}") ==
	      GL_CHAT_MISTRAL);
	static const char *const ns[] = {"none", "llama3", "chatml", "mistral"};
	for (int i = 0; i < 4; i++) {
		gl_chat_t c = (gl_chat_t)-1;
		CHECK(gl_chat_parse(ns[i], &c) == 0 && (int)c == i);
		CHECK(strcmp(gl_chat_name(c), ns[i]) == 0);
	}
	gl_chat_t c = GL_CHAT_CHATML;
	errno = 0;
	CHECK(gl_chat_parse("alpaca", &c) == -1 && errno == EINVAL && c == GL_CHAT_CHATML);
	CHECK(gl_chat_parse(NULL, &c) == -1);
	CHECK(strcmp(gl_chat_stops(GL_CHAT_LLAMA3)[0], "<|eot_id|>") == 0);
	CHECK(strcmp(gl_chat_stops(GL_CHAT_CHATML)[0], "<|im_end|>") == 0);
	CHECK(strcmp(gl_chat_stops(GL_CHAT_MISTRAL)[0], "</s>") == 0);
	CHECK(gl_chat_stops(GL_CHAT_MISTRAL)[1] == NULL);
	CHECK(gl_chat_stops(GL_CHAT_NONE)[0] != NULL);
}

int main(void)
{
	llama3();
	chatml();
	mistral();
	plain();
	errors();
	names();
	printf("test_chat: ok\n");
	return 0;
}
