/*
 * ca.c - the cluster's certificate authority (see ca.h): making keys and
 * certificates with the OpenSSL 3 EVP and X509 APIs, and the files of
 * `fnfs ca init` and `fnfs ca issue`.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ca.h"
#include "private.h"

#define CA_DAYS	      (3650) /* the CA and the controller's certificate */
#define CA_BACKDATE_S (300)  /* the controller's, for skewed clocks */

/* Appends OpenSSL's last error to `why` after `what`. Returns -EIO. */
static int ossl_fail(struct rt_buf *why, const char *what)
{
	unsigned long e = ERR_get_error();
	char s[256];

	if (e != 0)
		ERR_error_string_n(e, s, sizeof(s));
	else
		snprintf(s, sizeof(s), "unknown error");
	ERR_clear_error();
	if (why != NULL)
		rt_buf_printf(why, "%s: %s", what, s);
	return -EIO;
}

void rt_cred_free(struct rt_cred *c)
{
	EVP_PKEY_free(c->key);
	X509_free(c->cert);
	c->key = NULL;
	c->cert = NULL;
}

/* A random positive 128-bit serial for `x`. */
static int set_serial(X509 *x)
{
	unsigned char r[16];
	BIGNUM *bn = NULL;
	ASN1_INTEGER *ai = NULL;
	int rc = -EIO;

	if (RAND_bytes(r, sizeof(r)) != 1)
		goto out;
	r[0] &= 0x7f; /* positive */
	r[0] |= 0x40; /* and always 16 bytes long */
	bn = BN_bin2bn(r, sizeof(r), NULL);
	if (bn == NULL)
		goto out;
	ai = BN_to_ASN1_INTEGER(bn, NULL);
	if (ai == NULL || X509_set_serialNumber(x, ai) != 1)
		goto out;
	rc = 0;
out:
	ASN1_INTEGER_free(ai);
	BN_free(bn);
	return rc;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (e == NULL)
		return -EIO;
	ok = X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok == 1 ? 0 : -EIO;
}

/* The subject O=fnfs, OU=role, CN=cn. */
static int set_subject(X509 *x, const char *cn, const char *role)
{
	X509_NAME *n = X509_get_subject_name(x);

	if (X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8,
				       (const unsigned char *)"fnfs", -1, -1,
				       0) != 1 ||
	    X509_NAME_add_entry_by_txt(n, "OU", MBSTRING_UTF8,
				       (const unsigned char *)role, -1, -1,
				       0) != 1 ||
	    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8,
				       (const unsigned char *)cn, -1, -1,
				       0) != 1)
		return -EIO;
	return 0;
}

/* A new certificate for `key`, valid from now - `backdate` s for `days`
 * days, named `cn` in `role`, signed by `ca` (NULL: by itself, a CA). */
static int make_cert(const struct rt_cred *ca, EVP_PKEY *key, const char *cn,
		     const char *role, int days, long backdate, X509 **out,
		     struct rt_buf *why)
{
	X509 *x = X509_new(), *issuer;
	EVP_PKEY *signer = ca ? ca->key : key;
	int rc = -EIO;

	if (x == NULL || X509_set_version(x, 2) != 1 || set_serial(x) < 0 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -backdate) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), days, -backdate, NULL) ==
		    NULL ||
	    X509_set_pubkey(x, key) != 1 || set_subject(x, cn, role) < 0) {
		rc = ossl_fail(why, "cannot make a certificate");
		goto out;
	}
	issuer = ca ? ca->cert : x;
	if (X509_set_issuer_name(x, X509_get_subject_name(issuer)) != 1) {
		rc = ossl_fail(why, "cannot set the issuer");
		goto out;
	}
	if (ca == NULL)
		rc = add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
	else
		rc = add_ext(x, issuer, NID_basic_constraints,
			     "critical,CA:FALSE");
	if (rc == 0)
		rc = add_ext(x, issuer, NID_key_usage,
			     ca == NULL ? "critical,keyCertSign,cRLSign"
					: "critical,digitalSignature");
	/* The controller's own certificate serves (--listen); any other,
	 * a worker's or a controller's as a peer of the leader, is a
	 * client's. */
	if (rc == 0 && ca != NULL)
		rc = add_ext(x, issuer, NID_ext_key_usage,
			     strcmp(role, RT_CA_ROLE_CONTROLLER) == 0 &&
					     strcmp(cn, RT_CA_CONTROLLER_CN) ==
						     0
				     ? "serverAuth"
				     : "clientAuth");
	if (rc == 0)
		rc = add_ext(x, issuer, NID_subject_key_identifier, "hash");
	if (rc == 0 && ca != NULL)
		rc = add_ext(x, issuer, NID_authority_key_identifier,
			     "keyid:always");
	if (rc < 0) {
		rc = ossl_fail(why, "cannot add an extension");
		goto out;
	}
	if (X509_sign(x, signer, EVP_sha256()) <= 0) {
		rc = ossl_fail(why, "cannot sign");
		goto out;
	}
	*out = x;
	x = NULL;
	rc = 0;
