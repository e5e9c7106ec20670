/*
 * upper.c - the function of scripts/bench/calls: copies its standard
 * input to its standard output with a-z upper-cased, until end of input.
 *
 * It serves every role in that benchmark: as a hot `line` function (one
 * request line in, one line out, its process kept), as a cold function
 * (the request on stdin, the response on stdout, exit 0 at the end of
 * input), and as the echo child of the floor (scripts/bench/calls_client
 * floor). It reads whatever arrives and writes it back at once with
 * write(2), without stdio buffering: a line that arrived whole is
 * answered whole, at once, in one write, which is all a hot line caller
 * needs, and nothing is ever held back waiting for more input.
 */
#include <errno.h>
#include <unistd.h>

int main(void)
{
	char buf[65536];
	ssize_t n, off, w, i;

	for (;;) {
		n = read(0, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		for (i = 0; i < n; i++)
			if (buf[i] >= 'a' && buf[i] <= 'z')
				buf[i] = (char)(buf[i] - 'a' + 'A');
		for (off = 0; off < n; off += w) {
			w = write(1, buf + off, (size_t)(n - off));
			if (w < 0) {
				if (errno == EINTR) {
					w = 0;
					continue;
				}
				return 1;
			}
		}
	}
}
