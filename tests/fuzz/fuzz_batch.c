/* fuzz_batch: a Batch body straight into gpool__batch__unpack; every oneof member of every
 * Msg is walked, and each message and the whole batch must re-encode canonically. The first
 * byte picks the decoder, so that each message type is also fuzzed on its own. A Batch is also
 * counted without decoding (gp_wire_count_members) and decoded under the wire's memory bound
 * (gp_wire_unpack_batch): the count is the decoder's, and the bounded decoder agrees. */
#include "tests/fuzz/fuzz.h"
#include "common/wire.h"
#include "proto/gpool.pb-c.h"

static const ProtobufCMessageDescriptor *const direct[] = {
    &gpool__batch__descriptor,	       &gpool__msg__descriptor,
    &gpool__job_spec__descriptor,      &gpool__submit_request__descriptor,
    &gpool__node_register__descriptor, &gpool__launch__descriptor,
    &gpool__job_info__descriptor,      &gpool__envelope__descriptor,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const ProtobufCMessageDescriptor *d =
	    direct[data[0] % (sizeof(direct) / sizeof(direct[0]))];
	data++;
	size--;
	ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, size, data);
	if (d == &gpool__batch__descriptor) {
		long members = gp_wire_count_members(data, size);
		Gpool__Batch *bb = gp_wire_unpack_batch(data, size);
		FUZZ_CHECK(members >= -1);
		if (members >= 0 && m)
			FUZZ_CHECK((size_t)members == ((Gpool__Batch *)m)->n_msgs);
		if (bb) {
			FUZZ_CHECK(m != NULL && bb->n_msgs == ((Gpool__Batch *)m)->n_msgs);
			gpool__batch__free_unpacked(bb, NULL);
		}
	}
	if (!m)
		return 0;
	(void)fuzz_walk(m);
	if (d == &gpool__batch__descriptor) {
		Gpool__Batch *b = (Gpool__Batch *)m;
		for (size_t i = 0; i < b->n_msgs; i++) {
			const Gpool__Msg *msg = b->msgs[i];
			/* the oneof case names a member that is set, or nothing */
			const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
			    &gpool__msg__descriptor, msg->m_case);
			FUZZ_CHECK(msg->m_case == GPOOL__MSG__M__NOT_SET || f != NULL);
			(void)fuzz_round_trip(&msg->base);
		}
	}
	(void)fuzz_round_trip(m);
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}
