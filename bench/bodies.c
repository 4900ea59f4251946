/*
 * bench/bodies.c -- what reading a model call's body costs the broker and
 * egress, per call and per MiB, next to one strict reading of its bytes
 * (not installed).
 *
 * A worker's model call carries the whole conversation, so its body grows
 * with every turn: tens of KiB after a few exchanges, MiBs in a long agent
 * session.  The broker rebuilds it (rebuild_model_request(): strict JSON,
 * every field of PROTOCOL.md 5, a new body printed) and egress reads the
 * rebuilt body again before it adds the credential (policy_model_check()),
 * both on the call's path.  This program times the two functions the
 * daemon runs, on conversations of user and assistant turns with a tool
 * call and its result in each exchange (code with escaped quotes and new
 * lines, as tool results are), of several sizes, and prints each next to
 * the floor: utf8_utf16_len() over the same bytes, the one pass over every
 * byte that both must make at least.
 *
 * usage: bodies [-k KiB]... [-m] [-r rounds]
 *   -k   body sizes in KiB (default 8, 256, 4096)
 *   -m   mixed text: a third of every turn's words in CJK (3 bytes each)
 *   -r   rounds, each timed over at least 0.2 s; the median is printed (5)
 */
#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"
#include "rebuild.h"
#include "validate.h"

#define SIZES_MAX	8

struct buf {
	char	*b;
	size_t	 len, cap;
};

static void
put(struct buf *b, const char *s)
{
	size_t	 n = strlen(s);

	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		if ((b->b = realloc(b->b, b->cap)) == NULL)
			err(1, "realloc");
	}
	memcpy(b->b + b->len, s, n + 1);
	b->len += n;
}

/* About n bytes of prose: ASCII words, or with mixed a third in CJK. */
static void
prose(struct buf *b, size_t n, int mixed)
{
	static const char *const	 words[] = {
		"the", "broker", "rebuilds", "every", "call", "before",
		"egress", "reads", "it", "again", "and", "adds", "a",
		"credential,", "so", "nothing", "of", "the", "worker's",
		"object", "goes", "out."
	};
	static const char *const	 cjk[] = {
		"\xe4\xbc\x9a\xe8\xa9\xb1", "\xe9\x80\x9a\xe9\x81\x93",
		"\xe6\x9c\x8d\xe5\x8a\xa1"
	};
	size_t				 start = b->len, k = 0;

	while (b->len - start < n) {
		if (mixed && k % 3 == 2)
			put(b, cjk[(k / 3) % 3]);
		else
			put(b, words[k % (sizeof(words) / sizeof(words[0]))]);
		put(b, " ");
		k++;
	}
}

