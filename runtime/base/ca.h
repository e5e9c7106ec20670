/*
 * ca.h - the cluster's certificate authority: `fnfs ca init` and `fnfs ca
 * issue`. Keys are EC P-256 made with the OpenSSL 3 EVP API; certificates
 * have random 128-bit serials. A certificate names its holder in the
 * subject's CN (a worker's id) and its role in the subject's OU ("worker"
 * or "controller"), and carries the matching extended key usage:
 * serverAuth for the controller's own (CN RT_CA_CONTROLLER_CN, what
 * --listen presents), clientAuth for a worker's and for a controller's
 * as a peer of the leader (CN its --name, minted at start from ca.key).
 *
 * Files, in DATA/ca/ (a 0700 directory): ca.pem (the CA certificate),
 * ca.key (0600), controller.pem and controller.key (0600: the controller's
 * own, for --listen), ticket.key (0600: the keys of TLS session tickets,
 * so that sessions resume across restarts of the controller).
 */
#ifndef FNFS_RT_CA_H
#define FNFS_RT_CA_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdint.h>

#include "rt.h"

#define RT_CA_ROLE_WORKER     "worker"
#define RT_CA_ROLE_CONTROLLER "controller"
#define RT_CA_CONTROLLER_CN   "fnfs controller" /* never a worker id */
#define RT_CA_DAYS_DEFAULT    365		/* a worker certificate */
#define RT_CA_DAYS_MAX	      36500
#define RT_CA_TICKET_KEY_LEN  80 /* name 16, HMAC 32, AES 32 */

/* A key and its certificate. */
struct rt_cred {
	EVP_PKEY *key; /* owned, or NULL */
	X509 *cert;    /* owned, or NULL */
};

/* What a certificate says, as the checks want it. */
struct rt_cert_info {
	char cn[128];	    /* subject CN */
	char role[32];	    /* subject OU */
	char serial[48];    /* hex, upper case */
	int64_t not_before; /* epoch seconds */
	int64_t not_after;  /* epoch seconds */
};

/* Frees what `c` holds. */
void rt_cred_free(struct rt_cred *c);

/* Makes a new self-signed CA valid `days` days. Returns 0, or -EIO with
 * the reason in `why`. */
int rt_ca_make(struct rt_cred *ca, int days, struct rt_buf *why);

/* Makes a key and a certificate for `cn` in `role`, signed by `ca`, valid
 * from now for `days` days (0: it expires at once, for tests). Returns 0,
 * or -EIO with the reason in `why`. */
int rt_ca_issue(const struct rt_cred *ca, const char *cn, const char *role,
		int days, struct rt_cred *out, struct rt_buf *why);

/* Reads the CN, OU, serial and validity of `x` (bytes of the names
 * outside printable ASCII read as '?'). Returns 0, or -EINVAL when it has
 * no CN. Pure. */
int rt_cert_info_of(X509 *x, struct rt_cert_info *ci);

/* `fnfs ca init`: creates DATA/ca with a new CA, the controller's key and
 * certificate and the session-ticket keys. Returns 0, -EEXIST (a CA is
 * there already) or -errno, with what happened in `msg`. */
int rt_ca_init_dir(const char *datadir, struct rt_buf *msg);

/* `fnfs ca issue`: writes OUTDIR/ID.key (0600) and OUTDIR/ID.pem for
 * worker `id`, signed by the CA of DATA/ca. Refuses to overwrite. Returns
 * 0 or -errno, with the paths written (or the reason) in `msg`. */
int rt_ca_issue_files(const char *datadir, const char *id, const char *outdir,
		      int days, struct rt_buf *msg);

/* The path of file `name` of DATA/ca into `out`. */
int rt_ca_path(struct rt_buf *out, const char *datadir, const char *name);

/* Loads a PEM certificate (`cert`, may be NULL) and key (`key`, may be
 * NULL) into `c`. Returns 0, or -errno with the reason in `why`. */
int rt_cred_load(struct rt_cred *c, const char *cert, const char *key,
		 struct rt_buf *why);

/* The `fnfs ca` command. Returns the exit code. */
int rt_ca_main(int argc, char **argv, const char *default_datadir);

#endif
