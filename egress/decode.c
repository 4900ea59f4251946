/*
 * Content decoding for the controlled fetch, with zlib and brotli.  Output
 * goes through a small scratch buffer and is appended only while it stays
 * within the bound, so a decompression bomb costs at most the bound plus
 * one scratch buffer before it is cut.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <brotli/decode.h>
#include <zlib.h>

#include "decode.h"
#include "log.h"

#define DEC_SCRATCH	16384
#define DEC_BUF_INITIAL	16384
/* zlib counts in uInt: feed it at most this much at a time. */
#define DEC_ZLIB_PIECE	(1024u * 1024)

struct dec {
	enum dec_kind		 d_kind;
	size_t			 d_max;
	size_t			 d_wire;
	uint8_t			*d_buf;
	size_t			 d_len;
	size_t			 d_cap;
	enum dec_result		 d_err;
	int			 d_ended;	/* the coded stream ended */
	int			 d_trailer;	/* and what followed is ignored */
	/* zlib (gzip, deflate) */
	z_stream		 d_z;
	int			 d_z_init;
	uint8_t			 d_stash;	/* deflate's first byte, */
	int			 d_nstash;	/* held to tell zlib from raw */
	/* brotli */
	BrotliDecoderState	*d_br;
	uint8_t			 d_scratch[DEC_SCRATCH];
};

const char *
dec_result_to_string(enum dec_result r)
{
	switch (r) {
	case DEC_OK:
		return "ok";
	case DEC_WIRE_TOO_LARGE:
		return "answer too large";
	case DEC_TOO_LARGE:
		return "decoded answer too large";
	case DEC_CORRUPT:
		return "corrupt compressed answer";
	case DEC_TRUNCATED:
		return "compressed answer cut short";
	}
	return "unknown decoding result";
}

const char *
dec_kind_name(enum dec_kind k)
{
	switch (k) {
	case DEC_IDENTITY:
		return "identity";
	case DEC_GZIP:
		return "gzip";
	case DEC_DEFLATE:
		return "deflate";
	case DEC_BR:
		return "br";
	}
	return "?";
}

static int
dec_is_space(char c)
{
	return c == ' ' || c == '\t';
}

int
dec_kind_parse(const char *value, enum dec_kind *out)
{
	const char	*p = value, *end;
	size_t		 n;
	int		 found = 0;
	enum dec_kind	 k = DEC_IDENTITY;

	for (;;) {
		while (dec_is_space(*p))
			p++;
		end = p + strcspn(p, ",");
		n = end - p;
		while (n > 0 && dec_is_space(p[n - 1]))
			n--;
		if (n == 0 || (n == 8 && strncasecmp(p, "identity", 8) == 0))
			;
		else if (found)
			return -1;	/* a stack of codings */
		else if ((n == 4 && strncasecmp(p, "gzip", 4) == 0) ||
		    (n == 6 && strncasecmp(p, "x-gzip", 6) == 0)) {
			k = DEC_GZIP;
			found = 1;
		} else if (n == 7 && strncasecmp(p, "deflate", 7) == 0) {
			k = DEC_DEFLATE;
			found = 1;
		} else if (n == 2 && strncasecmp(p, "br", 2) == 0) {
			k = DEC_BR;
			found = 1;
		} else
			return -1;
		if (*end == '\0')
			break;
		p = end + 1;
	}
	*out = k;
	return 0;
}

struct dec *
dec_new(enum dec_kind kind, size_t max)
{
	struct dec	*d;

	if (max == 0)
		return NULL;
	if ((d = calloc(1, sizeof(*d))) == NULL)
		fatal("%s", __func__);
	d->d_kind = kind;
	d->d_max = max;
	switch (kind) {
	case DEC_IDENTITY:
	case DEC_DEFLATE:	/* made once the first two bytes are in */
		break;
	case DEC_GZIP:
		if (inflateInit2(&d->d_z, 15 + 16) != Z_OK) {
			free(d);
			return NULL;
		}
		d->d_z_init = 1;
		break;
	case DEC_BR:
		if ((d->d_br = BrotliDecoderCreateInstance(NULL, NULL,
		    NULL)) == NULL) {
			free(d);
			return NULL;
		}
		break;
	default:
		free(d);
		return NULL;
	}
	return d;
}

void
dec_free(struct dec *d)
{
	if (d == NULL)
		return;
	if (d->d_z_init)
		inflateEnd(&d->d_z);
	if (d->d_br != NULL)
		BrotliDecoderDestroyInstance(d->d_br);
	free(d->d_buf);
	free(d);
}

/* Keep n decoded bytes, or fail one byte past the bound. */
static enum dec_result
dec_append(struct dec *d, const void *p, size_t n)
{
	size_t	 cap;
	uint8_t	*nb;

	if (n == 0)
		return DEC_OK;
	if (n > d->d_max - d->d_len)
		return d->d_err = DEC_TOO_LARGE;
	if (d->d_len + n > d->d_cap) {
		cap = d->d_cap == 0 ? DEC_BUF_INITIAL : d->d_cap;
		while (cap < d->d_len + n)
			cap = cap > d->d_max / 2 ? d->d_max : cap * 2;
		if (cap > d->d_max)
			cap = d->d_max;
		if ((nb = realloc(d->d_buf, cap)) == NULL)
			fatal("%s", __func__);
		d->d_buf = nb;
		d->d_cap = cap;
	}
	memcpy(d->d_buf + d->d_len, p, n);
	d->d_len += n;
	return DEC_OK;
}

