/*
 * Attachment file names, as the host writes them into a channel's
 * workspace: <messageId>-<index>-<name>, or <messageId>-ref-<index>-<name>
 * for a file of the message being replied to.
 */
#ifndef RTSANDBOX_ATTNAME_H
#define RTSANDBOX_ATTNAME_H

#include <stddef.h>

/* 1 when s is 1-ATTACH_MESSAGE_ID_MAX chars of [A-Za-z0-9_-], else 0. */
int	attname_message_id_valid(const char *s, size_t len);

/*
 * The whole file name for attachment index of messageid (a C string) with
 * the sender's name of namelen bytes.  The name is NFC-normalised; '/',
 * '\\' and control characters become '_'; a run of leading dots becomes
 * one '_'; its last ATTACH_NAME_TAIL code points are kept; an empty name
 * becomes "file".  When the prefix and that tail pass 255 bytes, code
 * points leave the front of the tail until they fit, so the result is
 * always a safe name (valid_safe_name()).  outsz of SAFE_NAME_MAX + 1
 * always suffices.  Returns 0, or -1 for an invalid message id, a name
 * that is not valid UTF-8, or too small an out.
 */
int	attname_make(const char *messageid, int ref, unsigned index,
	    const char *name, size_t namelen, char *out, size_t outsz);

#endif
