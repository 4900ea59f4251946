/*
 * The broker: one per started channel, the worker's only way out.  It holds
 * its listening socket and its two pipes, and nothing else.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "broker.h"
#include "limits.h"
#include "log.h"
#include "role.h"
#include "sandbox.h"

struct broker {
	struct event_base	*br_base;
	char			*br_channel;
	char			*br_profile;
	char			*br_model;
	uint64_t		 br_max_calls;
	uint64_t		 br_max_output_tokens;
	int			 br_listen_fd;
	struct frame_conn	*br_egress;
};

static int
broker_config(struct broker *br, struct msg *m)
{
	const char	*channel, *profile, *model;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_get_str(m, "profile", PROFILE_NAME_MAX, &profile) == -1 ||
	    msg_get_str(m, "model", MODEL_NAME_BYTES_MAX, &model) == -1 ||
	    msg_get_uint(m, "max_calls", MAX_CALLS_MIN, MAX_CALLS_MAX,
	    &br->br_max_calls) == -1 ||
	    msg_get_uint(m, "max_output_tokens", MAX_OUTPUT_TOKENS_MIN,
	    MAX_OUTPUT_TOKENS_MAX, &br->br_max_output_tokens) == -1 ||
	    msg_get_fd(m, &br->br_listen_fd) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if ((br->br_channel = strdup(channel)) == NULL ||
	    (br->br_profile = strdup(profile)) == NULL ||
	    (br->br_model = strdup(model)) == NULL)
		fatal("%s", __func__);
	return 0;
}

static int
broker_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct broker	*br = arg;

	switch (m->m_type) {
	case MSG_CONFIG_BROKER:
		if (role_parent_configured(rp) || br->br_channel != NULL)
			return -1;
		return broker_config(br, m);
	default:
		return -1;
	}
}

static const char *
broker_configured(struct role_parent *rp, void *arg)
{
	struct broker	*br = arg;

	return br->br_channel == NULL ? "no configuration" : NULL;
}

static void
broker_dispatch_egress(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct msg	 m;

	if (msg_parse(&m, PROC_EGRESS, PROC_BROKER, f) == -1 ||
	    msg_end(&m) == -1)
		fatalx("protocol violation from egress: %s", m.m_err);
	msg_free(&m);
}

static void
broker_egress_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	/* Without egress the broker cannot serve; the supervisor restarts
	 * the channel. */
	fatalx("pipe to egress: %s", frame_err_to_string(err));
}

void
broker_main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct broker		 br;

	role_args_parse(PROC_BROKER, argc, argv, &ra);
	proc_child_check_fds(2);
	if (ra.ra_npaths != 0)
		fatalx("takes no -p path");
	memset(&br, 0, sizeof(br));
	br.br_listen_fd = -1;

	br.br_base = sandbox_broker();
	role_parent_open(br.br_base, PROC_BROKER, broker_dispatch_supervisor,
	    broker_configured, &br);
	br.br_egress = frame_conn_new(br.br_base, FD_EGRESS,
	    edge_limits(PROC_EGRESS, PROC_BROKER),
	    edge_limits(PROC_BROKER, PROC_EGRESS),
	    broker_dispatch_egress, broker_egress_err, &br);
	if (br.br_egress == NULL)
		fatalx("cannot watch the egress pipe");
	event_base_dispatch(br.br_base);
	fatalx("event loop ended");
}