out:
	X509_free(x);
	return rc;
}

static EVP_PKEY *new_key(void)
{
	return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

int rt_ca_make(struct rt_cred *ca, int days, struct rt_buf *why)
{
	int rc;

	ca->cert = NULL;
	ca->key = new_key();
	if (ca->key == NULL)
		return ossl_fail(why, "cannot make a key");
	rc = make_cert(NULL, ca->key, "fnfs cluster CA", "ca", days, 0,
		       &ca->cert, why);
	if (rc < 0)
		rt_cred_free(ca);
	return rc;
}

/* As rt_ca_issue, backdated by `backdate` seconds. */
static int issue(const struct rt_cred *ca, const char *cn, const char *role,
		 int days, long backdate, struct rt_cred *out,
		 struct rt_buf *why)
{
	int rc;

	out->cert = NULL;
	out->key = new_key();
	if (out->key == NULL)
		return ossl_fail(why, "cannot make a key");
	rc = make_cert(ca, out->key, cn, role, days, backdate, &out->cert, why);
	if (rc < 0)
		rt_cred_free(out);
	return rc;
}

int rt_ca_issue(const struct rt_cred *ca, const char *cn, const char *role,
		int days, struct rt_cred *out, struct rt_buf *why)
{
	return issue(ca, cn, role, days, 0, out, why);
}

/* Epoch seconds of `t`, or 0. */
static int64_t epoch_of(const ASN1_TIME *t)
{
	struct tm tm;

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return 0;
	return (int64_t)timegm(&tm);
}

static void name_entry(X509_NAME *n, int nid, char *out, size_t size)
{
	int i = X509_NAME_get_index_by_NID(n, nid, -1);
	const ASN1_STRING *s;
	size_t len;

	out[0] = '\0';
	if (i < 0)
		return;
	s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i));
	len = (size_t)ASN1_STRING_length(s);
	if (len >= size || memchr(ASN1_STRING_get0_data(s), '\0', len))
		return; /* too long, or a NUL inside: no name at all */
	memcpy(out, ASN1_STRING_get0_data(s), len);
	out[len] = '\0';
	/* A peer's certificate may come from anyone: what it says is shown
	 * in logs and events, so only printable ASCII is kept. */
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] < 0x20 ||
		    (unsigned char)out[i] > 0x7e)
			out[i] = '?';
}

int rt_cert_info_of(X509 *x, struct rt_cert_info *ci)
{
	X509_NAME *n = X509_get_subject_name(x);
	BIGNUM *bn;
	char *hex;

	memset(ci, 0, sizeof(*ci));
	name_entry(n, NID_commonName, ci->cn, sizeof(ci->cn));
	name_entry(n, NID_organizationalUnitName, ci->role, sizeof(ci->role));
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	hex = bn ? BN_bn2hex(bn) : NULL;
	if (hex != NULL && strlen(hex) < sizeof(ci->serial))
		snprintf(ci->serial, sizeof(ci->serial), "%s", hex);
	OPENSSL_free(hex);
	BN_free(bn);
	ci->not_before = epoch_of(X509_get0_notBefore(x));
	ci->not_after = epoch_of(X509_get0_notAfter(x));
	return ci->cn[0] ? 0 : -EINVAL;
}

/* ================================================================ files */

int rt_ca_path(struct rt_buf *out, const char *datadir, const char *name)
{
	rt_buf_reset(out);
	return rt_buf_printf(out, "%s/ca%s%s", datadir, name ? "/" : "",
			     name ? name : "");
}

/* Writes `x` (a certificate, or a key when `key` is set) to a new file
 * `path` of `mode`. Returns 0, -EEXIST or -errno. */
static int write_pem(const char *path, X509 *x, EVP_PKEY *key, mode_t mode,
		     struct rt_buf *why)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	FILE *f = NULL;
	int rc = 0, ok;

	if (fd < 0) {
		rc = -errno;
		rt_buf_printf(why, "cannot create %s: %s", path, strerror(-rc));
		goto out;
	}
	fchmod(fd, mode); /* whatever the umask */
	f = fdopen(fd, "w");
	if (f == NULL) {
		rc = -errno;
		close(fd);
		goto out;
	}
	ok = key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)
		 : PEM_write_X509(f, x);
	if (ok != 1)
		rc = ossl_fail(why, "cannot write a PEM file");
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = rc ? rc : -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		unlink(path);
out:
	return rc;
}

