/*
 * Egress: the only process that creates network sockets and reads
 * credentials.  Brokers reach it over socketpairs that the supervisor made
 * and passed here as descriptors.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "egress.h"
#include "limits.h"
#include "log.h"
#include "role.h"
#include "sandbox.h"

struct egress_mcp {
	char			*em_name;
	char			*em_url;
};

/* One broker (or research job) edge. */
struct egress_peer {
	TAILQ_ENTRY(egress_peer)	 ep_entry;
	struct egress			*ep_egress;
	struct frame_conn		*ep_conn;
	char				*ep_channel;
};

struct egress {
	struct event_base		*eg_base;
	char				*eg_upstream_url;
	char				*eg_credential_file;
	char				*eg_ca_file;
	char				*eg_mcp_credential_file;
	int				 eg_allow_http;
	struct egress_mcp		 eg_mcp[MCP_SERVERS_MAX];
	size_t				 eg_nmcp;
	int				 eg_have_config;
	TAILQ_HEAD(, egress_peer)	 eg_peers;
};

static char *
xstrdup_opt(const char *s)
{
	char	*p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}

static void
egress_peer_free(struct egress_peer *ep)
{
	TAILQ_REMOVE(&ep->ep_egress->eg_peers, ep, ep_entry);
	frame_conn_free(ep->ep_conn);
	free(ep->ep_channel);
	free(ep);
}

static void
egress_peer_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	struct egress_peer	*ep = arg;

	if (err != FRAME_EOF)
		log_warnx("broker[%s] edge: %s", ep->ep_channel,
		    frame_err_to_string(err));
	egress_peer_free(ep);
}

/* Nothing flows from brokers yet but what the table allows; anything else
 * is a violation that closes only that broker's edge. */
static void
egress_dispatch_broker(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct egress_peer	*ep = arg;
	struct msg		 m;

	if (msg_parse(&m, PROC_BROKER, PROC_EGRESS, f) == -1 ||
	    msg_end(&m) == -1) {
		log_warnx("broker[%s] protocol violation: %s", ep->ep_channel,
		    m.m_err);
		msg_free(&m);
		egress_peer_free(ep);
		return;
	}
	msg_free(&m);
}

static int
egress_config(struct egress *eg, struct msg *m)
{
	const char	*url, *cred, *ca, *mcpcred;
	int		 allow_http;

	if (msg_get_str(m, "upstream_url", URL_BYTES_MAX, &url) == -1 ||
	    msg_get_str(m, "credential_file", PATH_BYTES_MAX, &cred) == -1 ||
	    msg_get_str_opt(m, "ca_file", PATH_BYTES_MAX, &ca) == -1 ||
	    msg_get_str_opt(m, "mcp_credential_file", PATH_BYTES_MAX,
	    &mcpcred) == -1 ||
	    msg_get_bool(m, "allow_http", &allow_http) == -1 ||
	    msg_end(m) == -1)
		return -1;
	eg->eg_upstream_url = xstrdup_opt(url);
	eg->eg_credential_file = xstrdup_opt(cred);
	eg->eg_ca_file = xstrdup_opt(ca);
	eg->eg_mcp_credential_file = xstrdup_opt(mcpcred);
	eg->eg_allow_http = allow_http;
	eg->eg_have_config = 1;
	return 0;
}

static int
egress_config_mcp(struct egress *eg, struct msg *m)
{
	const char	*name, *url;

	if (msg_get_str(m, "name", MCP_SERVER_NAME_MAX, &name) == -1 ||
	    msg_get_str(m, "url", URL_BYTES_MAX, &url) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (eg->eg_nmcp == MCP_SERVERS_MAX)
		return -1;
	eg->eg_mcp[eg->eg_nmcp].em_name = xstrdup_opt(name);
	eg->eg_mcp[eg->eg_nmcp].em_url = xstrdup_opt(url);
	eg->eg_nmcp++;
	return 0;
}

static int
egress_attach(struct egress *eg, struct msg *m)
{
	struct egress_peer	*ep;
	const char		*channel;
	int			 fd;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_get_fd(m, &fd) == -1 || msg_end(m) == -1)
		return -1;
	if ((ep = calloc(1, sizeof(*ep))) == NULL)
		fatal("%s", __func__);
	ep->ep_egress = eg;
	ep->ep_channel = xstrdup_opt(channel);
	ep->ep_conn = frame_conn_new(eg->eg_base, fd,
	    edge_limits(PROC_BROKER, PROC_EGRESS),
	    edge_limits(PROC_EGRESS, PROC_BROKER),
	    egress_dispatch_broker, egress_peer_err, ep);
	if (ep->ep_conn == NULL)
		fatalx("%s: cannot watch the broker edge", __func__);
	TAILQ_INSERT_TAIL(&eg->eg_peers, ep, ep_entry);
	log_debug("broker[%s] attached", channel);
	return 0;
}

static int
egress_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct egress	*eg = arg;

	switch (m->m_type) {
	case MSG_CONFIG_EGRESS:
		if (role_parent_configured(rp) || eg->eg_have_config)
			return -1;
		return egress_config(eg, m);
	case MSG_CONFIG_EGRESS_MCP:
		if (role_parent_configured(rp))
			return -1;
		return egress_config_mcp(eg, m);
	case MSG_EGRESS_ATTACH:
		if (!role_parent_configured(rp))
			return -1;
		return egress_attach(eg, m);
	default:
		return -1;
	}
}

static const char *
egress_configured(struct role_parent *rp, void *arg)
{
	struct egress	*eg = arg;

	return !eg->eg_have_config ? "no configuration" : NULL;
}

void
egress_main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct egress		 eg;

	role_args_parse(PROC_EGRESS, argc, argv, &ra);
	proc_child_check_fds(1);
	memset(&eg, 0, sizeof(eg));
	TAILQ_INIT(&eg.eg_peers);

	/* OpenSSL and the resolver load what they need before the sandbox. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		fatalx("curl_global_init failed");
	eg.eg_base = sandbox_egress(ra.ra_paths, ra.ra_npaths);
	role_parent_open(eg.eg_base, PROC_EGRESS, egress_dispatch_supervisor,
	    egress_configured, &eg);
	event_base_dispatch(eg.eg_base);
	fatalx("event loop ended");
}
