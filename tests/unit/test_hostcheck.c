/*
 * common/hostcheck.c: each judgement at its rule and one past it, the file
 * checks on real files and directories made here, and the kernel probes as
 * this machine answers them.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/types.h>

#include <check.h>
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aclx.h"
#include "hostcheck.h"
#include "limits.h"

static char	 tmp[64];

/* The last result reported, and how many. */
static struct hc_result	 last;
static int		 nreports;

static void
keep(const struct hc_result *r, void *arg)
{
	(void)arg;
	last = *r;
	nreports++;
}

static void
setup(void)
{
	(void)snprintf(tmp, sizeof(tmp), "/tmp/rtsbhcXXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	nreports = 0;
	memset(&last, 0, sizeof(last));
}

static void
teardown(void)
{
	char	 cmd[128];

	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	(void)!system(cmd);
}

static struct stat
st_of(mode_t mode, uid_t uid, off_t size)
{
	struct stat	 st;

	memset(&st, 0, sizeof(st));
	st.st_mode = mode;
	st.st_uid = uid;
	st.st_size = size;
	return st;
}

START_TEST(status_strings)
{
	ck_assert_str_eq(hc_status_to_string(HC_OK), "ok");
	ck_assert_str_eq(hc_status_to_string(HC_WARN), "warn");
	ck_assert_str_eq(hc_status_to_string(HC_FAIL), "FAIL");
	ck_assert_str_eq(hc_status_to_string((enum hc_status)9), "?");
}
END_TEST

/* A report is one line, whatever it was given. */
START_TEST(report_one_line)
{
	hc_report(keep, NULL, HC_WARN, "x", "a\nb\tc\x1b[31m");
	ck_assert_int_eq(nreports, 1);
	ck_assert_int_eq(last.hr_status, HC_WARN);
	ck_assert_str_eq(last.hr_name, "x");
	ck_assert_str_eq(last.hr_text, "a b c [31m");
}
END_TEST

START_TEST(root_groups)
{
	ck_assert_int_eq(hostcheck_root_group("docker", 105), 1);
	ck_assert_int_eq(hostcheck_root_group("lxd", 999), 1);
	ck_assert_int_eq(hostcheck_root_group("sudo", 27), 1);
	ck_assert_int_eq(hostcheck_root_group("disk", 6), 1);
	ck_assert_int_eq(hostcheck_root_group("anything", 0), 1);
	ck_assert_int_eq(hostcheck_root_group(NULL, 0), 1);
	ck_assert_int_eq(hostcheck_root_group("rtsandbox", 995), 0);
	ck_assert_int_eq(hostcheck_root_group("dockers", 995), 0);
	ck_assert_int_eq(hostcheck_root_group("Docker", 995), 0);
	ck_assert_int_eq(hostcheck_root_group("kvm", 995), 0);
	ck_assert_int_eq(hostcheck_root_group(NULL, 995), 0);
}
END_TEST

START_TEST(state_stat_rules)
{
	struct stat	 st;
	char		 t[HC_TEXT_MAX];

	st = st_of(S_IFDIR | 0700, 1000, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_OK);
	st = st_of(S_IFDIR | 0701, 1000, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "chmod 0700 /s"));
	st = st_of(S_IFDIR | 0710, 1000, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFDIR | 0500, 1000, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_OK);
	st = st_of(S_IFDIR | 0700, 1001, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "owned by uid 1001"));
	st = st_of(S_IFDIR | 0700, 0, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFLNK | 0777, 1000, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "symbolic link"));
	st = st_of(S_IFREG | 0700, 1000, 0);
	ck_assert_int_eq(hostcheck_state_stat("/s", &st, 1000, t, sizeof(t)),
	    HC_FAIL);
}
END_TEST

