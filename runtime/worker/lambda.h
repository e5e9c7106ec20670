/*
 * lambda.h - format `lambda` on a worker: each hot instance of it gets the
 * AWS Lambda runtime API (2018-06-01) on a loopback port of its own,
 * served on the worker's loop (lambda.c), so that an unmodified Lambda
 * custom runtime (a `bootstrap`) polls its calls from it. Private to
 * runtime/.
 */
#ifndef FNFS_RT_LAMBDA_H
#define FNFS_RT_LAMBDA_H

#include <stddef.h>

struct rt_instance;
struct rt_call;

/* Variables rt_lambda_env may add to an environment. */
#define RT_LAMBDA_ENV_MAX 13

/* Whether `in` is a hot instance of format lambda. */
int rt_lambda_is(const struct rt_instance *in);

/* Before a spawn of `in` (nothing for other formats): its runtime API
 * listens (on 127.0.0.1, a port kept across its restarts until it stops
 * or fails), what the last run
 * left (connections, a /next) is dropped, and the run counts as not ready
 * until its first /next. Refuses a sandbox with `network none`, whose
 * loopback is not the worker's. Returns 0 or -errno with `why` (static). */
int rt_lambda_prepare(struct rt_instance *in, const char **why);

/* Adds the runtime's variables to `env` (`*n` entries, room for
 * RT_LAMBDA_ENV_MAX more): AWS_LAMBDA_RUNTIME_API, LAMBDA_TASK_ROOT and
 * the others of docs/reference.md, replacing what the worker passed on;
 * _HANDLER, TZ, LANG and PATH only where the function's own env does not
 * set them. Nothing for other formats. Returns 0 or -ENOMEM. */
int rt_lambda_env(const struct rt_instance *in, char **env, size_t *n);

/* Instance `in` stopped, failed or is gone: its runtime API closes (its
 * next start opens another). A no-op when it has none. */
void rt_lambda_forget(struct rt_instance *in);

/* Call `c` of a lambda instance is to be run: handed to a /next that
 * waits, or kept until one comes. */
void rt_lambda_send(struct rt_call *c);

/* Call `c` ended (rt_call_finish): the runtime API forgets it; a
 * response to it is refused from now on. */
void rt_lambda_call_over(struct rt_call *c);

#endif
