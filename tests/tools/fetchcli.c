/*
 * fetchcli: egress's controlled fetch (egress/fetch.c) run in-process on a
 * libevent loop, without the sandbox, for tests/integration/test_fetch.py.
 * Test builds only.
 *
 *   fetchcli [-d] [--dns IP:PORT] [--loopback-public] [--ca FILE]
 *            [--deadline-ms N] [--max-bytes N] [--max-redirects N]
 *            [--body] URL
 *
 * Prints one JSON object on stdout: {ok, status, url, content_type,
 * location, error, err, body_len, body_sha256, redirects, ms} and, with
 * --body, "body" in base64.  Options are checked by fetch_opts_check(), as
 * egress checks an EGR_FETCH.  Exit 0 when the object was printed, 2 on a
 * usage error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <openssl/evp.h>

#include "buildconf.h"
#include "fetch.h"
#include "log.h"
#include "netvet.h"
#include "upstream.h"

struct cli {
	struct event_base	*base;
	cJSON			*out;
	int			 want_body;
};

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: fetchcli [-d] [--dns IP:PORT] "
	    "[--loopback-public] [--ca FILE] [--deadline-ms N] "
	    "[--max-bytes N] [--max-redirects N] [--body] URL\n");
	exit(2);
}

static uint64_t
number(const char *s)
{
	char			*end;
	unsigned long long	 v;

	if (s[0] < '0' || s[0] > '9')
		usage();
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		usage();
	return v;
}

static void
add_str(cJSON *o, const char *key, const char *v)
{
	if (v == NULL)
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddStringToObject(o, key, v);
}

static void
add_body(cJSON *o, const uint8_t *body, size_t len, int want_body)
{
	unsigned char	 md[EVP_MAX_MD_SIZE];
	char		 hex[2 * EVP_MAX_MD_SIZE + 1], *b64;
	unsigned int	 mdlen, i;

	if (EVP_Digest(len ? body : (const uint8_t *)"", len, md, &mdlen,
	    EVP_sha256(), NULL) != 1)
		fatalx("EVP_Digest");
	for (i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	cJSON_AddNumberToObject(o, "body_len", (double)len);
	cJSON_AddStringToObject(o, "body_sha256", hex);
	if (!want_body)
		return;
	if ((b64 = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		fatal("malloc");
	EVP_EncodeBlock((unsigned char *)b64, len ? body :
	    (const uint8_t *)"", (int)len);
	cJSON_AddStringToObject(o, "body", b64);
	free(b64);
}

static void
done(const struct fetch_result *fr, void *arg)
{
	struct cli	*cli = arg;
	cJSON		*o = cli->out;

	cJSON_AddBoolToObject(o, "ok", fr->fr_ok);
	if (fr->fr_ok)
		cJSON_AddNumberToObject(o, "status", fr->fr_status);
	else
		cJSON_AddNullToObject(o, "status");
	add_str(o, "url", fr->fr_url);
	add_str(o, "content_type", fr->fr_content_type);
	add_str(o, "location", fr->fr_location);
	add_str(o, "error", fr->fr_error);
	add_str(o, "err", fetch_err_to_string(fr->fr_err));
	cJSON_AddNumberToObject(o, "redirects", fr->fr_redirects);
	cJSON_AddNumberToObject(o, "ms", fr->fr_ms);
	add_body(o, fr->fr_body, fr->fr_ok ? fr->fr_body_len : 0,
	    cli->want_body);
	event_base_loopbreak(cli->base);
}

int
main(int argc, char *argv[])
{
	static const struct option	 longopts[] = {
		{ "dns", required_argument, NULL, 'n' },
		{ "loopback-public", no_argument, NULL, 'l' },
		{ "ca", required_argument, NULL, 'c' },
		{ "deadline-ms", required_argument, NULL, 't' },
		{ "max-bytes", required_argument, NULL, 'b' },
		{ "max-redirects", required_argument, NULL, 'r' },
		{ "body", no_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli			 cli;
	struct fetch_opts		 fo;
	struct fetch_env		 env;
	const char			*dns = NULL, *why;
	char				*text;
	int				 ch, debug = 0, loopback = 0;

	memset(&cli, 0, sizeof(cli));
	memset(&env, 0, sizeof(env));
	fetch_opts_default(&fo, NULL);
	while ((ch = getopt_long(argc, argv, "d", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 'n':
			dns = optarg;
			break;
		case 'l':
			loopback = 1;
			break;
		case 'c':
			env.fe_ca_file = optarg;
			break;
		case 't':
			fo.fo_deadline_ms = number(optarg);
			break;
		case 'b':
			fo.fo_max_bytes = number(optarg);
			break;
		case 'r':
			fo.fo_max_redirects = number(optarg);
			break;
		case 'B':
			cli.want_body = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	fo.fo_url = argv[optind];
	log_init("fetchcli", debug);
#if RTSANDBOX_TEST_SEAMS
	if (loopback)
		nv_test_loopback_public(1);
#else
	if (loopback)
		fatalx("--loopback-public needs a test build");
#endif
	if ((cli.out = cJSON_CreateObject()) == NULL)
		fatalx("cJSON_CreateObject");
	if ((why = fetch_opts_check(&fo)) != NULL) {
		/* What egress answers to an EGR_FETCH out of range. */
		cJSON_AddBoolToObject(cli.out, "ok", 0);
		cJSON_AddNullToObject(cli.out, "status");
		add_str(cli.out, "error", why);
		add_str(cli.out, "err",
		    fetch_err_to_string(FETCH_BAD_OPTION));
	} else {
		if ((cli.base = event_base_new()) == NULL)
			fatalx("event_base_new");
		env.fe_base = cli.base;
		env.fe_up = upstream_new(cli.base);
		if ((env.fe_resolver = fetch_resolver_new(cli.base, dns)) ==
		    NULL)
			fatalx("cannot set up the resolver");
		fetch_start(&env, &fo, done, &cli);
		if (event_base_dispatch(cli.base) == -1)
			fatalx("event_base_dispatch");
		upstream_free(env.fe_up);
		fetch_resolver_free(env.fe_resolver);
		event_base_free(cli.base);
	}
	if ((text = cJSON_PrintUnformatted(cli.out)) == NULL)
		fatalx("cJSON_PrintUnformatted");
	printf("%s\n", text);
	free(text);
	cJSON_Delete(cli.out);
	return fflush(stdout) == 0 ? 0 : 1;
}
