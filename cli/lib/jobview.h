/* jobview.h: how a job reads on a terminal: gstat's table (as squeue) and its detailed
 * key=value view (as `scontrol show job`). `now` is passed in so that output is testable. */
#ifndef GP_CLI_JOBVIEW_H
#define GP_CLI_JOBVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/gpool.pb-c.h"
#include "common/table.h"

/* squeue's TIME: "[D-][H:]M:SS" of run time so far (or in total, once ended). */
void gp_jobview_elapsed(const Gpool__JobInfo *job, double now, char *buf, size_t len);
/* Nodes the job uses (or asks for, while pending). */
unsigned gp_jobview_nnodes(const Gpool__JobInfo *job);
/* "2024-05-01T12:00:00" in local time, "Unknown" for 0. */
void gp_jobview_date(double t, char *buf, size_t len);

/* A job's id as people read it: "12", or "12_7" for task 7 of array 12. */
void gp_jobview_id(const Gpool__JobInfo *job, char *buf, size_t len);

/* The table JOBID NAME USER ST TIME NODES NODELIST(REASON). Pending tasks of one array that
 * wait for the same reason, next to each other, are one row ("12_[40-999]"). NULL when out of
 * memory. */
gp_table_t *gp_jobview_table(Gpool__JobInfo *const *jobs, size_t n, double now);

/* How a job's energy was found, from JobInfo.energy_sources: "counter", "sampled",
 * "upper bound" (power limit x time), joined with '+' ("sampled+upper bound"); "" when
 * unknown (a job accounted before the sources were kept). */
void gp_jobview_energy_sources(uint32_t sources, char *buf, size_t len);

/* The detailed view of one job. 0 / -1 on a write error. */
int gp_jobview_long(const Gpool__JobInfo *job, double now, FILE *f);

#endif
