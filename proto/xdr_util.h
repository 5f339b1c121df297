/*
 * xdr_util.h — bounds-checked big-endian readers and writers for the few
 * XDR structures the wire layer encodes by hand (RFC 4506): the RPC call and
 * reply headers and the credentials in them.  Procedure arguments and results
 * use libnfs's generated zdr_* routines instead; this file never allocates.
 */
#ifndef NFSCACHED_XDR_UTIL_H
#define NFSCACHED_XDR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A read cursor over [buf, buf + len).  Every get fails (returns false)
 * instead of reading past the end; `pos` never exceeds `len`. */
struct xdr_cursor {
	const uint8_t *buf;
	size_t len;   /* bytes in buf */
	size_t pos;   /* bytes consumed, 0..len */
};

static inline void xdr_cursor_init(struct xdr_cursor *c, const void *buf, size_t len)
{
	c->buf = buf;
	c->len = len;
	c->pos = 0;
}

static inline size_t xdr_remaining(const struct xdr_cursor *c)
{
	return c->len - c->pos;
}

static inline uint32_t xdr_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void xdr_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline bool xdr_get_u32(struct xdr_cursor *c, uint32_t *v)
{
	if (xdr_remaining(c) < 4)
		return false;
	*v = xdr_be32(c->buf + c->pos);
	c->pos += 4;
	return true;
}

/* Variable-length opaque (RFC 4506 4.10): a length no larger than `max`,
 * then the bytes padded to 4.  *data points into the cursor's buffer. */
static inline bool xdr_get_opaque(struct xdr_cursor *c, uint32_t max,
				  const uint8_t **data, uint32_t *len)
{
	uint32_t n;

	if (!xdr_get_u32(c, &n) || n > max)
		return false;
	size_t padded = ((size_t)n + 3) & ~(size_t)3;
	if (xdr_remaining(c) < padded)
		return false;
	*data = c->buf + c->pos;
	*len = n;
	c->pos += padded;
	return true;
}

#endif
