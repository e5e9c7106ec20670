/*
 * test_endpoint.c - PORT and FN_LISTENER: who gets them, a free port, the
 * socket's directory and its removal.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/worker/supervise.h"
#include "unit.h"

static json_t *spec_of(const char *mode, const char *format, const char *ready)
{
	return json_pack("{s:s, s:s, s:s}", "mode", mode, "format", format,
			 "ready", ready);
}

TEST(endpoint_who_gets_one)
{
	struct rt_instance in;

	memset(&in, 0, sizeof(in));
	in.spec = spec_of("hot", "http", "http:/");
	CHECK(rt_endpoint_wanted(&in));
	json_decref(in.spec);
	in.spec = spec_of("hot", "http", "started");
	CHECK(rt_endpoint_wanted(&in)); /* http serves on it anyway */
	json_decref(in.spec);
	in.spec = spec_of("daemon", "line", "tcp");
	CHECK(rt_endpoint_wanted(&in));
	json_decref(in.spec);
	in.spec = spec_of("daemon", "line", "http:/healthz");
	CHECK(rt_endpoint_wanted(&in));
	json_decref(in.spec);
	in.spec = spec_of("daemon", "line", "started");
	CHECK(!rt_endpoint_wanted(&in));
	json_decref(in.spec);
	in.spec = spec_of("hot", "line", "notify");
	CHECK(!rt_endpoint_wanted(&in));
	json_decref(in.spec);
	in.spec = spec_of("cold", "http", "tcp");
	CHECK(!rt_endpoint_wanted(&in)); /* a cold slot has no server */
	json_decref(in.spec);
}

TEST(endpoint_prepare_and_forget)
{
	char tmp[] = "/tmp/fnfs-endpoint-XXXXXX", logs[128];
	struct rt_sup sup;
	struct rt_instance in;
	const char *why = NULL;
	char *env[4] = { NULL };
	size_t n = 0;
	struct stat st;

	CHECK(mkdtemp(tmp) != NULL);
	snprintf(logs, sizeof(logs), "%s/logs/w1", tmp);
	memset(&sup, 0, sizeof(sup));
	sup.log_dir = logs;
	memset(&in, 0, sizeof(in));
	in.sup = &sup;
	in.id = "t/n/f/0";
	in.spec = spec_of("hot", "http", "http:/");
	CHECK(rt_endpoint_free_port() > 0);
	CHECK(rt_endpoint_prepare(&in, &why) == 0);
	CHECK(in.port > 0 && in.listener != NULL);
	CHECK(strstr(in.listener, "/http.sock") != NULL);
	CHECK(stat(json_string_value(json_object_get(in.spec, "listen_dir")),
		   &st) == 0 &&
	      S_ISDIR(st.st_mode));
	CHECK(!rt_endpoint_unix_ready(&in)); /* nothing listens yet */
	CHECK(rt_endpoint_env(&in, env, &n) == 0 && n == 2);
	CHECK(strncmp(env[0], "PORT=", 5) == 0);
	CHECK(strncmp(env[1], "FN_LISTENER=unix:/", 18) == 0);
	free(env[0]);
	free(env[1]);
	rt_endpoint_forget(&in);
	CHECK(in.listener == NULL && in.port == 0);
	CHECK(stat(json_string_value(json_object_get(in.spec, "listen_dir")),
		   &st) < 0 &&
	      errno == ENOENT);
	/* One that wants none gets none, and what its last run had (under
	 * a spec that wanted one) goes. */
	CHECK(rt_endpoint_prepare(&in, &why) == 0);
	snprintf(logs, sizeof(logs), "%s", in.listen_dir);
	CHECK(stat(logs, &st) == 0);
	json_decref(in.spec);
	in.spec = spec_of("daemon", "line", "started");
	CHECK(rt_endpoint_prepare(&in, &why) == 0);
	CHECK(in.port == 0 && in.listener == NULL && in.listen_dir == NULL);
	CHECK(stat(logs, &st) < 0 && errno == ENOENT);
	json_decref(in.spec);
	snprintf(logs, sizeof(logs), "rm -rf '%s'", tmp);
	CHECK(system(logs) == 0);
}