/* With bot_group: its search bit, through an ACL naming it alone. */
START_TEST(state_bot_stat_rules)
{
	struct stat	 st;
	char		 t[HC_TEXT_MAX];

	st = st_of(S_IFDIR | 0700, 1000, 0);
	ck_assert_int_eq(hostcheck_state_bot_stat("/s", &st, 1000, "bots", 0,
	    t, sizeof(t)), HC_OK);
	st = st_of(S_IFDIR | 0710, 1000, 0);
	ck_assert_int_eq(hostcheck_state_bot_stat("/s", &st, 1000, "bots", 1,
	    t, sizeof(t)), HC_OK);
	ck_assert_ptr_nonnull(strstr(t, "search for bots (bot_group) alone"));
	ck_assert_int_eq(hostcheck_state_bot_stat("/s", &st, 1000, "bots", 0,
	    t, sizeof(t)), HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "without an ACL naming it alone"));
	st = st_of(S_IFDIR | 0750, 1000, 0);
	ck_assert_int_eq(hostcheck_state_bot_stat("/s", &st, 1000, "bots", 1,
	    t, sizeof(t)), HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "setfacl -b /s; chmod 0700 /s"));
	st = st_of(S_IFDIR | 0711, 1000, 0);
	ck_assert_int_eq(hostcheck_state_bot_stat("/s", &st, 1000, "bots", 1,
	    t, sizeof(t)), HC_FAIL);
	st = st_of(S_IFDIR | 0710, 1001, 0);
	ck_assert_int_eq(hostcheck_state_bot_stat("/s", &st, 1000, "bots", 1,
	    t, sizeof(t)), HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "owned by uid 1001"));
	st = st_of(S_IFDIR | 0700, 1000, 0);
	ck_assert_int_eq(hostcheck_state_bot_stat("/s", &st, 1000, "bots", -1,
	    t, sizeof(t)), HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "has no POSIX ACLs"));
}
END_TEST

START_TEST(cred_stat_rules)
{
	struct stat	 st;
	char		 t[HC_TEXT_MAX];

	st = st_of(S_IFREG | 0600, 7, 10);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_OK);
	st = st_of(S_IFREG | 0400, 7, HC_CREDENTIAL_MAX);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_OK);
	st = st_of(S_IFREG | 0400, 7, HC_CREDENTIAL_MAX + 1);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFREG | 0640, 7, 10);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	ck_assert_ptr_nonnull(strstr(t, "chmod 0600 /c"));
	st = st_of(S_IFREG | 0604, 7, 10);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFREG | 0600, 8, 10);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFREG | 0600, 7, 0);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_WARN);
	st = st_of(S_IFIFO | 0600, 7, 0);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFDIR | 0700, 7, 0);
	ck_assert_int_eq(hostcheck_cred_stat("/c", &st, 7, t, sizeof(t)),
	    HC_FAIL);
}
END_TEST

