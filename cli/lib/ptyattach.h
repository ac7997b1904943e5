/* ptyattach.h: gsub --pty's client (docs/interactive.md): wait for the job in the queue
 * (saying its place), find its terminal's endpoint in the attempt's rendezvous store, connect
 * to the node's gstepd directly, prove who we are with a MUNGE credential that binds the
 * one-time key, then carry this terminal's bytes, size and signals until the task exits.
 *
 * On a terminal, stdin goes raw for the session (the remote terminal does the line editing,
 * echo and Ctrl-C) and is restored on every way out. Not on a terminal (a pipe), bytes pass as
 * they are, the end of input is sent as the remote terminal's EOF character, and SIGINT,
 * SIGQUIT, SIGTERM and SIGHUP given to gsub are passed to the task's foreground group.
 */
#ifndef GP_CLI_PTYATTACH_H
#define GP_CLI_PTYATTACH_H

#include <stdint.h>

#include "cli/lib/session.h"
#include "common/ptyframe.h"

/* Catch SIGINT, SIGQUIT, SIGTERM and SIGHUP for gp_job_wait_running (and the pty relay).
 * 0 / -1 with errno. */
int gp_job_wait_signals(void);
/* Wait until job id runs, saying its place in the queue on stderr when it changes (a caught
 * signal cancels the job). 0 with *attempt (and the job's node list into nodes, when not
 * NULL), or an exit status (> 0): the job ended first, or the signal's 128+N. */
int gp_job_wait_running(gp_session_t *s, uint64_t id, uint32_t *attempt, char *nodes,
			size_t nodes_len);

/* Job id's record, or NULL (said on stderr). Lives until the next call on s. */
Gpool__JobInfo *gp_job_info(gp_session_t *s, uint64_t id);

/* A fresh one-time key and its SHA-256 (JobSpec.pty_key_sha256). 0 / -1 with errno. */
int gp_pty_key_make(uint8_t key[GP_PTY_KEY_LEN], uint8_t sha[32]);

/* Wait for job id and attach to its terminal with key (NULL: reattach to the detached terminal
 * of a running job, as its owner: gsub --attach). Returns gsub's exit status: the task's exit
 * code (128 + signal for a signal), 0 when this gsub detached from a job started with
 * --pty-keep ("~." typed on a terminal, or SIGHUP), or 1 when the job ended without the
 * terminal or the connection failed (said on stderr). */
int gp_pty_attach(gp_session_t *s, uint64_t id, const uint8_t key[GP_PTY_KEY_LEN]);

#endif
