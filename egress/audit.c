#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>

#include "audit.h"
#include "journal.h"
#include "reflect.h"
#include "sse.h"
#include "upstream.h"

static const char	 redacted[] = "[redacted]";

static char *
audit_strdup(const char *s, int *ok)
{
	char	*p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		*ok = 0;
	return p;
}

static void
audit_free(struct audit *au)
{
	free(au->au_channel);
	free(au->au_turn);
	free(au->au_speaker);
	free(au->au_route);
	free(au->au_model);
	free(au->au_capture);
	free(au->au_sse);
	free(au);
}

struct audit *
audit_new(const char *channel, const char *turn, const char *speaker,
    const char *route, const char *model, uint64_t bytes_out)
{
	struct audit	*au;
	int		 ok = 1;

	if ((au = calloc(1, sizeof(*au))) == NULL)
		return NULL;
	au->au_channel = audit_strdup(channel, &ok);
	au->au_turn = audit_strdup(turn, &ok);
	au->au_speaker = audit_strdup(speaker, &ok);
	au->au_route = audit_strdup(route, &ok);
	au->au_model = audit_strdup(model, &ok);
	if (!ok) {
		audit_free(au);
		return NULL;
	}
	au->au_ttfb_ms = -1;
	au->au_bytes_out = bytes_out;
	clock_gettime(CLOCK_MONOTONIC, &au->au_start);
	return au;
}

static long
audit_ms(const struct audit *au)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - au->au_start.tv_sec) * 1000 +
	    (now.tv_nsec - au->au_start.tv_nsec) / 1000000;
}

void
audit_head(struct audit *au, long status, const struct up_hdr *h, size_t n)
{
	size_t	 i;
	int	 event_stream = 0;

	if (au == NULL || au->au_ttfb_ms >= 0)
		return;
	for (i = 0; i < n; i++)
		if (strcasecmp(h[i].name, "content-type") == 0 &&
		    strncasecmp(h[i].value, "text/event-stream", 17) == 0)
			event_stream = 1;
	au->au_ttfb_ms = audit_ms(au);
	au->au_status = status;
	/* Short of memory the record goes without the upstream's words. */
	if (status >= 400)
		au->au_capture = malloc(AUDIT_CAPTURE_MAX);
	else if (status >= 200 && status < 300 && event_stream &&
	    (au->au_sse = malloc(sizeof(*au->au_sse))) != NULL)
		sse_watch_init(au->au_sse);
}

void
audit_data(struct audit *au, const void *buf, size_t len)
{
	size_t	 n;

	if (au == NULL)
		return;
	au->au_bytes_in += len;
	if (au->au_capture != NULL) {
		n = AUDIT_CAPTURE_MAX - au->au_caplen;
		if (len > n)
			au->au_capture_cut = 1;
		else
			n = len;
		memcpy(au->au_capture + au->au_caplen, buf, n);
		au->au_caplen += n;
	} else if (au->au_sse != NULL && !au->au_sse_error)
		au->au_sse_error = sse_watch_feed(au->au_sse, buf, len);
}

void
audit_fail(struct audit *au, const char *why)
{
	size_t	 n;

	if (au == NULL || au->au_failed)
		return;
	au->au_failed = 1;
	n = strlen(why);
	if (n >= sizeof(au->au_why))
		n = sizeof(au->au_why) - 1;
	memcpy(au->au_why, why, n);
	au->au_why[n] = '\0';
}

/* Appends what fits; returns 0 once out is full. */
static int
audit_put(char *out, size_t outlen, size_t *o, const void *p, size_t n)
{
	int	 fits = 1;

	if (n > outlen - 1 - *o) {
		n = outlen - 1 - *o;
		fits = 0;
	}
	memcpy(out + *o, p, n);
	*o += n;
	out[*o] = '\0';
	return fits;
}

