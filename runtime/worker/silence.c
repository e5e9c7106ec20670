/*
 * silence.c - the worker's clock of the controller's silence (see
 * silence.h).
 */
#include <assert.h>

#include "silence.h"

int rt_silence_timeout(const struct rt_silence *c)
{
	if (c->own_ms > 0)
		return c->own_ms;
	if (c->controller_ms > 0)
		return c->controller_ms;
	return RT_HEARTBEAT_TIMEOUT_MS;
}

void rt_silence_heard(struct rt_silence *c, int64_t now)
{
	c->heard_mono = now;
}

void rt_silence_registered(struct rt_silence *c, int64_t now, int controller_ms)
{
	c->controller_ms = controller_ms > 0 ? controller_ms : 0;
	c->armed = controller_ms > 0;
	c->heard_mono = now;
	c->attempt_mono = 0;
}

int rt_silence_lost(struct rt_silence *c, int64_t now, int connected,
		    int connecting)
{
	int limit = rt_silence_timeout(c);

	assert(limit > 0); /* own, the controller's or the default */

	if (connected) {
		c->attempt_mono = 0;
		return c->armed && now - c->heard_mono > limit;
	}
	if (!connecting) {
		c->attempt_mono = 0;
		return 0;
	}
	if (c->attempt_mono == 0) {
		c->attempt_mono = now;
		return 0;
	}
	if (now - c->attempt_mono > limit) {
		c->attempt_mono = 0;
		return 1;
	}
	return 0;
}
