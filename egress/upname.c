/*
 * The upstream client's names (upstreamint.h): getaddrinfo(3) in a thread
 * of its own, as glibc's resolver blocks, its answer handed back through a
 * pipe; answers kept for UP_DNS_TTL_MS.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "proc.h"
#include "upstreamint.h"

void
up_resolve_free(struct up_resolve *rs)
{
	if (rs->rs_res != NULL)
		freeaddrinfo(rs->rs_res);
	pthread_mutex_destroy(&rs->rs_lock);
	free(rs->rs_host);
	free(rs);
}

/* getaddrinfo(3) off the loop; the answer goes back as a pointer written
 * to the pipe, unless the upstream was freed meanwhile. */
static void *
up_resolve_thread(void *arg)
{
	struct up_resolve	*rs = arg;
	struct addrinfo		 hints;
	ssize_t			 n;
	int			 abandoned;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_ADDRCONFIG;
	rs->rs_gai = getaddrinfo(rs->rs_host, NULL, &hints, &rs->rs_res);
	pthread_mutex_lock(&rs->rs_lock);
	if (!(abandoned = rs->rs_abandoned)) {
		do
			n = write(rs->rs_wfd, &rs, sizeof(rs));
		while (n == -1 && errno == EINTR);
		/* XXX cannot fail while the read end is open: if it did, the
		 * waiting calls would run out of time and this would leak. */
		if (n == (ssize_t)sizeof(rs))
			rs->rs_written = 1;
		else
			log_warn("%s: write", __func__);
	}
	pthread_mutex_unlock(&rs->rs_lock);
	if (abandoned)
		up_resolve_free(rs);
	return NULL;
}

int
up_dns_find(struct upstream *up, struct up_call *c)
{
	struct up_dns	*dn;
	uint64_t	 now = proc_now_ms();
	size_t		 i;

	for (i = 0; i < UP_DNS_CACHE; i++) {
		dn = &up->up_dns[i];
		if (dn->dn_host == NULL || strcmp(dn->dn_host, c->uc_host) != 0)
			continue;
		if (now >= dn->dn_until)
			return 0;
		memcpy(c->uc_addr, dn->dn_addr, sizeof(c->uc_addr));
		memcpy(c->uc_addrlen, dn->dn_addrlen, sizeof(c->uc_addrlen));
		c->uc_naddr = dn->dn_naddr;
		return 1;
	}
	return 0;
}

static void
up_dns_put(struct upstream *up, const struct up_call *c)
{
	struct up_dns	*dn, *slot = NULL;
	size_t		 i;

	for (i = 0; i < UP_DNS_CACHE; i++) {
		dn = &up->up_dns[i];
		if (dn->dn_host != NULL && strcmp(dn->dn_host, c->uc_host) == 0) {
			slot = dn;
			break;
		}
		if (slot == NULL || slot->dn_until > dn->dn_until)
			slot = dn;
	}
	if (slot->dn_host == NULL || strcmp(slot->dn_host, c->uc_host) != 0) {
		free(slot->dn_host);
		slot->dn_host = up_strdup(c->uc_host);
	}
	memcpy(slot->dn_addr, c->uc_addr, sizeof(slot->dn_addr));
	memcpy(slot->dn_addrlen, c->uc_addrlen, sizeof(slot->dn_addrlen));
	slot->dn_naddr = c->uc_naddr;
	slot->dn_until = proc_now_ms() + UP_DNS_TTL_MS;
}

/* The call's port into each address. */
void
up_call_ports(struct up_call *c)
{
	size_t	 i;

	for (i = 0; i < c->uc_naddr; i++)
		if (c->uc_addr[i].ss_family == AF_INET)
			((struct sockaddr_in *)(void *)&c->uc_addr[i])->sin_port =
			    htons(c->uc_port);
		else
			((struct sockaddr_in6 *)(void *)
			    &c->uc_addr[i])->sin6_port = htons(c->uc_port);
}

