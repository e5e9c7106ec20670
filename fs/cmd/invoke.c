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

#include "../fs.h"

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
	case EDQUOT: return 11;	   /* over its tenant's request_bytes */
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

/* Writes `n` bytes of `p` to `fd`. Returns 0 or an errno. */
static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Builds the head of a request message: METHOD TARGET HTTP/1.1, the
 * headers, the blank line. Returns 0, or 2 with the usage error printed. */
static int build_head(const char *method, const char *target, char **hdrs,
		      int nhdrs, struct rt_buf *out)
{
	const char *p;
	int i;

	for (p = method; *p; p++)
		if (*p < 'A' || *p > 'Z') {
			fprintf(stderr,
				"fnfs invoke: -X %s: a method is "
				"capital letters\n",
				method);
			return 2;
		}
	if (method[0] == '\0' || target[0] != '/' ||
	    strpbrk(target, " \r\n#") != NULL) {
		fprintf(stderr,
			"fnfs invoke: --path %s: a path starts with "
			"/ and holds no space or #\n",
			target);
		return 2;
	}
	rt_buf_printf(out, "%s %s HTTP/1.1\r\n", method, target);
	for (i = 0; i < nhdrs; i++) {
		p = strchr(hdrs[i], ':');
		if (p == NULL || p == hdrs[i] ||
		    strpbrk(hdrs[i], "\r\n") != NULL) {
			fprintf(stderr,
				"fnfs invoke: -H %s: a header is "
				"'Name: value'\n",
				hdrs[i]);
			return 2;
		}
		rt_buf_printf(out, "%s\r\n", hdrs[i]);
	}
	return rt_buf_puts(out, "\r\n") < 0 ? 1 : 0;
}

/* Reads the response message from `fd` and prints its body, and its
 * status line and headers too with `include`. A response that is not a
 * message (the function is not of format http) is printed as it is.
 * Returns 0 or an errno. */
static int print_message(int fd, int include)
{
	struct rt_buf b = { 0 };
	char buf[65536], *end;
	size_t body = 0;
	ssize_t n;
	int err = 0;

	for (;;) {
		if (b.len >= 5 && memcmp(b.data, "HTTP/", 5) != 0)
			break; /* not a message */
		if (b.data != NULL &&
		    (end = strstr(b.data, "\r\n\r\n")) != NULL) {
			body = (size_t)(end + 4 - b.data);
			break;
		}
		if (b.len > 1 << 20)
			break;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			goto out;
		}
		if (n == 0)
			break;
		if (rt_buf_append(&b, buf, (size_t)n) < 0) {
			err = ENOMEM;
			goto out;
		}
	}
	if (include || body == 0)
		err = write_all(1, b.data ? b.data : "", b.len);
	else
		err = write_all(1, b.data + body, b.len - body);
	if (err == 0)
		err = copy(fd, 1);
out:
	rt_buf_free(&b);
	return err;
}

int fs_invoke_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "http", no_argument, NULL, 'T' },
		{ "include", no_argument, NULL, 'i' },
		{ "request", required_argument, NULL, 'X' },
		{ "header", required_argument, NULL, 'H' },
		{ "path", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *usage =
		"usage: fnfs invoke TENANT/NAMESPACE/FUNCTION "
		"[--mount MOUNTPOINT]\n"
		"                   [--http] [-X METHOD] [-H 'Name: value']... "
		"[--path /PATH?QUERY]\n"
		"                   [--include] < request\n";
	char *mount = NULL, dir[8192], path[8300], **hdrs = NULL;
	const char *fqfn, *method = "POST", *target = "/";
	struct rt_buf head = { 0 };
	int c, fd = -1, err = 0, slashes = 0, http = 0, include = 0, build = 0,
	       nhdrs = 0, rc = 0;
	size_t i;

	hdrs = calloc((size_t)argc + 1, sizeof(*hdrs));
	if (hdrs == NULL)
		return 1;
	while ((c = getopt_long(argc, argv, "m:hiX:H:", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'm':
			free(mount);
			mount = strdup(optarg);
			break;
		case 'T': http = 1; break;
		case 'i': include = 1; break;
		case 'X':
			method = optarg;
			build = 1;
			break;
		case 'H':
			hdrs[nhdrs++] = optarg;
			build = 1;
			break;
		case 'p':
			target = optarg;
			build = 1;
			break;
		case 'h': fputs(usage, stdout); goto done;
		default:
			rc = 2;
			fputs(usage, stderr);
			goto done;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		rc = 2;
		goto done;
	}
	fqfn = argv[optind];
	for (i = 0; fqfn[i]; i++)
		slashes += fqfn[i] == '/';
	if (slashes != 2 || strstr(fqfn, "..") != NULL || fqfn[0] == '/') {
		fprintf(stderr,
			"fnfs invoke: \"%s\" is not TENANT/NAMESPACE/"
			"FUNCTION\n",
			fqfn);
		rc = 2;
		goto done;
	}
	/* --include alone sends the body as a message (POST /), so that a
	 * message comes back. --http alone: stdin is the message. */
	if (build || (include && !http)) {
		rc = build_head(method, target, hdrs, nhdrs, &head);
		if (rc != 0)
			goto done;
	}
	if (mount == NULL && (mount = find_mount()) == NULL) {
		rc = exit_code(ENOENT);
		goto done;
	}
	snprintf(dir, sizeof(dir), "%s/tenants/%s", mount, fqfn);
	snprintf(path, sizeof(path), "%s/invoke", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		fprintf(stderr, "fnfs invoke: %s: %s\n", fqfn,
			err == ENOENT ? "no such function" : strerror(err));
		rc = exit_code(err);
		goto done;
	}
	/* The request, then the response: a write error is the request's
	 * (EINVAL, EOPNOTSUPP), a read error the call's. */
	if (head.len > 0)
		err = write_all(fd, head.data, head.len);
	if (err == 0)
		err = copy(0, fd);
	if (err == 0)
		err = http || include || build ? print_message(fd, include)
					       : copy(fd, 1);
	close(fd);
	if (err != 0) {
		fprintf(stderr, "fnfs invoke: %s: %s\n", fqfn, strerror(err));
		if (err != EINTR)
			print_detail(dir);
	}
	rc = exit_code(err);
done:
	free(mount);
	free(hdrs);
	rt_buf_free(&head);
	return rc;
}
