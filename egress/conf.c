/*
 * Egress's configuration: the upstream, the MCP servers with their allowed
 * tools, and the profiles each broker is held to; a reload replaces the
 * servers and profiles for the peers attached from then on.
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>

#include <event2/util.h>

#include "buildconf.h"
#include "egress_int.h"
#include "limits.h"
#include "log.h"
#include "netvet.h"

static void
egress_mcp_clear(struct egress_mcp *em)
{
	size_t	 i;

	for (i = 0; i < em->em_ntools; i++)
		free(em->em_tools[i]);
	free(em->em_tools);
	free(em->em_name);
	free(em->em_url);
	memset(em, 0, sizeof(*em));
}

static void
egress_profile_free(struct egress_profile *epr)
{
	size_t	 i;

	for (i = 0; i < epr->epr_nmcp; i++)
		egress_mcp_clear(&epr->epr_mcp[i]);
	free(epr->epr_name);
	free(epr->epr_model);
	free(epr);
}

/* A peer lets go of its profile: a retired one held by nobody goes. */
void
egress_profile_release(struct egress *eg, struct egress_profile *epr)
{
	if (epr == NULL)
		return;
	if (epr->epr_refs > 0)
		epr->epr_refs--;
	if (epr->epr_retired && epr->epr_refs == 0) {
		TAILQ_REMOVE(&eg->eg_retired, epr, epr_entry);
		egress_profile_free(epr);
	}
}

static const struct egress_mcp *
egress_mcp_find(const struct egress *eg, const char *name)
{
	size_t	 i;

	for (i = 0; i < eg->eg_nmcp; i++)
		if (strcmp(eg->eg_mcp[i].em_name, name) == 0)
			return &eg->eg_mcp[i];
	return NULL;
}

const struct egress_mcp *
egress_profile_mcp(const struct egress_profile *epr, const char *name)
{
	size_t	 i;

	for (i = 0; epr != NULL && i < epr->epr_nmcp; i++)
		if (strcmp(epr->epr_mcp[i].em_name, name) == 0)
			return &epr->epr_mcp[i];
	return NULL;
}

/* An optional boolean: absent is false. */
int
egress_get_bool_opt(struct msg *m, const char *key, int *out)
{
	*out = 0;
	if (!msg_has(m, key))
		return 0;
	return msg_get_bool(m, key, out);
}

#if RTSANDBOX_TEST_SEAMS
/*
 * Test builds only: the fetch's name server, loopback counted as public,
 * and the CA the fetch trusts.  A release build refuses these fields at
 * msg_end().
 */
static int
egress_config_seams(struct egress *eg, struct msg *m)
{
	struct sockaddr_storage	 ss;
	const char		*dns = NULL, *ca = NULL;
	int			 loopback, sslen = sizeof(ss);

	if (msg_get_str_opt(m, "test_dns", 64, &dns) == -1 ||
	    msg_get_str_opt(m, "test_fetch_ca_file", PATH_BYTES_MAX, &ca) ==
	    -1 ||
	    egress_get_bool_opt(m, "test_loopback_public", &loopback) == -1)
		return -1;
	if (dns != NULL && evutil_parse_sockaddr_port(dns,
	    (struct sockaddr *)&ss, &sslen) == -1)
		return -1;
	eg->eg_test_dns = xstrdup_opt(dns);
	eg->eg_test_fetch_ca = xstrdup_opt(ca);
	if (loopback) {
		log_warnx("test seam: loopback addresses count as public");
		nv_test_loopback_public(1);
	}
	return 0;
}
#endif

/* upstream.credentials.fallback: absent is "default". */
static int
egress_get_fallback(struct msg *m, int *none)
{
	const char	*s;

	if (msg_get_str_opt(m, "cred_fallback", 8, &s) == -1 ||
	    (s != NULL && strcmp(s, "none") != 0))
		return -1;
	*none = s != NULL;
	return 0;
}

