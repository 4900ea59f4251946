/*
 * What the reader (msg.c) and the builder (msgb.c) of frames' messages share
 * and nobody else uses.
 */
#ifndef RTSANDBOX_MSGINT_H
#define RTSANDBOX_MSGINT_H

#include "msg.h"

/*
 * JSON numbers are doubles: above 2^53 - 1 neighbouring integers share a
 * double, so a larger number could not be told from the one next to it.
 */
#define MSG_INT_MAX	9007199254740991LL

/* A request or a reply: the message carries an id. */
int	msg_needs_id(enum msg_type);
/* Close a descriptor a message held; a failure is logged. */
void	msg_close(int);

#endif
