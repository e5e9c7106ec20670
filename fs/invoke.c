/*
 * invoke.c - `fnfs invoke TENANT/NS/FN [--mount M] < request`: a call
 * through the mounted tree, as a shell user would make it with the invoke
 * file, with an exit status per kind of failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

/* Exit statuses, one per class of failure (docs/reference.md). */
static int exit_code(int err)
{
	switch (err) {
	case 0: return 0;
	case ENOENT: return 3;	   /* no such function, or no mount */
	case EOPNOTSUPP: return 4; /* not callable (a daemon) */
	case EINVAL:
	case EFBIG: return 5;	   /* a request it cannot take */
	case EAGAIN: return 6;	   /* queue full: try again later */
	case ETIMEDOUT: return 7;  /* past the function's timeout */
	case EREMOTEIO: return 8;  /* the function reported an error */
	case ECONNRESET: return 9; /* its process died during the call */
	case ENOSPC: return 10;	   /* no worker can take an instance */
	case EINTR: return 130;	   /* interrupted */
	default: return 1;	   /* anything else (EIO, ...) */
	}
}

/* Decodes the octal escapes of a /proc/self/mounts field in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] &&
		    s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Finds the only fnfs mount of this user. Returns a malloc'd path or
 * NULL with a message printed. */
static char *find_mount(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char line[8192], dev[4096], dir[4096], type[256], opts[4096];
	char uid_opt[64], *found = NULL;
	int n = 0;

	if (f == NULL) {
		perror("fnfs invoke: /proc/self/mounts");
		return NULL;
	}
	snprintf(uid_opt, sizeof(uid_opt), "user_id=%u", (unsigned)getuid());
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%4095s %4095s %255s %4095s", dev, dir, type,
			   opts) != 4 ||
		    strcmp(type, "fuse.fnfs") != 0)
			continue;
		if (strstr(opts, uid_opt) == NULL && getuid() != 0)
			continue;
		unescape(dir);
		if (n++ == 0)
			found = strdup(dir);
	}
	fclose(f);
	if (n == 0)
		fprintf(stderr, "fnfs invoke: no fnfs mount found; give "
				"--mount MOUNTPOINT\n");
	if (n > 1) {
		fprintf(stderr,
			"fnfs invoke: %d fnfs mounts; say which with "
			"--mount MOUNTPOINT\n",
			n);
		free(found);
		found = NULL;
	}
	return found;
}

/* Prints the function's last error line, which holds the detail. */
static void print_detail(const char *dir)
{
	char path[8300], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/error", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		fprintf(stderr, "fnfs invoke: %s", buf);
		if (buf[n - 1] != '\n')
			fputc('\n', stderr);
	}
}

/* Copies all of `in` to `out`. Returns 0 or an errno. */
static int copy(int in, int out)
{
	char buf[65536];
	ssize_t n, w, off;

	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		for (off = 0; off < n; off += w) {
			w = write(out, buf + off, (size_t)(n - off));
			if (w < 0) {
				if (errno == EINTR) {
					w = 0;
					continue;
				}
				return errno;
			}
		}
	}
	return 0;
}

int fs_invoke_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *usage = "usage: fnfs invoke TENANT/NAMESPACE/FUNCTION "
			    "[--mount MOUNTPOINT] < request\n";
	char *mount = NULL, dir[8192], path[8300];
	const char *fqfn;
	int c, fd = -1, err = 0, slashes = 0;
	size_t i;

	while ((c = getopt_long(argc, argv, "m:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			free(mount);
			mount = strdup(optarg);
			break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		free(mount);
		return 2;
	}
	fqfn = argv[optind];
	for (i = 0; fqfn[i]; i++)
		slashes += fqfn[i] == '/';
	if (slashes != 2 || strstr(fqfn, "..") != NULL || fqfn[0] == '/') {
		fprintf(stderr,
			"fnfs invoke: \"%s\" is not TENANT/NAMESPACE/"
			"FUNCTION\n",
			fqfn);
		free(mount);
		return 2;
	}
	if (mount == NULL && (mount = find_mount()) == NULL)
		return exit_code(ENOENT);
	snprintf(dir, sizeof(dir), "%s/tenants/%s", mount, fqfn);
	snprintf(path, sizeof(path), "%s/invoke", dir);
	free(mount);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		fprintf(stderr, "fnfs invoke: %s: %s\n", fqfn,
			err == ENOENT ? "no such function" : strerror(err));
		return exit_code(err);
	}
	/* The request, then the response: a write error is the request's
	 * (EINVAL, EOPNOTSUPP), a read error the call's. */
	err = copy(0, fd);
	if (err == 0)
		err = copy(fd, 1);
	close(fd);
	if (err != 0) {
		fprintf(stderr, "fnfs invoke: %s: %s\n", fqfn, strerror(err));
		if (err != EINTR)
			print_detail(dir);
	}
	return exit_code(err);
}
