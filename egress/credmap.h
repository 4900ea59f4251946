/*
 * Which credential file a model call goes with (rtsandboxd.conf(5),
 * upstream.credentials): the file of the bound turn's speaker, else the
 * file of the peer's channel, else credential_file, or with fallback
 * "none" no file at all, and the call is refused.  One cache per distinct
 * file (cred.h), so a file that many speakers share is read once when it
 * changes.
 */
#ifndef RTSANDBOX_CREDMAP_H
#define RTSANDBOX_CREDMAP_H

#include <stddef.h>

#include "cred.h"

struct credmap_file {
	char			*cf_path;
	struct cred_cache	 cf_cache;
};

/* A channel key or speaker id and the index of its file. */
struct credmap_entry {
	char			*ce_key;
	size_t			 ce_file;
};

struct credmap {
	/* each sorted by key (strcmp), no key twice */
	struct credmap_entry	*cm_channels;
	size_t			 cm_nchannels;
	struct credmap_entry	*cm_speakers;
	size_t			 cm_nspeakers;
	struct credmap_file	*cm_files;
	size_t			 cm_nfiles;
	/* credential_file: cm_files[cm_default] when cm_has_default */
	int			 cm_has_default;
	size_t			 cm_default;
	int			 cm_fallback_none;
};

enum credmap_scope {
	CREDMAP_CHANNEL,
	CREDMAP_SPEAKER
};

/* Where a call's credential comes from. */
enum credmap_from {
	CREDMAP_FROM_SPEAKER,
	CREDMAP_FROM_CHANNEL,
	CREDMAP_FROM_DEFAULT,
	CREDMAP_FROM_NONE	/* refused: no file is the call's */
};

const char	*credmap_from_to_string(enum credmap_from);

/* Starts from a zeroed struct; -1 when memory runs out. */
int		 credmap_set_default(struct credmap *, const char *path);
/*
 * One channel's or speaker's file: -1 when the key is empty or there
 * already, the scope has CRED_MAP_MAX entries, or memory ran out.
 */
int		 credmap_add(struct credmap *, enum credmap_scope,
		    const char *key, const char *path);
/* The channels and speakers go, with the caches of their files; the
 * default file and its cache stay. */
void		 credmap_clear(struct credmap *);
void		 credmap_free(struct credmap *);

/*
 * The file a call of channel by speaker (NULL: none, as a research job's)
 * goes with, in *file, or CREDMAP_FROM_NONE and *file NULL.  A pure
 * function of the map and its arguments.
 */
enum credmap_from credmap_resolve(struct credmap *, const char *channel,
		    const char *speaker, struct credmap_file **file);

#endif
