/*
 * rtsandbox-deny: run a command as if the kernel refused some system calls,
 * so that the host checks of rtsandboxctl doctor and rtsandboxd -n can be
 * seen failing on a kernel that has everything.
 *
 *   rtsandbox-deny ERRNO:CALL[:ARG=VALUE] ... -- command [argument ...]
 *
 * ERRNO is ENOSYS, EPERM, EINVAL or EOPNOTSUPP; with ARG=VALUE only calls
 * whose argument ARG (0-5) is VALUE are refused.  Every other call is
 * allowed; the filter is inherited by the command and its children.
 */
#include <sys/prctl.h>

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char	*name;
	int		 value;
} errnos[] = {
	{ "ENOSYS", ENOSYS },
	{ "EPERM", EPERM },
	{ "EINVAL", EINVAL },
	{ "EOPNOTSUPP", EOPNOTSUPP },
};

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: rtsandbox-deny ERRNO:CALL[:ARG=VALUE] ... "
	    "-- command [argument ...]\n");
	exit(2);
}

static void
add_rule(scmp_filter_ctx ctx, char *spec)
{
	struct scmp_arg_cmp	 cmp;
	char			*call, *arg, *end;
	size_t			 i;
	long			 idx;
	int			 nr, e = -1, rc;

	if ((call = strchr(spec, ':')) == NULL)
		usage();
	*call++ = '\0';
	for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (strcmp(spec, errnos[i].name) == 0)
			e = errnos[i].value;
	if (e == -1)
		usage();
	if ((arg = strchr(call, ':')) != NULL)
		*arg++ = '\0';
	if ((nr = seccomp_syscall_resolve_name(call)) == __NR_SCMP_ERROR) {
		fprintf(stderr, "rtsandbox-deny: unknown call %s\n", call);
		exit(2);
	}
	if (arg == NULL)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(e), nr, 0);
	else {
		idx = strtol(arg, &end, 10);
		if (end == arg || *end != '=' || idx < 0 || idx > 5)
			usage();
		memset(&cmp, 0, sizeof(cmp));
		cmp.arg = (unsigned)idx;
		cmp.op = SCMP_CMP_EQ;
		cmp.datum_a = strtoull(end + 1, NULL, 0);
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(e), nr, 1,
		    &cmp);
	}
	if (rc < 0) {
		fprintf(stderr, "rtsandbox-deny: %s: %s\n", call,
		    strerror(-rc));
		exit(2);
	}
}

int
main(int argc, char *argv[])
{
	scmp_filter_ctx	 ctx;
	int		 i, rc;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		return 2;
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		add_rule(ctx, argv[i]);
	if (i + 1 >= argc)
		usage();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    (rc = seccomp_load(ctx)) < 0) {
		perror("rtsandbox-deny: seccomp");
		return 2;
	}
	seccomp_release(ctx);
	execvp(argv[i + 1], argv + i + 1);
	perror(argv[i + 1]);
	return 127;
}