/* Writes `c` as DIR/NAME.pem and DIR/NAME.key. */
static int write_cred(const char *dir, const char *name,
		      const struct rt_cred *c, struct rt_buf *msg)
{
	struct rt_buf p = { 0 }, k = { 0 };
	int rc;

	rt_buf_printf(&p, "%s/%s.pem", dir, name);
	rt_buf_printf(&k, "%s/%s.key", dir, name);
	rc = write_pem(k.data, NULL, c->key, RT_PRIVATE_FILE_MODE, msg);
	if (rc == 0) {
		rc = write_pem(p.data, c->cert, NULL, 0644, msg);
		if (rc < 0)
			unlink(k.data);
	}
	rt_buf_free(&p);
	rt_buf_free(&k);
	return rc;
}

static int write_ticket_keys(const char *path, struct rt_buf *why)
{
	unsigned char keys[RT_CA_TICKET_KEY_LEN];
	int fd, rc = 0;

	if (RAND_bytes(keys, sizeof(keys)) != 1)
		return ossl_fail(why, "no random bytes");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		  RT_PRIVATE_FILE_MODE);
	if (fd < 0) {
		rc = -errno;
		rt_buf_printf(why, "cannot create %s: %s", path, strerror(-rc));
		return rc;
	}
	fchmod(fd, RT_PRIVATE_FILE_MODE);
	if (write(fd, keys, sizeof(keys)) != (ssize_t)sizeof(keys) ||
	    fsync(fd) != 0)
		rc = -EIO;
	close(fd);
	OPENSSL_cleanse(keys, sizeof(keys));
	return rc;
}

int rt_ca_init_dir(const char *datadir, struct rt_buf *msg)
{
	struct rt_cred ca = { 0 }, ctl = { 0 };
	struct rt_buf dir = { 0 }, p = { 0 };
	int rc;

	if (mkdir(datadir, RT_PRIVATE_DIR_MODE) < 0 && errno != EEXIST) {
		rc = -errno;
		rt_buf_printf(msg, "cannot create %s: %s", datadir,
			      strerror(-rc));
		goto out;
	}
	rt_ca_path(&dir, datadir, NULL);
	if (mkdir(dir.data, RT_PRIVATE_DIR_MODE) < 0) {
		rc = -errno;
		if (rc == -EEXIST)
			rt_buf_printf(msg,
				      "%s exists already: this data directory "
				      "has a CA (remove the directory to "
				      "start over; every certificate it "
				      "issued then stops working)",
				      dir.data);
		else
			rt_buf_printf(msg, "cannot create %s: %s", dir.data,
				      strerror(-rc));
		goto out;
	}
	chmod(dir.data, RT_PRIVATE_DIR_MODE);
	rc = rt_ca_make(&ca, CA_DAYS, msg);
	if (rc == 0)
		rc = issue(&ca, RT_CA_CONTROLLER_CN, RT_CA_ROLE_CONTROLLER,
			   CA_DAYS, CA_BACKDATE_S, &ctl, msg);
	if (rc == 0)
		rc = write_cred(dir.data, "ca", &ca, msg);
	if (rc == 0)
		rc = write_cred(dir.data, "controller", &ctl, msg);
	rt_ca_path(&p, datadir, "ticket.key");
	if (rc == 0)
		rc = write_ticket_keys(p.data, msg);
	if (rc == 0)
		rt_buf_printf(msg,
			      "the cluster CA is in %s: ca.pem (give it to "
			      "every worker), ca.key (keep it secret), "
			      "controller.pem and controller.key (--listen)",
			      dir.data);
out:
	rt_cred_free(&ca);
	rt_cred_free(&ctl);
	rt_buf_free(&dir);
	rt_buf_free(&p);
	return rc;
}

int rt_cred_load(struct rt_cred *c, const char *cert, const char *key,
		 struct rt_buf *why)
{
	FILE *f;
	int rc = 0;