START_TEST(ctldir_stat_rules)
{
	struct stat	 st;
	char		 t[HC_TEXT_MAX];

	st = st_of(S_IFDIR | 0755, 7, 0);
	ck_assert_int_eq(hostcheck_ctldir_stat("/r", &st, 7, t, sizeof(t)),
	    HC_OK);
	st = st_of(S_IFDIR | 0755, 0, 0);
	ck_assert_int_eq(hostcheck_ctldir_stat("/r", &st, 7, t, sizeof(t)),
	    HC_OK);
	st = st_of(S_IFDIR | 01777, 0, 0);
	ck_assert_int_eq(hostcheck_ctldir_stat("/r", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFDIR | 0775, 7, 0);
	ck_assert_int_eq(hostcheck_ctldir_stat("/r", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFDIR | 0755, 8, 0);
	ck_assert_int_eq(hostcheck_ctldir_stat("/r", &st, 7, t, sizeof(t)),
	    HC_FAIL);
	st = st_of(S_IFREG | 0755, 7, 0);
	ck_assert_int_eq(hostcheck_ctldir_stat("/r", &st, 7, t, sizeof(t)),
	    HC_FAIL);
}
END_TEST

START_TEST(socket_path_room)
{
	char	 longp[200];

	hostcheck_socket_paths("/run/r/c.sock", "/var/run/docker.sock", 32,
	    keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_OK);
	hostcheck_socket_paths("/run/r/c.sock", "/var/run/docker.sock", 31,
	    keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_WARN);
	hostcheck_socket_paths("/run/r/c.sock", "/var/run/docker.sock", 1,
	    keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_WARN);
	hostcheck_socket_paths("/run/r/c.sock", "/var/run/docker.sock", 0,
	    keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	memset(longp, 'a', sizeof(longp));
	longp[0] = '/';
	longp[107] = '\0';
	hostcheck_socket_paths(longp, NULL, 40, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_OK);
	longp[107] = 'a';
	longp[108] = '\0';
	hostcheck_socket_paths("/c.sock", longp, 40, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
}
END_TEST

/* On the file system: missing, a link on the way, wrong mode, right. */
START_TEST(state_dir_files)
{
	uint8_t	 acl[ACLX_MAX];
	char	 p[160], link[160];
	size_t	 n;

	(void)snprintf(p, sizeof(p), "%s/state", tmp);
	hostcheck_state_dir(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "does not exist"));
	ck_assert_int_eq(mkdir(p, 0750), 0);
	ck_assert_int_eq(chmod(p, 0750), 0);
	hostcheck_state_dir(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "mode 0750"));
	ck_assert_int_eq(chmod(p, 0700), 0);
	hostcheck_state_dir(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_OK);
	hostcheck_state_dir(p, getuid() + 1, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	/* bot_group's search bit, as the file guard gives it */
	n = aclx_build(acl, 7, 4243, ACLX_X, NULL, 0);
	ck_assert_int_eq(setxattr(p, ACLX_ACCESS, acl, n, 0), 0);
	hostcheck_state_dir_bot(p, getuid(), "bots", 4243, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_OK);
	hostcheck_state_dir_bot(p, getuid(), "bots", 4244, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	hostcheck_state_dir(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_int_eq(chmod(p, 0700), 0);
	/* A link as the last component and as one on the way. */
	(void)snprintf(link, sizeof(link), "%s/link", tmp);
	ck_assert_int_eq(symlink(p, link), 0);
	hostcheck_state_dir(link, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "symbolic link"));
	ck_assert_int_eq(mkdir(strcat(strcpy(p, tmp), "/state/sub"), 0700),
	    0);
	(void)snprintf(p, sizeof(p), "%s/link/sub", tmp);
	hostcheck_state_dir(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "symbolic link"));
	hostcheck_state_dir("state", getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
}
END_TEST

START_TEST(credential_files)
{
	char	 p[160], link[160];
	FILE	*f;

	(void)snprintf(p, sizeof(p), "%s/cred", tmp);
	hostcheck_credential("upstream.credential_file", p, getuid(), keep,
	    NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_str_eq(last.hr_name, "upstream.credential_file");
	ck_assert_ptr_nonnull(strstr(last.hr_text, "does not exist"));
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fclose(f);
	ck_assert_int_eq(chmod(p, 0600), 0);
	hostcheck_credential("c", p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_WARN);
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fputs("token\n", f);
	fclose(f);
	hostcheck_credential("c", p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_OK);
	ck_assert_int_eq(chmod(p, 0644), 0);
	hostcheck_credential("c", p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_int_eq(chmod(p, 0600), 0);
	(void)snprintf(link, sizeof(link), "%s/credlink", tmp);
	ck_assert_int_eq(symlink(p, link), 0);
	hostcheck_credential("c", link, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "symbolic link"));
}
END_TEST

/* A file of mode at tmp/name holding text (NULL: none made). */
static void
cred_file(const char *name, const char *text, mode_t mode, char *p,
    size_t len)
{
	FILE	*f;

	(void)snprintf(p, len, "%s/%s", tmp, name);
	if (text == NULL)
		return;
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(p, mode), 0);
}

/* Every file of upstream.credentials: one line for those that pass, one
 * naming its field for each that does not. */
START_TEST(credential_lists)
{
	char		 a[160], b[160], c[160], d[160];
	struct hc_cred	 v[4];

	cred_file("a", "ta\n", 0600, a, sizeof(a));
	cred_file("b", "tb\n", 0600, b, sizeof(b));
	cred_file("c", "tc\n", 0640, c, sizeof(c));
	cred_file("d", NULL, 0, d, sizeof(d));
	v[0] = (struct hc_cred){ "upstream.credentials.speakers.a", a };
	v[1] = (struct hc_cred){ "upstream.credentials.speakers.b", b };
	hostcheck_credential_list("upstream.credentials", v, 2, getuid(),
	    keep, NULL);
	ck_assert_int_eq(nreports, 1);
	ck_assert_int_eq(last.hr_status, HC_OK);
	ck_assert_str_eq(last.hr_name, "upstream.credentials");
	ck_assert_ptr_nonnull(strstr(last.hr_text, "2 of 2 files"));
	nreports = 0;
	v[2] = (struct hc_cred){ "upstream.credentials.channels.c", c };
	v[3] = (struct hc_cred){ "upstream.credentials.channels[\"d:1\"]",
	    d };
	hostcheck_credential_list("upstream.credentials", v + 2, 2, getuid(),
	    keep, NULL);
	ck_assert_int_eq(nreports, 2);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_ptr_eq(strstr(last.hr_text,
	    "upstream.credentials.channels[\"d:1\"]: "), last.hr_text);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "does not exist"));
	nreports = 0;
	hostcheck_credential_list("upstream.credentials", v, 4, getuid(),
	    keep, NULL);
	ck_assert_int_eq(nreports, 3);
	ck_assert_int_eq(last.hr_status, HC_OK);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "2 of 4 files"));
	nreports = 0;
	hostcheck_credential_list("upstream.credentials", v, 0, getuid(),
	    keep, NULL);
	ck_assert_int_eq(nreports, 0);
}
END_TEST

