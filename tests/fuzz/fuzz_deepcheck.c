/*
 * The answer of a precheck call (egress/deepcheck.c): the first byte says
 * whether the body is an event stream and how long the secret is (1 to
 * 16 bytes that follow it); the rest is what an upstream answered.
 * Whatever it holds, taking out the message and looking into it ends,
 * within its bounds, and a message found clean never prints the secret.
 * The secret is made capital letters, which cJSON prints only inside keys
 * and strings, so that no run across the message's syntax matches it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "deepcheck.h"
#include "reflect.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reflect		*rf;
	char			 secret[16];
	enum deepcheck_result	 r;
	cJSON			*msg;
	char			*out;
	size_t			 slen;
	int			 sse;

	if (size < 2)
		return 0;
	sse = data[0] & 1;
	slen = 1 + (data[0] >> 1) % 16;
	if (size - 1 < slen)
		return 0;
	for (size_t i = 0; i < slen; i++)
		secret[i] = (char)('A' + data[1 + i] % 26);
	if ((rf = reflect_new(secret, slen)) == NULL)
		return 0;
	msg = deepcheck_message((const char *)data + 1 + slen,
	    size - 1 - slen, sse);
	if (msg != NULL) {
		CHECK(cJSON_IsObject(msg));
		r = deepcheck_walk(msg, rf);
		if (r == DEEPCHECK_CLEAN &&
		    (out = cJSON_PrintUnformatted(msg)) != NULL) {
			/* a clean message printed holds the secret in no
			 * form the filter knows, raw least of all */
			CHECK(memmem(out, strlen(out), secret, slen) == NULL);
			free(out);
		}
		cJSON_Delete(msg);
	}
	reflect_free(rf);
	return 0;
}