static void
up_resolve_done(struct upstream *up, struct up_resolve *rs)
{
	struct up_call	*c, tmp;
	struct addrinfo	*ai;
	char		 what[256];

	/* The thread wrote the pointer holding the lock: once it is ours
	 * again, the thread is done with rs. */
	pthread_mutex_lock(&rs->rs_lock);
	pthread_mutex_unlock(&rs->rs_lock);
	TAILQ_REMOVE(&up->up_resolving, rs, rs_entry);
	memset(&tmp, 0, sizeof(tmp));
	tmp.uc_host = rs->rs_host;
	for (ai = rs->rs_gai == 0 ? rs->rs_res : NULL;
	    ai != NULL && tmp.uc_naddr < UP_ADDRS_MAX; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(tmp.uc_addr[0]))
			continue;
		memcpy(&tmp.uc_addr[tmp.uc_naddr], ai->ai_addr,
		    ai->ai_addrlen);
		tmp.uc_addrlen[tmp.uc_naddr++] = ai->ai_addrlen;
	}
	if (tmp.uc_naddr > 0)
		up_dns_put(up, &tmp);
	snprintf(what, sizeof(what), "cannot resolve %s: %s", rs->rs_host,
	    rs->rs_gai != 0 ? gai_strerror(rs->rs_gai) : "no address");
	/* Each waiting call leaves the list first: one that ends may cancel
	 * another, which then must not start. */
	while ((c = TAILQ_FIRST(&rs->rs_waiting)) != NULL) {
		TAILQ_REMOVE(&rs->rs_waiting, c, uc_wait_entry);
		c->uc_res = NULL;
		if (c->uc_cancelled)
			continue;
		if (tmp.uc_naddr == 0) {
			snprintf(c->uc_detail, sizeof(c->uc_detail), "%s", what);
			up_call_end(c, UP_CONNECT_FAILED, c->uc_detail);
			continue;
		}
		memcpy(c->uc_addr, tmp.uc_addr, sizeof(c->uc_addr));
		memcpy(c->uc_addrlen, tmp.uc_addrlen, sizeof(c->uc_addrlen));
		c->uc_naddr = tmp.uc_naddr;
		up_call_ports(c);
		up_call_connect(c);
	}
	up_resolve_free(rs);
}

static void
up_resolve_event(evutil_socket_t fd, short events, void *arg)
{
	struct upstream		*up = arg;
	struct up_resolve	*rs;
	ssize_t			 n;

	/* One answer per wake-up: the event stays ready while more wait. */
	do
		n = read(up->up_pipe[0], &rs, sizeof(rs));
	while (n == -1 && errno == EINTR);
	if (n == (ssize_t)sizeof(rs))
		up_resolve_done(up, rs);
	else if (n == -1 && errno != EAGAIN)
		log_warn("%s: read", __func__);
	if (TAILQ_EMPTY(&up->up_resolving) && event_del(up->up_pipe_ev) == -1)
		log_warnx("%s: event_del", __func__);
	up_settle(up);
}

void
up_resolve_start(struct up_call *c)
{
	struct upstream		*up = c->uc_up;
	struct up_resolve	*rs;
	pthread_attr_t		 attr;
	pthread_t		 t;
	int			 fl, rc;

	TAILQ_FOREACH(rs, &up->up_resolving, rs_entry)
		if (strcmp(rs->rs_host, c->uc_host) == 0)
			goto wait;
	if (up->up_pipe[0] == -1) {
		if (pipe2(up->up_pipe, O_CLOEXEC) == -1 ||
		    (fl = fcntl(up->up_pipe[0], F_GETFL)) == -1 ||
		    fcntl(up->up_pipe[0], F_SETFL, fl | O_NONBLOCK) == -1) {
			up_call_fail_io(c, UP_CONNECT_FAILED, errno,
			    "resolver pipe");
			return;
		}
		if ((up->up_pipe_ev = event_new(up->up_base, up->up_pipe[0],
		    EV_READ | EV_PERSIST, up_resolve_event, up)) == NULL)
			fatalx("%s: event_new", __func__);
	}
	if ((rs = calloc(1, sizeof(*rs))) == NULL)
		fatal("%s", __func__);
	if (pthread_mutex_init(&rs->rs_lock, NULL) != 0)
		fatalx("%s: pthread_mutex_init", __func__);
	rs->rs_host = up_strdup(c->uc_host);
	rs->rs_wfd = up->up_pipe[1];
	TAILQ_INIT(&rs->rs_waiting);
	if ((rc = pthread_attr_init(&attr)) != 0 ||
	    (rc = pthread_attr_setdetachstate(&attr,
	    PTHREAD_CREATE_DETACHED)) != 0 ||
	    (rc = pthread_attr_setstacksize(&attr, UP_RESOLVE_STACK)) != 0 ||
	    (rc = pthread_create(&t, &attr, up_resolve_thread, rs)) != 0) {
		up_resolve_free(rs);
		up_call_fail_io(c, UP_CONNECT_FAILED, rc, "resolver thread");
		return;
	}
	pthread_attr_destroy(&attr);
	if (TAILQ_EMPTY(&up->up_resolving) &&
	    event_add(up->up_pipe_ev, NULL) == -1)
		fatalx("%s: event_add", __func__);
	TAILQ_INSERT_TAIL(&up->up_resolving, rs, rs_entry);
 wait:
	TAILQ_INSERT_TAIL(&rs->rs_waiting, c, uc_wait_entry);
	c->uc_res = rs;
}