int
egress_config(struct egress *eg, struct msg *m)
{
	const char	*url, *cred, *ca, *mcpcred;
	uint64_t	 uid;
	int		 allow_http;

	if (msg_get_str(m, "upstream_url", URL_BYTES_MAX, &url) == -1 ||
	    msg_get_str_opt(m, "credential_file", PATH_BYTES_MAX, &cred) ==
	    -1 ||
	    egress_get_bool_opt(m, "credential_hook", &eg->eg_cred_hook) ==
	    -1 ||
	    egress_get_fallback(m, &eg->eg_creds.cm_fallback_none) == -1 ||
	    msg_get_str_opt(m, "ca_file", PATH_BYTES_MAX, &ca) == -1 ||
	    msg_get_str_opt(m, "mcp_credential_file", PATH_BYTES_MAX,
	    &mcpcred) == -1 ||
	    egress_get_bool_opt(m, "mcp_credential_hook",
	    &eg->eg_mcp_cred_hook) == -1 ||
	    msg_get_bool(m, "allow_http", &allow_http) == -1 ||
	    msg_get_uint(m, "uid", 1, UINT32_MAX - 1, &uid) == -1 ||
	    msg_get_uint(m, "max_output_tokens", MAX_OUTPUT_TOKENS_MIN,
	    MAX_OUTPUT_TOKENS_MAX, &eg->eg_max_output_tokens) == -1)
		return -1;
#if RTSANDBOX_TEST_SEAMS
	if (egress_config_seams(eg, m) == -1)
		return -1;
#endif
	/*
	 * Each credential from exactly one place (or, for MCP, none); the
	 * model's files may be only by channel and speaker (fallback "none"),
	 * and never with the hook.
	 */
	if (msg_end(m) == -1 || (cred != NULL && eg->eg_cred_hook) ||
	    (cred == NULL && !eg->eg_cred_hook &&
	    !eg->eg_creds.cm_fallback_none) ||
	    (eg->eg_cred_hook && eg->eg_creds.cm_fallback_none) ||
	    (mcpcred != NULL && eg->eg_mcp_cred_hook))
		return -1;
	if (cred != NULL && credmap_set_default(&eg->eg_creds, cred) == -1)
		fatal("%s", __func__);
	eg->eg_uid = uid;
	eg->eg_upstream_url = xstrdup_opt(url);
	eg->eg_ca_file = xstrdup_opt(ca);
	eg->eg_mcp_credential_file = xstrdup_opt(mcpcred);
	eg->eg_allow_http = allow_http;
	eg->eg_have_config = 1;
	return 0;
}

/* Tools one MCP server may allow (the configuration's bound). */
#define EGRESS_MCP_TOOLS_MAX	128u

int
egress_config_mcp(struct egress *eg, struct msg *m)
{
	struct egress_mcp	*em;
	const char		*name, *url, **tools;
	size_t			 n, i;

	if (msg_get_str(m, "name", MCP_SERVER_NAME_MAX, &name) == -1 ||
	    msg_get_str(m, "url", URL_BYTES_MAX, &url) == -1 ||
	    msg_get_strv(m, "tools", EGRESS_MCP_TOOLS_MAX, TOOL_USE_NAME_MAX,
	    &tools, &n) == -1 || msg_end(m) == -1)
		return -1;
	if (eg->eg_nmcp == MCP_SERVERS_MAX || egress_mcp_find(eg, name) != NULL)
		return -1;
	em = &eg->eg_mcp[eg->eg_nmcp++];
	em->em_name = xstrdup_opt(name);
	em->em_url = xstrdup_opt(url);
	if ((em->em_tools = calloc(n + 1, sizeof(char *))) == NULL)
		fatal("%s", __func__);
	for (i = 0; i < n; i++)
		em->em_tools[i] = xstrdup_opt(tools[i]);
	em->em_ntools = n;
	return 0;
}

struct egress_profile *
egress_profile_find(const struct egress *eg, const char *name)
{
	struct egress_profile	*epr;

	TAILQ_FOREACH(epr, &eg->eg_profiles, epr_entry)
		if (strcmp(epr->epr_name, name) == 0)
			return epr;
	return NULL;
}

/* A profile: its model and the names of its MCP servers, each configured
 * before it. */