/* RFC 1950: CM 8, CINFO at most 7, and the check bits. */
static int
dec_is_zlib_header(uint8_t cmf, uint8_t flg)
{
	return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 &&
	    ((cmf << 8) | flg) % 31 == 0;
}

static enum dec_result
dec_inflate(struct dec *d, const uint8_t *in, size_t len)
{
	size_t	 piece, produced;
	int	 rc;

	while (len > 0) {
		if (d->d_ended) {
			/* Another gzip member may follow; anything else
			 * after the end is ignored up to the end of the
			 * answer, however the answer is cut into pieces. */
			if (d->d_kind != DEC_GZIP || d->d_trailer ||
			    in[0] != 0x1f) {
				d->d_trailer = 1;
				return DEC_OK;
			}
			if (inflateReset(&d->d_z) != Z_OK)
				return d->d_err = DEC_CORRUPT;
			d->d_ended = 0;
		}
		piece = len < DEC_ZLIB_PIECE ? len : DEC_ZLIB_PIECE;
		d->d_z.next_in = (Bytef *)(uintptr_t)in;
		d->d_z.avail_in = (uInt)piece;
		do {
			d->d_z.next_out = d->d_scratch;
			d->d_z.avail_out = sizeof(d->d_scratch);
			rc = inflate(&d->d_z, Z_NO_FLUSH);
			if (rc != Z_OK && rc != Z_STREAM_END &&
			    rc != Z_BUF_ERROR)
				return d->d_err = DEC_CORRUPT;
			produced = sizeof(d->d_scratch) - d->d_z.avail_out;
			if (dec_append(d, d->d_scratch, produced) != DEC_OK)
				return d->d_err;
			if (rc == Z_STREAM_END) {
				d->d_ended = 1;
				break;
			}
			if (rc == Z_BUF_ERROR && produced == 0)
				break;
		} while (d->d_z.avail_in > 0 || d->d_z.avail_out == 0);
		/* What zlib did not take is past the end of a stream. */
		in += piece - d->d_z.avail_in;
		len -= piece - d->d_z.avail_in;
		if (d->d_z.avail_in > 0 && !d->d_ended)
			return d->d_err = DEC_CORRUPT;
	}
	return DEC_OK;
}

static enum dec_result
dec_deflate(struct dec *d, const uint8_t *in, size_t len)
{
	uint8_t		 first;
	int		 wbits;
	enum dec_result	 r;

	if (!d->d_z_init) {
		if (d->d_nstash == 0) {
			d->d_stash = in[0];
			d->d_nstash = 1;
			in++;
			len--;
			if (len == 0)
				return DEC_OK;
		}
		wbits = dec_is_zlib_header(d->d_stash, in[0]) ? 15 : -15;
		if (inflateInit2(&d->d_z, wbits) != Z_OK)
			return d->d_err = DEC_CORRUPT;
		d->d_z_init = 1;
		first = d->d_stash;
		d->d_nstash = 0;
		if ((r = dec_inflate(d, &first, 1)) != DEC_OK)
			return r;
	}
	return dec_inflate(d, in, len);
}

static enum dec_result
dec_brotli(struct dec *d, const uint8_t *in, size_t len)
{
	BrotliDecoderResult	 rc;
	size_t			 avail_out, produced;
	uint8_t			*next_out;

	if (d->d_ended)
		return DEC_OK;
	for (;;) {
		next_out = d->d_scratch;
		avail_out = sizeof(d->d_scratch);
		rc = BrotliDecoderDecompressStream(d->d_br, &len, &in,
		    &avail_out, &next_out, NULL);
		produced = sizeof(d->d_scratch) - avail_out;
		if (rc == BROTLI_DECODER_RESULT_ERROR)
			return d->d_err = DEC_CORRUPT;
		if (dec_append(d, d->d_scratch, produced) != DEC_OK)
			return d->d_err;
		if (rc == BROTLI_DECODER_RESULT_SUCCESS) {
			d->d_ended = 1;
			return DEC_OK;
		}
		if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
			return DEC_OK;
	}
}

enum dec_result
dec_feed(struct dec *d, const void *in, size_t len)
{
	if (d->d_err != DEC_OK)
		return d->d_err;
	if (len == 0)
		return DEC_OK;
	if (len > d->d_max - d->d_wire)
		return d->d_err = DEC_WIRE_TOO_LARGE;
	d->d_wire += len;
	switch (d->d_kind) {
	case DEC_IDENTITY:
		return dec_append(d, in, len);
	case DEC_GZIP:
		return dec_inflate(d, in, len);
	case DEC_DEFLATE:
		return dec_deflate(d, in, len);
	case DEC_BR:
		return dec_brotli(d, in, len);
	}
	return d->d_err = DEC_CORRUPT;
}

enum dec_result
dec_finish(struct dec *d)
{
	if (d->d_err != DEC_OK)
		return d->d_err;
	/* An empty body (a 204, or a redirect's) needs no coding. */
	if (d->d_kind == DEC_IDENTITY || d->d_wire == 0)
		return DEC_OK;
	if (!d->d_ended)
		return d->d_err = DEC_TRUNCATED;
	return DEC_OK;
}

const uint8_t *
dec_data(const struct dec *d, size_t *len)
{
	*len = d->d_len;
	return d->d_buf;
}

size_t
dec_wire_bytes(const struct dec *d)
{
	return d->d_wire;
}