	c->cert = NULL;
	c->key = NULL;
	if (cert != NULL) {
		f = fopen(cert, "re");
		if (f == NULL) {
			rc = -errno;
			rt_buf_printf(why, "cannot open %s: %s", cert,
				      strerror(errno));
			goto out;
		}
		c->cert = PEM_read_X509(f, NULL, NULL, NULL);
		fclose(f);
		if (c->cert == NULL) {
			rc = ossl_fail(why, cert);
			goto out;
		}
	}
	if (key != NULL) {
		f = fopen(key, "re");
		if (f == NULL) {
			rc = -errno;
			rt_buf_printf(why, "cannot open %s: %s", key,
				      strerror(errno));
			goto out;
		}
		c->key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
		fclose(f);
		if (c->key == NULL) {
			rc = ossl_fail(why, key);
			goto out;
		}
	}
	if (c->cert != NULL && c->key != NULL &&
	    X509_check_private_key(c->cert, c->key) != 1)
		rc = ossl_fail(why, "the key does not match the certificate");
out:
	if (rc < 0)
		rt_cred_free(c);
	return rc;
}

int rt_ca_issue_files(const char *datadir, const char *id, const char *outdir,
		      int days, struct rt_buf *msg)
{
	struct rt_cred ca = { 0 }, w = { 0 };
	struct rt_buf cp = { 0 }, kp = { 0 };
	int rc;

	rt_ca_path(&cp, datadir, "ca.pem");
	rt_ca_path(&kp, datadir, "ca.key");
	if (access(cp.data, F_OK) < 0) {
		rc = -ENOENT;
		rt_buf_printf(msg,
			      "no CA in %s/ca: run fnfs ca init --data %s "
			      "first",
			      datadir, datadir);
		goto out;
	}
	rc = rt_cred_load(&ca, cp.data, kp.data, msg);
	if (rc == 0)
		rc = rt_ca_issue(&ca, id, RT_CA_ROLE_WORKER, days, &w, msg);
	if (rc == 0)
		rc = write_cred(outdir, id, &w, msg);
	if (rc == 0) {
		struct rt_cert_info ci;

		rt_cert_info_of(w.cert, &ci);
		rt_buf_printf(msg,
			      "%s/%s.pem\n%s/%s.key\n"
			      "(worker %s, serial %s, valid for %d days; "
			      "give the worker %s/ca/ca.pem too)",
			      outdir, id, outdir, id, id, ci.serial, days,
			      datadir);
	}
out:
	rt_cred_free(&ca);
	rt_cred_free(&w);
	rt_buf_free(&cp);
	rt_buf_free(&kp);
	return rc;
}

/* ============================================================ command */

static const char ca_usage[] =
	"usage: fnfs ca init [--data DIR]\n"
	"       fnfs ca issue [--data DIR] [--out DIR] [--days N] ID\n";

int rt_ca_main(int argc, char **argv, const char *default_datadir)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "out", required_argument, NULL, 'o' },
		{ "days", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sub = argc > 1 ? argv[1] : "", *data = default_datadir,
		   *outdir = ".";
	struct rt_buf msg = { 0 };
	char *end;
	long days = RT_CA_DAYS_DEFAULT;
	int c, rc, init = strcmp(sub, "init") == 0;

	if (!init && strcmp(sub, "issue") != 0) {
		fputs(ca_usage, strcmp(sub, "help") == 0 ? stdout : stderr);
		return strcmp(sub, "help") == 0 ? 0 : 2;
	}
	optind = 1;
	/* Options may come after the id (GNU getopt permutes). */
	while ((c = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'd': data = optarg; break;
		case 'o': outdir = optarg; break;
		case 'n':
			days = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || days < 0 ||
			    days > RT_CA_DAYS_MAX) {
				fprintf(stderr,
					"fnfs ca: --days wants 0 to %d\n",
					RT_CA_DAYS_MAX);
				return 2;
			}
			break;
		case 'h': fputs(ca_usage, stdout); return 0;
		default: fputs(ca_usage, stderr); return 2;
		}
	}
	if (init ? optind != argc - 1 : optind != argc - 2) {
		fputs(ca_usage, stderr);
		return 2;
	}
	if (!init && !rt_name_valid(argv[optind + 1])) {
		fprintf(stderr,
			"fnfs ca issue: bad worker id \"%s\": 1 to 63 of "
			"[A-Za-z0-9._-], starting with a letter or digit\n",
			argv[optind + 1]);
		return 2;
	}
	if (init)
		rc = rt_ca_init_dir(data, &msg);
	else
		rc = rt_ca_issue_files(data, argv[optind + 1], outdir,
				       (int)days, &msg);
	if (rc < 0)
		fprintf(stderr, "fnfs ca %s: %s\n", sub,
			msg.data ? msg.data : strerror(-rc));
	else
		printf("%s\n", msg.data ? msg.data : "done");
	rt_buf_free(&msg);
	return rc < 0 ? 1 : 0;
}
