/*
 * The upstream client's TLS (upstreamint.h): OpenSSL reads and writes a
 * connection's buffers through a BIO of ours, with a context per CA file
 * and a session to resume per pool key.
 */
#include <sys/queue.h>
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "upstreamint.h"

BIO_METHOD	*up_bio_method;
int		 up_ssl_index = -1;

/*
 * TLS over the connection's buffers: reads take the stash, then the
 * window; writes go to co_out.
 */

static int
up_bio_write(BIO *b, const char *p, int n)
{
	struct up_conn	*co = BIO_get_data(b);

	BIO_clear_retry_flags(b);
	if (n <= 0)
		return 0;
	up_buf_add(&co->co_out, p, (size_t)n);
	return n;
}

static int
up_bio_read(BIO *b, char *p, int n)
{
	struct up_conn	*co = BIO_get_data(b);
	size_t		 k;

	BIO_clear_retry_flags(b);
	if (n <= 0)
		return 0;
	if (co->co_stash.ub_len > 0) {
		k = co->co_stash.ub_len < (size_t)n ? co->co_stash.ub_len :
		    (size_t)n;
		memcpy(p, co->co_stash.ub_p + co->co_stash.ub_off, k);
		up_buf_take(&co->co_stash, k);
		return (int)k;
	}
	if (co->co_winlen > 0) {
		k = co->co_winlen < (size_t)n ? co->co_winlen : (size_t)n;
		memcpy(p, co->co_win, k);
		co->co_win += k;
		co->co_winlen -= k;
		return (int)k;
	}
	if (co->co_eof)
		return 0;
	BIO_set_retry_read(b);
	return -1;
}

static long
up_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct up_conn	*co = BIO_get_data(b);

	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_PENDING:
		return (long)(co->co_stash.ub_len + co->co_winlen);
	case BIO_CTRL_WPENDING:
		return (long)co->co_out.ub_len;
	case BIO_CTRL_EOF:
		return co->co_eof && co->co_stash.ub_len + co->co_winlen == 0;
	default:
		return 0;
	}
}

static int
up_bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

/*
 * TLS contexts, one per CA file, and sessions to resume, one per pool key.
 */

static int
up_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct up_conn		*co = SSL_get_ex_data(ssl, up_ssl_index);
	struct up_session	*se, *slot = NULL;
	size_t			 i;

	if (co == NULL || co->co_key == NULL)
		return 0;
	for (i = 0; i < UP_SESSIONS_MAX; i++) {
		se = &co->co_up->up_sessions[i];
		if (se->se_key != NULL && strcmp(se->se_key, co->co_key) == 0) {
			slot = se;
			break;
		}
		if (se->se_key == NULL && slot == NULL)
			slot = se;
	}
	if (slot == NULL)
		slot = &co->co_up->up_sessions[0];
	if (slot->se_sess != NULL)
		SSL_SESSION_free(slot->se_sess);
	if (slot->se_key == NULL || strcmp(slot->se_key, co->co_key) != 0) {
		free(slot->se_key);
		slot->se_key = up_strdup(co->co_key);
	}
	slot->se_sess = sess;
	return 1;
}

SSL_SESSION *
up_session_find(struct upstream *up, const char *key)
{
	size_t	 i;

	for (i = 0; i < UP_SESSIONS_MAX; i++)
		if (up->up_sessions[i].se_key != NULL &&
		    strcmp(up->up_sessions[i].se_key, key) == 0)
			return up->up_sessions[i].se_sess;
	return NULL;
}

/* The last OpenSSL error, for the host log. */
const char *
up_ssl_error(char *buf, size_t len)
{
	unsigned long	 e = ERR_peek_last_error();

	if (e == 0)
		snprintf(buf, len, "TLS failed");
	else
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
	return buf;
}

/*
 * The context for a CA file (NULL: the system's, by its hashed directory),
 * made on first use.  XXX a CA file changed on disk counts once egress
 * restarts.
 */
SSL_CTX *
up_ssl_ctx(struct upstream *up, const char *ca, char *err, size_t errlen)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	struct up_ctx	*cx;
	struct stat	 st;
	SSL_CTX		*ctx;
	int		 ok;

	TAILQ_FOREACH(cx, &up->up_ctxs, cx_entry)
		if ((cx->cx_ca == NULL && ca == NULL) || (cx->cx_ca != NULL &&
		    ca != NULL && strcmp(cx->cx_ca, ca) == 0))
			return cx->cx_ctx;
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		up_ssl_error(err, errlen);
		return NULL;
	}
	ok = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) == 0;
	if (ok && ca != NULL)
		ok = SSL_CTX_load_verify_file(ctx, ca) == 1;
	else if (ok && stat(X509_get_default_cert_dir(), &st) == 0 &&
	    S_ISDIR(st.st_mode))
		/* The system's CAs looked up by name as needed: the whole
		 * bundle parsed would take a megabyte or two for good. */
		ok = SSL_CTX_load_verify_dir(ctx,
		    X509_get_default_cert_dir()) == 1;
	else if (ok)
		ok = SSL_CTX_set_default_verify_paths(ctx) == 1;
	if (!ok) {
		up_ssl_error(err, errlen);
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* Buffers of idle connections go back to the heap. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	/* An end without close_notify is an end: the framing says whether
	 * the answer was whole. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
	    SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, up_new_session);
	if ((cx = calloc(1, sizeof(*cx))) == NULL)
		fatal("%s", __func__);
	cx->cx_ca = ca != NULL ? up_strdup(ca) : NULL;
	cx->cx_ctx = ctx;
	TAILQ_INSERT_TAIL(&up->up_ctxs, cx, cx_entry);
	return ctx;
}

/* OpenSSL and its configuration are loaded before the sandbox. */
void
upstream_init(void)
{
	if (up_bio_method != NULL)
		return;
	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS |
	    OPENSSL_INIT_LOAD_CONFIG, NULL) != 1)
		fatalx("%s: OPENSSL_init_ssl", __func__);
	if ((up_bio_method = BIO_meth_new(BIO_get_new_index() |
	    BIO_TYPE_SOURCE_SINK, "rtsandbox upstream")) == NULL ||
	    BIO_meth_set_write(up_bio_method, up_bio_write) != 1 ||
	    BIO_meth_set_read(up_bio_method, up_bio_read) != 1 ||
	    BIO_meth_set_ctrl(up_bio_method, up_bio_ctrl) != 1 ||
	    BIO_meth_set_create(up_bio_method, up_bio_create) != 1)
		fatalx("%s: BIO_meth_new", __func__);
	if ((up_ssl_index = SSL_get_ex_new_index(0, NULL, NULL, NULL,
	    NULL)) == -1)
		fatalx("%s: SSL_get_ex_new_index", __func__);
}
