/* join_usage.h: gpool-join's subcommands as gpool's usage lists them too (gpool hands them to
 * gpool-join, which links libcrypto: cli/gpool.c's hand_to_join). One text for both. */
#ifndef GP_CLI_LIB_JOIN_USAGE_H
#define GP_CLI_LIB_JOIN_USAGE_H

#define GPJ_USAGE_TOKEN                                                                            \
	"join-token [--ttl D]           root, on the scheduler's pc: a single-use token for one "  \
	"new pc"
#define GPJ_USAGE_JOIN                                                                             \
	"join tcp://ADDR:PORT TOKEN     root, on the new pc: install the pool's key and "          \
	"gpool.conf"
#define GPJ_USAGE_LEAVE                                                                            \
	"leave [--timeout D]            root, on a pc of the pool: drain it and take it out"

#endif