START_TEST(control_socket_dirs)
{
	char	 p[160];

	(void)snprintf(p, sizeof(p), "%s/c.sock", tmp);
	ck_assert_int_eq(chmod(tmp, 0755), 0);
	hostcheck_control_socket(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_OK);
	ck_assert_int_eq(chmod(tmp, 0775), 0);
	hostcheck_control_socket(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_int_eq(chmod(tmp, 0700), 0);
	(void)snprintf(p, sizeof(p), "%s/none/c.sock", tmp);
	hostcheck_control_socket(p, getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	hostcheck_control_socket("/", getuid(), keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
}
END_TEST

/* The kernel's answers on this machine: never a failure of the probe. */
START_TEST(kernel_probes)
{
	hostcheck_landlock(keep, NULL);
	ck_assert_int_ne(last.hr_status, HC_FAIL);
	printf("note: landlock: %s\n", last.hr_text);
	hostcheck_seccomp(keep, NULL);
	ck_assert_msg(last.hr_status == HC_OK, "seccomp: %s", last.hr_text);
	hostcheck_userns(1, keep, NULL);
	ck_assert_msg(last.hr_status != HC_FAIL, "userns: %s", last.hr_text);
	printf("note: user namespaces: %s\n", last.hr_text);
	ck_assert_int_eq(nreports, 3);
}
END_TEST

/*
 * Where the kernel refuses the empty root (a filter here refuses the user
 * namespace, or the tmpfs in it): a failure when sandbox.empty_root is
 * "required", a warning when "optional", and each says which.
 */
START_TEST(empty_root_refused)
{
	static const char *const calls[] = { "unshare", "fsopen" };
	scmp_filter_ctx	 ctx;
	char		 why[256];

	hostcheck_userns(0, keep, NULL);
	if (last.hr_status != HC_OK) {
		printf("note: no empty root here, refusal not tested\n");
		return;
	}
	ck_assert_ptr_nonnull(strstr(last.hr_text, "empty root "
	    "(sandbox.empty_root \"required\")"));
	hostcheck_userns(1, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_OK);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "\"optional\""));
	ck_assert_int_eq(hostcheck_empty_root(why, sizeof(why)), 1);

	ck_assert_ptr_nonnull(ctx = seccomp_init(SCMP_ACT_ALLOW));
	ck_assert_int_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
	    seccomp_syscall_resolve_name(calls[_i]), 0), 0);
	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(seccomp_load(ctx), 0);
	seccomp_release(ctx);

	ck_assert_int_eq(hostcheck_empty_root(why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "Operation not permitted"));
	hostcheck_userns(0, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_FAIL);
	ck_assert_ptr_nonnull(strstr(last.hr_text, _i == 0 ?
	    "no user namespace: Operation not permitted" :
	    "no tmpfs in a user namespace: Operation not permitted"));
	ck_assert_ptr_nonnull(strstr(last.hr_text, "refuses to start"));
	ck_assert_ptr_nonnull(strstr(last.hr_text,
	    "sandbox.empty_root \"optional\""));
	hostcheck_userns(1, keep, NULL);
	ck_assert_int_eq(last.hr_status, HC_WARN);
	ck_assert_ptr_nonnull(strstr(last.hr_text, "accepted as missing "
	    "(sandbox.empty_root \"optional\")"));
}
END_TEST

