/*
 * The credential file of a model call (credmap.h).  Nothing here reads a
 * file or logs: the caller reads the file resolved, through its cache.
 */
#include <stdlib.h>
#include <string.h>

#include "credmap.h"
#include "limits.h"

const char *
credmap_from_to_string(enum credmap_from f)
{
	switch (f) {
	case CREDMAP_FROM_SPEAKER:
		return "the speaker's";
	case CREDMAP_FROM_CHANNEL:
		return "the channel's";
	case CREDMAP_FROM_DEFAULT:
		return "credential_file";
	case CREDMAP_FROM_NONE:
		return "none";
	}
	return "unknown";
}

/* The index of path's file, added when it is new; -1 without memory. */
static int
credmap_file(struct credmap *cm, const char *path, size_t *idx)
{
	struct credmap_file	*v;
	size_t			 i;

	/* At most 2 * CRED_MAP_MAX + 1 files, each looked for once. */
	for (i = 0; i < cm->cm_nfiles; i++)
		if (strcmp(cm->cm_files[i].cf_path, path) == 0) {
			*idx = i;
			return 0;
		}
	v = reallocarray(cm->cm_files, cm->cm_nfiles + 1, sizeof(*v));
	if (v == NULL)
		return -1;
	cm->cm_files = v;
	memset(&v[cm->cm_nfiles], 0, sizeof(v[0]));
	if ((v[cm->cm_nfiles].cf_path = strdup(path)) == NULL)
		return -1;
	*idx = cm->cm_nfiles++;
	return 0;
}

int
credmap_set_default(struct credmap *cm, const char *path)
{
	if (credmap_file(cm, path, &cm->cm_default) == -1)
		return -1;
	cm->cm_has_default = 1;
	return 0;
}

/* Where key is in v, or where it would go: 1 when it is there. */
static int
credmap_find(const struct credmap_entry *v, size_t n, const char *key,
    size_t *pos)
{
	size_t	 lo = 0, hi = n, mid;
	int	 c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = strcmp(key, v[mid].ce_key)) == 0) {
			*pos = mid;
			return 1;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*pos = lo;
	return 0;
}

int
credmap_add(struct credmap *cm, enum credmap_scope scope, const char *key,
    const char *path)
{
	struct credmap_entry	**vp, *v;
	size_t			 *np, pos, file;
	char			 *k;

	if (scope == CREDMAP_SPEAKER) {
		vp = &cm->cm_speakers;
		np = &cm->cm_nspeakers;
	} else {
		vp = &cm->cm_channels;
		np = &cm->cm_nchannels;
	}
	if (key[0] == '\0' || path[0] == '\0' || *np >= CRED_MAP_MAX ||
	    credmap_find(*vp, *np, key, &pos))
		return -1;
	if (credmap_file(cm, path, &file) == -1 || (k = strdup(key)) == NULL)
		return -1;
	if ((v = reallocarray(*vp, *np + 1, sizeof(*v))) == NULL) {
		free(k);
		return -1;
	}
	memmove(&v[pos + 1], &v[pos], (*np - pos) * sizeof(*v));
	v[pos].ce_key = k;
	v[pos].ce_file = file;
	*vp = v;
	(*np)++;
	return 0;
}

static void
credmap_entries_free(struct credmap_entry *v, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		free(v[i].ce_key);
	free(v);
}

static void
credmap_file_free(struct credmap_file *cf)
{
	cred_cache_clear(&cf->cf_cache);
	free(cf->cf_path);
}

void
credmap_clear(struct credmap *cm)
{
	size_t	 i;

	credmap_entries_free(cm->cm_channels, cm->cm_nchannels);
	credmap_entries_free(cm->cm_speakers, cm->cm_nspeakers);
	cm->cm_channels = cm->cm_speakers = NULL;
	cm->cm_nchannels = cm->cm_nspeakers = 0;
	for (i = 0; i < cm->cm_nfiles; i++)
		if (!cm->cm_has_default || i != cm->cm_default)
			credmap_file_free(&cm->cm_files[i]);
	if (cm->cm_has_default) {
		/* the default's cache stays as it was */
		if (cm->cm_default != 0)
			cm->cm_files[0] = cm->cm_files[cm->cm_default];
		cm->cm_default = 0;
		cm->cm_nfiles = 1;
	} else {
		free(cm->cm_files);
		cm->cm_files = NULL;
		cm->cm_nfiles = 0;
	}
}

void
credmap_free(struct credmap *cm)
{
	size_t	 i;

	credmap_entries_free(cm->cm_channels, cm->cm_nchannels);
	credmap_entries_free(cm->cm_speakers, cm->cm_nspeakers);
	for (i = 0; i < cm->cm_nfiles; i++)
		credmap_file_free(&cm->cm_files[i]);
	free(cm->cm_files);
	memset(cm, 0, sizeof(*cm));
}

enum credmap_from
credmap_resolve(struct credmap *cm, const char *channel, const char *speaker,
    struct credmap_file **file)
{
	size_t	 pos;

	*file = NULL;
	if (speaker != NULL && credmap_find(cm->cm_speakers, cm->cm_nspeakers,
	    speaker, &pos)) {
		*file = &cm->cm_files[cm->cm_speakers[pos].ce_file];
		return CREDMAP_FROM_SPEAKER;
	}
	if (channel != NULL && credmap_find(cm->cm_channels, cm->cm_nchannels,
	    channel, &pos)) {
		*file = &cm->cm_files[cm->cm_channels[pos].ce_file];
		return CREDMAP_FROM_CHANNEL;
	}
	if (cm->cm_fallback_none || !cm->cm_has_default)
		return CREDMAP_FROM_NONE;
	*file = &cm->cm_files[cm->cm_default];
	return CREDMAP_FROM_DEFAULT;
}
