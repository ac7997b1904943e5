/* pbfield.h: reading protobuf-c messages by their descriptors (the JSON views of cli/lib,
 * the fuzz harnesses' walk over every field). */
#ifndef GPOOL_PBFIELD_H
#define GPOOL_PBFIELD_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/* The size of one element of a repeated field of type t, as protobuf-c lays out the array. */
size_t gp_pb_value_size(ProtobufCType t);

#endif