START_TEST(run_all)
{
	struct hostcheck_params	 p;
	struct hc_cred		 v[2];
	char			 state[160], cred[160], ctl[160];
	FILE			*f;

	(void)snprintf(state, sizeof(state), "%s/state", tmp);
	(void)snprintf(cred, sizeof(cred), "%s/cred", tmp);
	(void)snprintf(ctl, sizeof(ctl), "%s/control.sock", tmp);
	ck_assert_int_eq(mkdir(state, 0700), 0);
	ck_assert_ptr_nonnull(f = fopen(cred, "w"));
	fputs("t", f);
	fclose(f);
	ck_assert_int_eq(chmod(cred, 0600), 0);
	memset(&p, 0, sizeof(p));
	p.hp_uid = getuid();
	p.hp_gid = getgid();
	hostcheck_run(&p, keep, NULL);
	ck_assert_int_eq(nreports, 5);
	nreports = 0;
	p.hp_state_dir = state;
	p.hp_cred_names[0] = "upstream.credential_file";
	p.hp_cred_paths[0] = cred;
	p.hp_control_socket = ctl;
	p.hp_engine_socket = "/var/run/docker.sock";
	p.hp_segment_room = 40;
	hostcheck_run(&p, keep, NULL);
	ck_assert_int_eq(nreports, 9);
	ck_assert_str_eq(last.hr_name, "socket paths");
	/* and upstream.credentials' files, after the others */
	nreports = 0;
	v[0] = (struct hc_cred){ "upstream.credentials.speakers.a", cred };
	v[1] = (struct hc_cred){ "upstream.credentials.speakers.b", state };
	p.hp_cred_list = v;
	p.hp_ncred_list = 2;
	hostcheck_run(&p, keep, NULL);
	ck_assert_int_eq(nreports, 11);
}
END_TEST

static Suite *
hostcheck_suite(void)
{
	Suite	*s = suite_create("hostcheck");
	TCase	*tc;

	tc = tcase_create("judgements");
	tcase_add_test(tc, status_strings);
	tcase_add_test(tc, report_one_line);
	tcase_add_test(tc, root_groups);
	tcase_add_test(tc, state_stat_rules);
	tcase_add_test(tc, state_bot_stat_rules);
	tcase_add_test(tc, cred_stat_rules);
	tcase_add_test(tc, ctldir_stat_rules);
	tcase_add_test(tc, socket_path_room);
	suite_add_tcase(s, tc);
	tc = tcase_create("host");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, state_dir_files);
	tcase_add_test(tc, credential_files);
	tcase_add_test(tc, credential_lists);
	tcase_add_test(tc, control_socket_dirs);
	tcase_add_test(tc, kernel_probes);
	tcase_add_loop_test(tc, empty_root_refused, 0, 2);
	tcase_add_test(tc, run_all);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(hostcheck_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