int
egress_config_profile(struct egress *eg, struct msg *m)
{
	struct egress_profile	*epr;
	const char		*name, *model, **mcp;
	size_t			 n, i;

	if (msg_get_str(m, "name", PROFILE_NAME_MAX, &name) == -1 ||
	    msg_get_str(m, "model", MODEL_NAME_BYTES_MAX, &model) == -1 ||
	    msg_get_strv(m, "mcp", MCP_SERVERS_MAX, MCP_SERVER_NAME_MAX, &mcp,
	    &n) == -1 || msg_end(m) == -1 ||
	    egress_profile_find(eg, name) != NULL)
		return -1;
	if ((epr = calloc(1, sizeof(*epr))) == NULL)
		fatal("%s", __func__);
	epr->epr_name = xstrdup_opt(name);
	epr->epr_model = xstrdup_opt(model);
	for (i = 0; i < n; i++) {
		const struct egress_mcp	*em = egress_mcp_find(eg, mcp[i]);
		struct egress_mcp	*cp = &epr->epr_mcp[i];
		size_t			 k;

		if (em == NULL) {
			epr->epr_nmcp = i;
			egress_profile_free(epr);
			return -1;
		}
		cp->em_name = xstrdup_opt(em->em_name);
		cp->em_url = xstrdup_opt(em->em_url);
		if ((cp->em_tools = calloc(em->em_ntools + 1,
		    sizeof(char *))) == NULL)
			fatal("%s", __func__);
		for (k = 0; k < em->em_ntools; k++)
			cp->em_tools[k] = xstrdup_opt(em->em_tools[k]);
		cp->em_ntools = em->em_ntools;
	}
	epr->epr_nmcp = n;
	TAILQ_INSERT_TAIL(&eg->eg_profiles, epr, epr_entry);
	return 0;
}

/*
 * upstream.credentials: the file of one channel or speaker.  Never with
 * the hook, which names them to the client instead; the supervisor sends
 * no key twice.
 */
int
egress_config_cred(struct egress *eg, struct msg *m)
{
	const char		*scope, *key, *file;
	enum credmap_scope	 sc;

	_Static_assert(UTF8_BYTES_MAX(AUTHOR_FIELD_MAX) <=
	    CHANNEL_KEY_BYTES_MAX, "a speaker id is a key");
	/* channel keys and speaker ids: at most 256 chars each */
	if (msg_get_str(m, "scope", 8, &scope) == -1 ||
	    msg_get_str(m, "key", CHANNEL_KEY_BYTES_MAX, &key) == -1 ||
	    msg_get_str(m, "file", PATH_BYTES_MAX, &file) == -1 ||
	    msg_end(m) == -1 || eg->eg_cred_hook)
		return -1;
	if (strcmp(scope, "channel") == 0)
		sc = CREDMAP_CHANNEL;
	else if (strcmp(scope, "speaker") == 0)
		sc = CREDMAP_SPEAKER;
	else
		return -1;
	if (file[0] != '/' || credmap_add(&eg->eg_creds, sc, key, file) == -1)
		return -1;
	return 0;
}

/*
 * A reload: the servers and profiles that follow replace the current ones
 * for the peers attached from now on; each peer attached before keeps the
 * profile and the output bound it was attached with.
 */
int
egress_reload(struct egress *eg, struct msg *m)
{
	struct egress_profile	*epr;
	uint64_t		 max;
	size_t			 i;
	int			 none;

	if (msg_get_uint(m, "max_output_tokens", MAX_OUTPUT_TOKENS_MIN,
	    MAX_OUTPUT_TOKENS_MAX, &max) == -1 ||
	    egress_get_fallback(m, &none) == -1 || msg_end(m) == -1)
		return -1;
	/* credential_file stays as it was: "none" goes without it,
	 * "default" with it (or with the hook). */
	if (none ? eg->eg_creds.cm_has_default :
	    !eg->eg_creds.cm_has_default && !eg->eg_cred_hook)
		return -1;
	eg->eg_max_output_tokens = max;
	/* Calls in flight took their token already: the files by channel
	 * and speaker that follow serve the calls admitted from now on. */
	credmap_clear(&eg->eg_creds);
	eg->eg_creds.cm_fallback_none = none;
	for (i = 0; i < eg->eg_nmcp; i++)
		egress_mcp_clear(&eg->eg_mcp[i]);
	eg->eg_nmcp = 0;
	while ((epr = TAILQ_FIRST(&eg->eg_profiles)) != NULL) {
		TAILQ_REMOVE(&eg->eg_profiles, epr, epr_entry);
		if (epr->epr_refs == 0)
			egress_profile_free(epr);
		else {
			epr->epr_retired = 1;
			TAILQ_INSERT_TAIL(&eg->eg_retired, epr, epr_entry);
		}
	}
	eg->eg_reloading = 1;
	return 0;
}

int
egress_reloaded(struct egress *eg, struct msg *m)
{
	if (msg_end(m) == -1)
		return -1;
	eg->eg_reloading = 0;
	log_info("configuration reloaded: %zu MCP servers, profiles for the "
	    "peers attached from now on", eg->eg_nmcp);
	return 0;
}
