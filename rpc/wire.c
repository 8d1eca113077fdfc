/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protobuf wire format read directly, before a request is unpacked: both daemons
 * bound and check what the kubelet sends with it (rpc.h).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rpc.h"

#define WIRE_DEPTH_MAX 8

static int wire_varint(const uint8_t *p, size_t len, size_t *at, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (*at >= len)
			return -EBADMSG;
		c = p[(*at)++];
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

int rpc_wire_next(const uint8_t *p, size_t len, size_t *at, uint64_t *ret_field,
		 const uint8_t **ret_data, size_t *ret_len)
{
	uint64_t key, n;

	if (*at >= len)
		return 0;
	if (wire_varint(p, len, at, &key) < 0)
		return -EBADMSG;
	*ret_field = key >> 3;
	*ret_data = NULL;
	*ret_len = 0;
	switch (key & 7) {
	case 0:
		return wire_varint(p, len, at, &n) < 0 ? -EBADMSG : 1;
	case 1:
	case 5:
		n = (key & 7) == 1 ? 8 : 4;
		if (n > len - *at)
			return -EBADMSG;
		*at += n;
		return 1;
	case 2:
		if (wire_varint(p, len, at, &n) < 0 || n > len - *at)
			return -EBADMSG;
		*ret_data = p + *at;
		*ret_len = n;
		*at += n;
		return 1;
	default:
		return -EBADMSG; /* groups: protobuf-c refuses them too */
	}
}

static int wire_scan(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len,
		     unsigned depth, const uint8_t **ret_s, size_t *ret_len)
{
	const uint8_t *data;
	uint64_t field;
	size_t at = 0, n;
	int r;

	while ((r = rpc_wire_next(p, len, &at, &field, &data, &n)) > 0) {
		const ProtobufCFieldDescriptor *f;

		if (!data)
			continue;
		f = field <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, field) : NULL;
		if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(data, '\0', n)) {
			*ret_s = data;
			*ret_len = n;
			return 1;
		}
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < WIRE_DEPTH_MAX) {
			r = wire_scan(f->descriptor, data, n, depth + 1, ret_s, ret_len);
			if (r != 0)
				return r;
		}
	}
	return r;
}

int rpc_wire_find_nul(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
		     const uint8_t **ret_s, size_t *ret_len)
{
	return wire_scan(d, buf, len, 0, ret_s, ret_len);
}