/* A conversation of about kib KiB, ending with the user's turn. */
static void
conversation(struct buf *b, size_t kib, int mixed)
{
	char	 id[64];
	size_t	 turn, line;

	b->len = 0;
	put(b, "{\"model\":\"claude-bench\",\"max_tokens\":4096,"
	    "\"system\":\"You are a careful assistant.\",\"messages\":[");
	for (turn = 0; b->len < kib * 1024; turn++) {
		(void)snprintf(id, sizeof(id), "toolu_%06zu", turn);
		if (turn > 0)
			put(b, ",");
		put(b, "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
		    "\"text\":\"");
		prose(b, 600, mixed);
		put(b, "\"}]},{\"role\":\"assistant\",\"content\":["
		    "{\"type\":\"text\",\"text\":\"");
		prose(b, 1200, mixed);
		put(b, "\"},{\"type\":\"tool_use\",\"id\":\"");
		put(b, id);
		put(b, "\",\"name\":\"read_file\",\"input\":{\"path\":"
		    "\"src/main.c\",\"lines\":[1,40]}}]},{\"role\":\"user\","
		    "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"");
		put(b, id);
		put(b, "\",\"content\":\"");
		for (line = 0; line < 75; line++)
			put(b, "\\tif (strcmp(name, \\\"model\\\") == 0)\\n"
			    "\\t\\treturn rebuild(body, len);\\n");
		put(b, "\"}]}");
	}
	put(b, ",{\"role\":\"user\",\"content\":\"Go on.\"}]}");
}

static double
now(void)
{
	struct timespec	 t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum what { REBUILD, POLICY, FLOOR };

/* One run of what over body; exits on any refusal, as none is expected. */
static void
once(enum what w, const struct buf *in, const struct buf *rebuilt)
{
	static const struct rebuild_params	 rp = {
		.model = "claude-bench", .level = LEVEL_HIGH
	};
	struct policy_model			 pm = {
		.pm_model = "claude-bench", .pm_max_tokens = 128000,
		.pm_level = POLICY_LEVEL_HIGH
	};
	char					 why[256], *out;
	size_t					 outlen, units;
	enum violation				 v;

	switch (w) {
	case REBUILD:
		if (rebuild_model_request(in->b, in->len, &rp, &out, &outlen,
		    why, sizeof(why)) != 0)
			errx(1, "rebuild refused the body: %s", why);
		free(out);
		break;
	case POLICY:
		if ((v = policy_model_check(rebuilt->b, rebuilt->len, &pm, why,
		    sizeof(why))) != VIOLATION_NONE)
			errx(1, "policy refused the rebuilt body: %s", why);
		break;
	case FLOOR:
		if (utf8_utf16_len(in->b, in->len, &units) == -1)
			errx(1, "the body is not UTF-8");
		break;
	}
}

/* Median over rounds of the time of one call, in seconds. */
static double
timed(enum what w, const struct buf *in, const struct buf *rebuilt,
    int rounds)
{
	double	 t[64], t0, el;
	long	 n, k;
	int	 r;

	for (r = 0; r < rounds; r++) {
		n = 0;
		t0 = now();
		do {
			for (k = 0; k < 8; k++)
				once(w, in, rebuilt);
			n += 8;
		} while ((el = now() - t0) < 0.2);
		t[r] = el / (double)n;
	}
	qsort(t, (size_t)rounds, sizeof(t[0]), cmp_double);
	return t[rounds / 2];
}

int
main(int argc, char *argv[])
{
	static const struct rebuild_params	 rp = {
		.model = "claude-bench", .level = LEVEL_HIGH
	};
	size_t		 sizes[SIZES_MAX] = { 8, 256, 4096 }, nsizes = 3, i;
	struct buf	 in = { 0 }, rebuilt = { 0 };
	double		 tr, tp, tf, mib;
	char		 why[256];
	int		 ch, mixed = 0, rounds = 5, user_sizes = 0;

	while ((ch = getopt(argc, argv, "k:mr:")) != -1) {
		switch (ch) {
		case 'k':
			if (!user_sizes)
				nsizes = 0;
			user_sizes = 1;
			if (nsizes == SIZES_MAX)
				errx(1, "-k: at most %d sizes", SIZES_MAX);
			if ((sizes[nsizes++] = strtoul(optarg, NULL, 10)) < 1 ||
			    sizes[nsizes - 1] > 32768)
				errx(1, "-k: a size from 1 to 32768 KiB");
			break;
		case 'm':
			mixed = 1;
			break;
		case 'r':
			if ((rounds = atoi(optarg)) < 1 || rounds > 64)
				errx(1, "-r: from 1 to 64 rounds");
			break;
		default:
			fprintf(stderr, "usage: bodies [-k KiB]... [-m] "
			    "[-r rounds]\n");
			return 2;
		}
	}

	printf("model call bodies, %s text; median of %d rounds; "
	    "floor: one strict UTF-8 pass (utf8_utf16_len)\n",
	    mixed ? "mixed ASCII and CJK" : "ASCII", rounds);
	printf("%9s  %12s %9s %6s  %12s %9s %6s  %12s %9s\n", "body",
	    "rebuild us", "MiB/s", "floor", "policy us", "MiB/s", "floor",
	    "floor us", "MiB/s");
	for (i = 0; i < nsizes; i++) {
		conversation(&in, sizes[i], mixed);
		free(rebuilt.b);
		rebuilt.b = NULL;
		if (rebuild_model_request(in.b, in.len, &rp, &rebuilt.b,
		    &rebuilt.len, why, sizeof(why)) != 0)
			errx(1, "rebuild refused the body: %s", why);
		mib = (double)in.len / (1024.0 * 1024.0);
		tr = timed(REBUILD, &in, &rebuilt, rounds);
		tp = timed(POLICY, &in, &rebuilt, rounds);
		tf = timed(FLOOR, &in, &rebuilt, rounds);
		printf("%6zu KiB  %12.1f %9.0f %5.1fx  %12.1f %9.0f %5.1fx  "
		    "%12.1f %9.0f\n", in.len / 1024, tr * 1e6, mib / tr,
		    tr / tf, tp * 1e6, mib / tp, tp / tf, tf * 1e6, mib / tf);
	}
	free(in.b);
	free(rebuilt.b);
	return 0;
}
