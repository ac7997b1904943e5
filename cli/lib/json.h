/* json.h: gpool messages as JSON, for every command's --json. One converter walks the
 * protobuf-c descriptors, so a field added to gpool.proto shows up without code here. It
 * follows protobuf's JSON mapping with the .proto field names kept: every field is present
 * (defaults too), enums are their names ("RUNNING", "NODE_UP", "VENDOR_AMD"), bytes are
 * base64, 64-bit integers are JSON numbers.
 */
#ifndef GP_CLI_JSON_H
#define GP_CLI_JSON_H

#include <jansson.h>
#include <stdio.h>

#include "proto/gpool.pb-c.h"

/* A new reference, or NULL when out of memory. */
json_t *gp_json_message(const ProtobufCMessage *m);

json_t *gp_json_job(const Gpool__JobInfo *job);
json_t *gp_json_node(const Gpool__NodeInfo *node);
json_t *gp_json_card(const Gpool__Card *card);

/* Print v (indented, keys in .proto order) and a newline; steals the reference.
 * 0 / -1 (v NULL or write error). */
int gp_json_print(json_t *v, FILE *f);

#endif