long
audit_redact(const char *secret, size_t slen, const char *text, size_t len,
    int complete, char *out, size_t outlen)
{
	struct reflect	*rf;
	const void	*p;
	size_t		 i, n, o = 0;
	int		 more = 1;

	if (outlen == 0)
		return 0;
	out[0] = '\0';
	if (slen == 0) {
		(void)audit_put(out, outlen, &o, text, len);
		return (long)o;
	}
	if ((rf = reflect_new(secret, slen)) == NULL) {
		(void)audit_put(out, outlen, &o, redacted, sizeof(redacted) - 1);
		return -1;
	}
	/*
	 * A byte at a time: the filter never releases a byte of an
	 * occurrence before the occurrence is complete, so when one
	 * completes, all of it is in what the filter holds and this byte.
	 */
	for (i = 0; i < len && more; i++) {
		errno = 0;
		if (reflect_feed(rf, text + i, 1, &p, &n) == -1) {
			if (errno == ENOMEM) {
				/* nothing said is better than a secret */
				reflect_free(rf);
				o = 0;
				(void)audit_put(out, outlen, &o, redacted,
				    sizeof(redacted) - 1);
				return -1;
			}
			more = audit_put(out, outlen, &o, redacted,
			    sizeof(redacted) - 1);
			reflect_reset(rf);
			continue;
		}
		more = audit_put(out, outlen, &o, p, n);
	}
	if (more && i == len && complete) {
		if (reflect_finish(rf, &p, &n) == -1)
			(void)audit_put(out, outlen, &o, redacted,
			    sizeof(redacted) - 1);
		else
			(void)audit_put(out, outlen, &o, p, n);
	}
	reflect_free(rf);
	/*
	 * A marker and the bytes beside it can spell the secret again
	 * ("]]]]" after "[redacted]" for a secret of brackets): then
	 * nothing is said.
	 */
	if (memmem(out, o, secret, slen) != NULL) {
		o = 0;
		out[0] = '\0';
		(void)audit_put(out, outlen, &o, redacted,
		    sizeof(redacted) - 1);
	}
	return (long)o;
}

/* What the upstream said, cleared of the secret, cut and escaped. */
static void
audit_words(char *out, size_t outlen, const char *label, const char *text,
    size_t len, int complete, const char *secret, size_t slen)
{
	char	 clean[AUDIT_ERROR_MAX + 1];
	size_t	 o = strlen(out), n;
	long	 k;

	if ((k = audit_redact(secret, slen, text, len, complete, clean,
	    sizeof(clean))) < 0)
		k = (long)strlen(clean);
	if (o > 0 && o + 2 < outlen) {
		memcpy(out + o, "; ", 3);
		o += 2;
	}
	n = strlen(label);
	if (o + n >= outlen)
		return;
	memcpy(out + o, label, n + 1);
	o += n;
	(void)journal_escape(out + o, outlen - o, clean, (size_t)k);
	o = strlen(out);
	if ((!complete || (size_t)k >= AUDIT_ERROR_MAX) && o + 3 < outlen)
		memcpy(out + o, "...", 4);
}

void
audit_close(struct audit *au, const char *secret, size_t slen)
{
	static struct jrec	 jr;
	char			 err[4 * (AUDIT_WHY_MAX + AUDIT_ERROR_MAX) + 64];
	int			 warn;

	if (au == NULL)
		return;
	err[0] = '\0';
	if (au->au_failed)
		audit_words(err, sizeof(err), "", au->au_why,
		    strlen(au->au_why), 1, secret, slen);
	if (au->au_capture != NULL)
		audit_words(err, sizeof(err), "body: ", au->au_capture,
		    au->au_caplen, !au->au_capture_cut, secret, slen);
	if (au->au_sse_error)
		audit_words(err, sizeof(err), "stream error event: ",
		    au->au_sse->sw_data, au->au_sse->sw_datalen,
		    !au->au_sse->sw_data_cut, secret, slen);
	warn = au->au_failed || au->au_status >= 400 || au->au_sse_error;
	jrec_init(&jr, warn ? LOG_WARNING : LOG_INFO, "upstream call");
	jrec_add_str(&jr, "channel", au->au_channel);
	if (au->au_turn != NULL)
		jrec_add_str(&jr, "turn", au->au_turn);
	if (au->au_speaker != NULL)
		jrec_add_str(&jr, "speaker", au->au_speaker);
	jrec_add_str(&jr, "route", au->au_route);
	if (au->au_model != NULL)
		jrec_add_str(&jr, "model", au->au_model);
	jrec_add_uint(&jr, "status", (uint64_t)au->au_status);
	if (au->au_ttfb_ms >= 0)
		jrec_add_uint(&jr, "ttfb_ms", (uint64_t)au->au_ttfb_ms);
	jrec_add_uint(&jr, "ms", (uint64_t)audit_ms(au));
	jrec_add_uint(&jr, "bytes_out", au->au_bytes_out);
	jrec_add_uint(&jr, "bytes_in", au->au_bytes_in);
	if (err[0] != '\0')
		jrec_add_escaped(&jr, "error", err);
	(void)jrec_send(&jr);
	audit_free(au);
}
