/*
 * core/cli/cli_sync.c - `kope serve`, `kope sync` and `kope fleet` (docs/SYNC.md).
 *
 * Files beside the store (DB = --db path), each overridable in the config:
 *   DB.key     this device's private key (`kope init`; $KOPE_KEY)
 *   DB.crt     this device's fleet certificate (`kope fleet enroll`; fleet.cert)
 *   DB.ca.pem  the fleet CA certificates this device trusts (fleet.ca)
 * A fleet CA made by `kope fleet init` lives in a directory (default ./fleet):
 * ca.key (0600) and ca.crt.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/cli/cli.h"
#include "core/cli/config.h"
#include "core/err.h"
#include "core/secret.h"
#include "core/graph/graph.h"
#include "core/graph/sync.h"
#include "core/util.h"
#include "net/crypto.h"
#include "net/fleet.h"
#include "net/neterr.h"
#include "net/peer.h"
#include "store/store.h"

#define PEM_FILE_MAX (1024 * 1024)

static const char *fleet_path(struct cli *c, const char *cfg_key, const char *suffix, char *buf, size_t cap)
{
    struct kope_config *cfg = cli_config(c);
    const char *v = cfg ? kope_config_str(cfg, cfg_key, NULL) : NULL;
    if (v && *v)
        return v;
    snprintf(buf, cap, "%s%s", c->db_path, suffix);
    return buf;
}

static char *read_text(const char *path, const char *what)
{
    char *t = NULL, err[512];
    size_t len = 0;
    if (util_read_file(path, PEM_FILE_MAX, &t, &len, err, sizeof err)) {
        fprintf(stderr, "kope: cannot read %s: %s\n", what, err);
        return NULL;
    }
    return t;
}

static int write_text(const char *path, const char *text, int mode, int excl)
{
    int fd = open(path, O_WRONLY | O_CREAT | (excl ? O_EXCL : O_TRUNC), mode);
    if (fd < 0) {
        fprintf(stderr, "kope: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
    close(fd);
    if (!ok)
        fprintf(stderr, "kope: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* Add a CA certificate (PEM text) to the trust file unless already there. */
static int trust_add(const char *trust_path, const char *pem)
{
    char *have = NULL, err[256];
    size_t len = 0;
    uint8_t der[NET_CERT_DER_MAX];
    size_t der_len = 0;
    char cn[128];
    if (net_cert_pem_parse(pem, der, &der_len, NULL, NULL, cn, sizeof cn)) {
        fprintf(stderr, "kope fleet: not a PEM certificate\n");
        return -1;
    }
    if (util_read_file(trust_path, PEM_FILE_MAX, &have, &len, err, sizeof err) == 0 && strstr(have, pem)) {
        printf("already trusted: %s\n", cn);
        free(have);
        return 0;
    }
    free(have);
    FILE *f = fopen(trust_path, "a");
    if (!f || fputs(pem, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "kope fleet: cannot append to %s: %s\n", trust_path, strerror(errno));
        return -1;
    }
    printf("trusting CA '%s' (%s)\n", cn, trust_path);
    return 0;
}

/* ------------------------------------------------------------------ fleet */

static int fleet_usage(FILE *f)
{
    fprintf(f,
            "usage: kope fleet init [--dir DIR] [--name NAME] [--days N]\n"
            "       kope fleet enroll NAME [--ca DIR] [--days N]\n"
            "       kope fleet enroll --cert DEVICE.crt\n"
            "       kope fleet trust CERT.pem\n"
            "       kope fleet revoke NAME|DEVICE.crt [--after-seq N] [--ca DIR]\n"
            "\n"
            "A fleet is the set of devices whose records this one accepts: those\n"
            "holding a certificate from a CA it trusts.\n"
            "  init    make a fleet CA in DIR (default ./fleet): ca.key (0600), ca.crt;\n"
            "          this device trusts it (DB.ca.pem)\n"
            "  enroll  issue this device (key DB.key from `kope init`) a certificate named\n"
            "          NAME from the CA in DIR: writes DB.crt, trusts the CA, and signs a\n"
            "          checkpoint carrying the certificate so peers can verify its records;\n"
            "          --cert: install a certificate issued elsewhere for this device's key\n"
            "  trust   trust another fleet CA certificate (appended to DB.ca.pem)\n"
            "  revoke  with the CA in DIR that certified it: refuse the device's records\n"
            "          after seq N fleet-wide (default: the last seq this store holds\n"
            "          covered); a record signed by the CA, synced like any other\n"
            "Equivalent openssl commands for an existing CA: docs/SYNC.md.\n");
    return f == stdout ? CLI_OK : CLI_USAGE;
}

static int fleet_init(struct cli *c, int argc, char **argv)
{
    const char *dir = "fleet", *name = "kope fleet CA";
    int days = 3650;
    char kp[4096], cp[4096], tp[4096];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
            name = argv[++i];
        else if (strcmp(argv[i], "--days") == 0 && i + 1 < argc)
            days = atoi(argv[++i]);
        else
            return fleet_usage(stderr);
    }
    if (days <= 0)
        return fleet_usage(stderr);
    snprintf(kp, sizeof kp, "%s/ca.key", dir);
    snprintf(cp, sizeof cp, "%s/ca.crt", dir);
    if (mkdir(dir, 0700) && errno != EEXIST) {
        fprintf(stderr, "kope fleet init: cannot create %s: %s\n", dir, strerror(errno));
        return CLI_FAIL;
    }
    if (access(kp, F_OK) == 0) {
        fprintf(stderr, "kope fleet init: %s exists: a fleet CA is already there\n", kp);
        return CLI_FAIL;
    }
    char *key = NULL, *cert = NULL;
    int rc = net_fleet_ca_make(name, days, &key, &cert), code = CLI_FAIL;
    if (rc) {
        fprintf(stderr, "kope fleet init: %s\n", kope_strerror(rc));
        goto out;
    }
    (void)secret_add_key_pem(key, strlen(key), "the fleet CA's private key"); /* best effort: a last line */
    if (write_text(kp, key, 0600, 1) || write_text(cp, cert, 0644, 0) ||
        trust_add(fleet_path(c, "fleet.ca", ".ca.pem", tp, sizeof tp), cert))
        goto out;
    printf("fleet CA '%s': %s, %s\n", name, cp, kp);
    code = CLI_OK;
out:
    if (key) {
        net_wipe(key, strlen(key));
        free(key);
    }
    free(cert);
    return code;
}

static int fleet_enroll(struct cli *c, int argc, char **argv)
{
    const char *dir = "fleet", *name = NULL, *cert_file = NULL;
    int days = 825, ca_given = 0;
    char kp[4096], cp[4096], tp[4096], crt[4096], err[320], hex[2 * NET_CERT_DER_MAX + 1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc)
            dir = argv[++i], ca_given = 1;
        else if (strcmp(argv[i], "--cert") == 0 && i + 1 < argc)
            cert_file = argv[++i];
        else if (strcmp(argv[i], "--days") == 0 && i + 1 < argc)
            days = atoi(argv[++i]);
        else if (!name && argv[i][0] != '-')
            name = argv[i];
        else
            return fleet_usage(stderr);
    }
    if ((!name && !cert_file) || days <= 0)
        return fleet_usage(stderr);
    struct graph g;
    if (cli_graph_open(c, &g, 1))
        return CLI_FAIL;
    int code = CLI_FAIL, rc;
    char *cakey = NULL, *cacert = NULL, *pem = NULL, cn[128];
    uint8_t pub[NET_PUBKEY_MAX], der[NET_CERT_DER_MAX], cpub[NET_PUBKEY_MAX];
    size_t pub_len = 0, der_len = 0, cpub_len = 0;
    if ((rc = net_key_public_der(g.key, pub, sizeof pub, &pub_len)))
        goto out;
    if (cert_file) {
        /* a certificate issued elsewhere (openssl, docs/SYNC.md): it must be
         * for this device's key; its CA is trusted with `kope fleet trust` */
        if (!(pem = read_text(cert_file, "the device certificate")))
            goto out;
        if (net_cert_pem_parse(pem, der, &der_len, cpub, &cpub_len, cn, sizeof cn) || cpub_len != pub_len ||
            memcmp(cpub, pub, pub_len) != 0) {
            fprintf(stderr, "kope fleet enroll: %s is not a certificate for this device's key\n", cert_file);
            goto out;
        }
        name = cn;
    } else {
        snprintf(kp, sizeof kp, "%s/ca.key", dir);
        snprintf(cp, sizeof cp, "%s/ca.crt", dir);
        if (!(cakey = read_text(kp, "the fleet CA key")) || !(cacert = read_text(cp, "the fleet CA certificate"))) {
            cli_hint("%s: pass --ca DIR with the folder `kope fleet init` made (it holds ca.key and "
                     "ca.crt), or install a certificate issued elsewhere: `kope fleet enroll --cert "
                     "DEVICE.crt`", ca_given ? "that folder holds no fleet CA" : "no fleet CA in ./fleet");
            goto out;
        }
        (void)secret_add_key_pem(cakey, strlen(cakey), "the fleet CA's private key"); /* best effort: a last line */
        if ((rc = net_fleet_cert_issue(cakey, cacert, pub, pub_len, name, days, NULL, NULL, &pem, err, sizeof err))) {
            fprintf(stderr, "kope fleet enroll: %s\n", err);
            goto out;
        }
        if (net_cert_pem_parse(pem, der, &der_len, NULL, NULL, NULL, 0))
            goto out;
    }
    const char *crt_path = fleet_path(c, "fleet.cert", ".crt", crt, sizeof crt);
    if ((cert_file ? strcmp(crt_path, cert_file) != 0 && write_text(crt_path, pem, 0644, 0) : write_text(crt_path, pem, 0644, 0)) ||
        (cacert && trust_add(fleet_path(c, "fleet.ca", ".ca.pem", tp, sizeof tp), cacert)))
        goto out;
    util_hex(der, der_len, hex);
    if ((rc = graph_cert_set(&g, hex))) {
        fprintf(stderr, "kope fleet enroll: %s\n", g.err[0] ? g.err : kope_strerror(rc));
        goto out;
    }
    printf("enrolled '%s': %s (checkpoint seq %lld carries it)\n", name, crt_path, (long long)g.seq);
    code = CLI_OK;
out:
    if (cakey) {
        net_wipe(cakey, strlen(cakey));
        free(cakey);
    }
    free(cacert);
    free(pem);
    graph_free(&g);
    return code;
}

/* The certificate of a device named cn, from its newest certificate-bearing
 * checkpoint in this store. */
struct cert_find {
    struct store *st;
    const char *cn;
    int found;
    uint8_t origin[32];
    char *hex;   /* owned, the match's certificate (DER hex) */
    int64_t seq; /* a checkpoint seq to read */
    char *tmp;   /* that checkpoint's certificate (DER hex), owned */
};

static int ckpt_cert_cb(void *ctx, const struct store_rec *r)
{
    struct cert_find *f = ctx;
    cJSON *j = cJSON_ParseWithLength(r->canon, r->canon_len);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "body"), "cert");
    if (cJSON_IsString(c))
        f->tmp = strdup(c->valuestring);
    cJSON_Delete(j);
    return 1; /* only that one record */
}

static int cert_find_cb(void *ctx, const struct store_origin *o)
{
    struct cert_find *f = ctx;
    int64_t seq = 0;
    uint8_t der[NET_CERT_DER_MAX];
    char *pem = NULL, cn[128];
    if (store_ckpt_at_most(f->st, o->origin, o->head_seq, 1, &seq) || !seq)
        return 0;
    free(f->tmp);
    f->tmp = NULL;
    store_rec_query(f->st, STORE_Q_ORIGIN, o->origin, seq - 1, ckpt_cert_cb, f);
    size_t n = f->tmp ? strlen(f->tmp) : 0;
    if (n && n % 2 == 0 && n / 2 <= sizeof der && util_unhex(f->tmp, der, n / 2) == 0 &&
        net_cert_der_to_pem(der, n / 2, &pem) == 0 && net_cert_pem_parse(pem, NULL, NULL, NULL, NULL, cn, sizeof cn) == 0 &&
        strcmp(cn, f->cn) == 0) {
        if (f->found++ == 0) {
            memcpy(f->origin, o->origin, 32);
            f->hex = f->tmp;
            f->tmp = NULL;
        }
    }
    free(pem);
    return 0;
}

static int fleet_revoke(struct cli *c, int argc, char **argv)
{
    const char *dir = "fleet", *who = NULL;
    long long after = -1;
    char kp[4096], cp[4096], err[320], ohex[GRAPH_ID_HEX], idhex[GRAPH_ID_HEX], why[200];
    for (int i = 2; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--after-seq") == 0 && i + 1 < argc) {
            after = strtoll(argv[++i], &end, 10);
            if (!*argv[i] || *end || after < 0)
                return fleet_usage(stderr);
        } else if (!who && argv[i][0] != '-')
            who = argv[i];
        else
            return fleet_usage(stderr);
    }
    if (!who)
        return fleet_usage(stderr);
    struct graph g;
    if (cli_graph_open(c, &g, 1))
        return CLI_FAIL;
    int code = CLI_FAIL, rc;
    char *cakey = NULL, *cacert = NULL, *pem = NULL, *cert_hex = NULL, sig_hex[2 * NET_SIG_MAX + 1];
    struct net_key *k = NULL;
    struct net_trust *t = NULL;
    struct cert_find f = {g.st, who, 0, {0}, NULL, 0, NULL};
    uint8_t der[NET_CERT_DER_MAX], pub[NET_PUBKEY_MAX], origin[32], digest[32], sig[NET_SIG_MAX], id[32];
    size_t der_len = 0, pub_len = 0, sig_len = 0;
    if (access(who, R_OK) == 0) { /* a certificate file */
        if (!(pem = read_text(who, "the device certificate")))
            goto out;
        if (net_cert_pem_parse(pem, der, &der_len, pub, &pub_len, NULL, 0)) {
            fprintf(stderr, "kope fleet revoke: %s is not a PEM certificate\n", who);
            goto out;
        }
        net_sha256(pub, pub_len, origin);
        if (!(cert_hex = malloc(2 * der_len + 1)))
            goto out;
        util_hex(der, der_len, cert_hex);
    } else { /* a device name: its certificate as its checkpoints carry it here */
        if ((rc = store_origin_each(g.st, cert_find_cb, &f)) || !f.found) {
            fprintf(stderr, "kope fleet revoke: no enrolled device named '%s' in this store\n", who);
            cli_hint("name a device whose records this store holds, or pass its certificate file (DEVICE.crt)");
            goto out;
        }
        if (f.found > 1) {
            fprintf(stderr, "kope fleet revoke: %d devices are named '%s': pass the certificate file instead\n",
                    f.found, who);
            goto out;
        }
        memcpy(origin, f.origin, 32);
        cert_hex = f.hex;
        f.hex = NULL;
        der_len = strlen(cert_hex) / 2;
        util_unhex(cert_hex, der, der_len);
    }
    if (after < 0) { /* default: what this store holds covered of it stays */
        struct store_origin o;
        after = store_origin_get(g.st, origin, &o) == 0 ? o.ckpt_seq : 0;
    }
    snprintf(kp, sizeof kp, "%s/ca.key", dir);
    snprintf(cp, sizeof cp, "%s/ca.crt", dir);
    if (!(cakey = read_text(kp, "the fleet CA key")) || !(cacert = read_text(cp, "the fleet CA certificate"))) {
        cli_hint("revoking takes the CA that certified the device: pass --ca DIR (the folder `kope fleet init` "
                 "made, holding ca.key and ca.crt)");
        goto out;
    }
    (void)secret_add_key_pem(cakey, strlen(cakey), "the fleet CA's private key"); /* best effort: a last line */
    graph_revocation_digest(origin, after, digest);
    if ((rc = net_key_load((const uint8_t *)cakey, strlen(cakey) + 1, &k)) ||
        (rc = net_key_sign(k, digest, sig, sizeof sig, &sig_len))) {
        fprintf(stderr, "kope fleet revoke: cannot sign with %s: %s\n", kp, kope_strerror(rc));
        goto out;
    }
    /* what every peer will check: refuse here what they would refuse */
    if ((rc = net_trust_new(cacert, &t, err, sizeof err)) ||
        net_trust_revoke_check(t, der, der_len, origin, digest, sig, sig_len, why, sizeof why)) {
        fprintf(stderr, "kope fleet revoke: %s: the CA in %s did not certify this device (%s)\n", who, dir,
                rc ? err : why);
        goto out;
    }
    util_hex(sig, sig_len, sig_hex);
    if ((rc = graph_revocation_add(&g, origin, after, cert_hex, sig_hex, id))) {
        fprintf(stderr, "kope fleet revoke: %s\n", g.err[0] ? g.err : kope_strerror(rc));
        goto out;
    }
    util_hex(origin, 32, ohex);
    util_hex(id, 32, idhex);
    printf("revoked %s (origin %.16s): its records after seq %lld are refused and hidden here now, and on each "
           "peer once it syncs (revocation %.16s)\n", who, ohex, after, idhex);
    code = CLI_OK;
out:
    if (cakey) {
        net_wipe(cakey, strlen(cakey));
        free(cakey);
    }
    net_key_free(k);
    net_trust_free(t);
    free(cacert);
    free(pem);
    free(cert_hex);
    free(f.hex);
    free(f.tmp);
    graph_free(&g);
    return code;
}

int cli_fleet(struct cli *c, int argc, char **argv)
{
    char tp[4096];
    if (argc < 2 || cli_wants_help(argc, argv))
        return fleet_usage(argc < 2 ? stderr : stdout);
    if (strcmp(argv[1], "init") == 0)
        return fleet_init(c, argc, argv);
    if (strcmp(argv[1], "enroll") == 0)
        return fleet_enroll(c, argc, argv);
    if (strcmp(argv[1], "revoke") == 0)
        return fleet_revoke(c, argc, argv);
    if (strcmp(argv[1], "trust") == 0 && argc == 3) {
        char *pem = read_text(argv[2], "the CA certificate");
        int rc = pem ? trust_add(fleet_path(c, "fleet.ca", ".ca.pem", tp, sizeof tp), pem) : -1;
        free(pem);
        return rc ? CLI_FAIL : CLI_OK;
    }
    return fleet_usage(stderr);
}

int cli_fleet_trust_load(struct cli *c, struct net_trust **out)
{
    char tp[4096], err[320];
    const char *path = fleet_path(c, "fleet.ca", ".ca.pem", tp, sizeof tp);
    *out = NULL;
    if (access(path, F_OK) != 0)
        return 0;
    char *pem = read_text(path, "the trusted fleet CAs");
    if (!pem)
        return -1;
    int rc = net_trust_new(pem, out, err, sizeof err);
    free(pem);
    if (rc)
        fprintf(stderr, "kope: %s: %s\n", path, err);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ serve / sync */

/* What every peer command needs: the TLS conf and the trust set. */
struct fleet_ctx {
    struct net_peer_conf *conf;
    struct net_trust *trust;
};

static void fleet_ctx_free(struct fleet_ctx *f)
{
    net_peer_conf_free(f->conf);
    net_trust_free(f->trust);
}

static int fleet_ctx_load(struct cli *c, int is_server, int timeout_ms, struct fleet_ctx *f)
{
    char kp[4096], cp[4096], tp[4096], err[320];
    char *ca = NULL, *cert = NULL, *key = NULL;
    int rc = -1;
    memset(f, 0, sizeof *f);
    if (!(ca = read_text(fleet_path(c, "fleet.ca", ".ca.pem", tp, sizeof tp), "the trusted fleet CAs (`kope fleet trust`)")) ||
        !(cert = read_text(fleet_path(c, "fleet.cert", ".crt", cp, sizeof cp), "this device's certificate (`kope fleet enroll`)")) ||
        !(key = read_text(cli_key_path(c, kp, sizeof kp), "this device's key (`kope init`)")))
        goto out;
    (void)secret_add_key_pem(key, strlen(key), "this device's private key"); /* the TLS key: never sent */
    if (net_peer_conf_new(is_server, ca, cert, key, timeout_ms, &f->conf, err, sizeof err) ||
        net_trust_new(ca, &f->trust, err, sizeof err)) {
        fprintf(stderr, "kope: %s\n", err);
        goto out;
    }
    rc = 0;
out:
    if (key) {
        net_wipe(key, strlen(key));
        free(key);
    }
    free(ca);
    free(cert);
    if (rc)
        fleet_ctx_free(f);
    return rc;
}

/* "host:port" or "[v6]:port" into parts; the port a decimal number from
 * min_port to 65535 (a larger one would be cut to 16 bits by the socket
 * layer, or picked at random by the resolver: listening on a port nobody
 * asked for, dialling one that is not the peer's). -1 = not HOST:PORT, -2
 * = the port is out of range. */
static int split_hostport(const char *s, char *host, size_t hcap, char *port, size_t pcap, long min_port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || !colon[1] || strlen(colon + 1) >= pcap)
        return -1;
    const char *h = s;
    size_t hl = (size_t)(colon - s);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']')
        h++, hl -= 2;
    if (hl >= hcap)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, pcap, "%s", colon + 1);
    if (strspn(port, "0123456789") != strlen(port))
        return -1;
    long v = strlen(port) > 5 ? 99999 : strtol(port, NULL, 10);
    return v < min_port || v > 65535 ? -2 : 0;
}

/* --handshake-ms, --session-ms, --min-rate (both commands): 1 if argv[*i]
 * was one (and its value taken), else 0. Values are checked by the caller:
 * a negative one is refused, 0 means the default. */
/* A limit option at argv[*i]: 1 (taken, *i on its value), 0 (not one), or
 * -1 (one, with its value missing or not a whole number: said on stderr). */
static int limit_opt(const char *cmd, int argc, char **argv, int *i, struct net_peer_limits *l)
{
    int *v = strcmp(argv[*i], "--handshake-ms") == 0 ? &l->handshake_ms
             : strcmp(argv[*i], "--session-ms") == 0 ? &l->session_ms
             : strcmp(argv[*i], "--min-rate") == 0   ? &l->min_rate : NULL;
    if (!v)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "kope %s: %s needs a value\n", cmd, argv[*i]);
        return -1;
    }
    const char *opt = argv[*i];
    ++*i;
    return cli_int_arg(cmd, opt, argv[*i], 0, 86400000L, v) ? -1 : 1;
}

/* --NAME N for one of serve's or sync's integer options: 1 (taken), 0 (not
 * this option), -1 (value missing or not a whole number in 1..hi). */
static int int_opt(const char *cmd, const char *name, long hi, int argc, char **argv, int *i, int *out)
{
    if (strcmp(argv[*i], name) != 0)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "kope %s: %s needs a value\n", cmd, name);
        return -1;
    }
    ++*i;
    return cli_int_arg(cmd, name, argv[*i], 1, hi, out) ? -1 : 1;
}

static int limits_bad(const struct net_peer_limits *l)
{
    return l->handshake_ms < 0 || l->session_ms < 0 || l->min_rate < 0;
}

#define LIMITS_HELP                                                                                   \
    "  --handshake-ms N  the TLS handshake must end within N ms of the connection (default 10000)\n" \
    "  --session-ms N    a whole session must end within N ms (default 1800000)\n"                  \
    "  --min-rate N      after 10 s of waiting on the peer, it must move N bytes per second of\n"   \
    "                    waiting (default 1024)\n"

static volatile sig_atomic_t serve_stop; /* written by on_signal only */
static volatile sig_atomic_t serve_hup;

static void on_signal(int sig)
{
    if (sig == SIGHUP)
        serve_hup = 1;
    else
        serve_stop = 1;
}

/* `kope serve` picks up `kope fleet trust` (and a new certificate) without
 * a restart: before each connection the server asks this; it reloads when
 * the trust file changed (size, mtime, inode) or on SIGHUP. */
struct serve_reload {
    struct cli *c;
    int timeout_ms;
    struct net_peer_limits lims;
    char ca_path[4096];
    struct stat seen;
};

static int serve_stat(const char *path, struct stat *st)
{
    memset(st, 0, sizeof *st);
    return stat(path, st);
}

static int serve_reload_cb(void *ctx, struct net_peer_conf **conf, struct net_trust **trust, char *err,
                           size_t err_cap)
{
    struct serve_reload *r = ctx;
    struct stat now;
    struct fleet_ctx f;
    serve_stat(r->ca_path, &now);
    int changed = now.st_size != r->seen.st_size || now.st_mtim.tv_sec != r->seen.st_mtim.tv_sec ||
                  now.st_mtim.tv_nsec != r->seen.st_mtim.tv_nsec || now.st_ino != r->seen.st_ino;
    if (!changed && !serve_hup)
        return 0;
    serve_hup = 0;
    r->seen = now;
    if (fleet_ctx_load(r->c, 1, r->timeout_ms, &f)) {
        snprintf(err, err_cap, "%s: see the message above", r->ca_path);
        return -1;
    }
    net_peer_conf_limits(f.conf, &r->lims);
    *conf = f.conf;
    *trust = f.trust;
    return 1;
}

int cli_serve(struct cli *c, int argc, char **argv)
{
    const char *listen = NULL;
    int timeout_ms = 30000, max_conns = 16, max_unauth = 8, max_per_addr = 4, max_per_cert = 2, max_auth_addr = 0;
    struct net_peer_limits lims = {0, 0, 0, 0};
    char host[256], port[16], err[320];
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope serve [--listen HOST:PORT] [--timeout-ms N] [--max-conns N] [limits]\n"
               "\n"
               "Serves peer sync over mutual TLS until interrupted: any peer holding a\n"
               "certificate from a trusted fleet CA may exchange records (docs/SYNC.md).\n"
               "One log line per session on stderr. Default listen: config sync.listen,\n"
               "else 0.0.0.0:7443 (port 0 picks a free one; the line \"listening on\" says which).\n"
               "  --timeout-ms N    idle timeout per peer (default 30000)\n"
               "  --max-conns N     enrolled (authenticated) sessions at once (default 16)\n"
               "  --max-per-cert N  sessions of one peer certificate at once (default 2)\n"
               "  --max-addr-sessions N  enrolled sessions from one address at once\n"
               "                    (default half of --max-conns)\n"
               "  --max-unauth N    TLS handshakes in progress at once (default 8)\n"
               "  --max-per-addr N  TLS handshakes in progress from one address (default 4)\n"
               LIMITS_HELP);
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        /* every integer option whole and in range (cli_int_arg), not atoi */
        int t;
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen = argv[++i];
        else if ((t = int_opt("serve", "--timeout-ms", 86400000L, argc, argv, &i, &timeout_ms)) ||
                 (t = int_opt("serve", "--max-conns", 100000, argc, argv, &i, &max_conns)) ||
                 (t = int_opt("serve", "--max-per-cert", 100000, argc, argv, &i, &max_per_cert)) ||
                 (t = int_opt("serve", "--max-unauth", 100000, argc, argv, &i, &max_unauth)) ||
                 (t = int_opt("serve", "--max-per-addr", 100000, argc, argv, &i, &max_per_addr)) ||
                 (t = int_opt("serve", "--max-addr-sessions", 100000, argc, argv, &i, &max_auth_addr)) ||
                 (t = limit_opt("serve", argc, argv, &i, &lims))) {
            if (t < 0)
                return CLI_USAGE;
        } else {
            static const char *const valued[] = {"--listen", NULL};
            if (!cli_missing_value("serve", argv[i], valued))
                fprintf(stderr, "kope serve: unexpected argument '%s' (see `kope serve --help`)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    struct kope_config *cfg = cli_config(c);
    if (!cfg)
        return CLI_FAIL;
    if (!listen)
        listen = kope_config_str(cfg, "sync.listen", "0.0.0.0:7443");
    int hp = split_hostport(listen, host, sizeof host, port, sizeof port, 0);
    if (hp == -2) {
        fprintf(stderr, "kope serve: --listen %s: the port must be 0..65535 (0 picks a free one)\n", listen);
        cli_hint("kope serve --listen HOST:PORT, e.g. --listen 0.0.0.0:7443");
        return CLI_USAGE;
    }
    if (hp || timeout_ms <= 0 || max_conns <= 0 ||
        max_unauth <= 0 || max_per_addr <= 0 || max_per_cert <= 0 || max_auth_addr < 0 || limits_bad(&lims)) {
        fprintf(stderr, "kope serve: --listen wants HOST:PORT, timeouts and counts are positive\n");
        return CLI_USAGE;
    }
    /* Sign our head once so what we have made so far can leave (the
     * session threads never sign). */
    struct graph g;
    if (cli_graph_open(c, &g, 1))
        return CLI_FAIL;
    int rc = graph_checkpoint(&g);
    graph_free(&g);
    if (rc) {
        fprintf(stderr, "kope serve: %s\n", kope_strerror(rc));
        return CLI_FAIL;
    }
    struct fleet_ctx f;
    struct serve_reload rl;
    memset(&rl, 0, sizeof rl);
    rl.c = c;
    rl.timeout_ms = timeout_ms;
    rl.lims = lims;
    char cap_buf[4096];
    snprintf(rl.ca_path, sizeof rl.ca_path, "%s", fleet_path(c, "fleet.ca", ".ca.pem", cap_buf, sizeof cap_buf));
    serve_stat(rl.ca_path, &rl.seen); /* before loading: a change while loading is seen next time */
    if (fleet_ctx_load(c, 1, timeout_ms, &f))
        return CLI_FAIL;
    net_peer_conf_limits(f.conf, &lims);
    struct net_peer_listener *l = NULL;
    int bound = 0;
    if (net_peer_listen(host, port, &l, &bound, err, sizeof err)) {
        fprintf(stderr, "kope serve: %s: %s\n", listen, err);
        cli_hint("stop whatever holds that port, or pick another: kope serve --listen HOST:PORT "
                 "(config sync.listen)");
        fleet_ctx_free(&f);
        return CLI_FAIL;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "kope serve: listening on %s:%d\n", host, bound);
    struct sync_server srv;
    memset(&srv, 0, sizeof srv);
    srv.db_path = c->db_path;
    srv.conf = f.conf;
    srv.listener = l;
    srv.opts.trust = f.trust;
    srv.max_conns = max_conns;
    srv.max_unauth = max_unauth;
    srv.max_per_addr = max_per_addr;
    srv.max_per_cert = max_per_cert;
    srv.max_auth_per_addr = max_auth_addr;
    srv.lock_wait_ms = timeout_ms; /* a session waits for the lock as long as for its peer */
    srv.log = stderr;
    srv.stop = &serve_stop;
    srv.reload = serve_reload_cb;
    srv.reload_ctx = &rl;
    sync_serve(&srv);
    fprintf(stderr, "kope serve: stopped\n");
    net_peer_listener_close(l);
    fleet_ctx_free(&f);
    return CLI_OK;
}


/* What to do next after a failed connection or session with peer. */
static void sync_hint(int rc, const char *peer)
{
    switch (rc) {
    case NET_ERR_CONNECT:
        cli_hint("is `kope serve` running on %s, and does a firewall let the port through?", peer);
        break;
    case NET_ERR_DNS:
        cli_hint("check the host name in %s (or use its address)", peer);
        break;
    case NET_ERR_TLS:
    case NET_ERR_PEER_CERT:
    case NET_ERR_CLOSED:
    case NET_ERR_RESET: /* a refusal the reset overtook (net/peer.c: "hung up during") */
        cli_hint("if the peer refused our certificate: it must trust the CA that issued this "
                 "device's (`kope fleet trust CA.crt` there), and this device the peer's "
                 "(docs/SYNC.md)");
        break;
    case NET_ERR_TIMEOUT:
    case NET_ERR_DEADLINE:
        cli_hint("the peer or the link is slow: retry, or raise --timeout-ms");
        break;
    default:
        break;
    }
}

static int sync_one(struct cli *c, struct fleet_ctx *f, const char *peer)
{
    char host[256], port[16], err[320];
    struct net_peer *p = NULL;
    struct sync_stats st;
    struct sync_opts o = {f->trust, 0, NULL, 0, NULL};
    struct graph g;
    if (split_hostport(peer, host, sizeof host, port, sizeof port, 1)) {
        fprintf(stderr, "kope sync: '%s' is not HOST:PORT\n", peer);
        return CLI_USAGE;
    }
    int rc = net_peer_connect(f->conf, host, port, &p, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kope sync: %s: %s\n", peer, err);
        sync_hint(rc, peer);
        return CLI_FAIL;
    }
    if (cli_graph_open(c, &g, 1)) {
        net_peer_close(p);
        return CLI_FAIL;
    }
    rc = sync_session(&g, p, 1, &o, &st);
    printf("%s (%s, %s): sent %lld (peer stored %lld), received %lld new, %lld already here, %lld rejected; %llu bytes out, %llu in\n",
           peer, st.peer, net_peer_tls_version(p), (long long)st.sent, (long long)st.peer_accepted,
           (long long)st.accepted, (long long)st.duplicates, (long long)st.rejected,
           (unsigned long long)st.bytes_sent, (unsigned long long)st.bytes_received);
    /* the peer's ERROR frame says this device is revoked (core/graph/sync.c) */
    int revoked_here = rc == NET_ERR_PEER && strstr(st.error, "peer gave up: ") && strstr(st.error, " is revoked: ");
    if (revoked_here) {
        fprintf(stderr, "kope sync: %s refused this device: %s\n", peer, strstr(st.error, "peer gave up: ") + 14);
        cli_hint("the fleet revoked this device: its records after that seq are refused everywhere. A "
                 "recovered device starts again as a new one: a new store (`kope --db NEW.db init`) and "
                 "a new certificate (`kope fleet enroll NAME` with the fleet CA)");
    } else if (rc) {
        fprintf(stderr, "kope sync: %s: %s [%s]%s\n", peer, st.error[0] ? st.error : kope_strerror(rc),
                kope_strerror(rc), net_err_retryable(rc) ? " (retry: committed runs are kept)" : "");
        if (rc == KOPE_ERR_REVOKED) /* we refused a revoked device */
            cli_hint("%s's device is revoked in this store: take it out of the config's \"peers\"; its records "
                     "up to the revocation's seq still reach us through other peers", peer);
        else
            sync_hint(rc, peer);
    }
    if (!rc && st.peer_rejected) {
        fprintf(stderr, "kope sync: %s refused %lld of our records: %s\n", peer, (long long)st.peer_rejected,
                st.peer_error[0] ? st.peer_error : "(no reason given)");
        if (strstr(st.peer_error, "not enrolled"))
            fprintf(stderr, "kope sync: enroll this device (`kope fleet enroll NAME`, or --cert FILE) so its "
                            "checkpoints carry its certificate\n");
        net_peer_close(p);
        graph_free(&g);
        return CLI_FAIL;
    }
    if (rc && rc != KOPE_ERR_REVOKED)
        net_peer_abort(p);
    else
        net_peer_close(p); /* a refusal: the ERROR frame arrives whole */
    graph_free(&g);
    return rc ? CLI_FAIL : CLI_OK;
}

int cli_sync(struct cli *c, int argc, char **argv)
{
    int timeout_ms = 30000, code = CLI_OK, n = 0;
    struct net_peer_limits lims = {0, 0, 0, 0};
    const char *peers[64];
    if (cli_wants_help(argc, argv)) {
        printf("usage: kope sync [PEER ...] [--timeout-ms N] [limits]\n"
               "\n"
               "Exchanges records with each PEER (HOST:PORT running `kope serve`), or with\n"
               "every peer of the config's \"peers\" list: both sides end with the union of\n"
               "what both had that is signed by an enrolled device of a trusted fleet.\n"
               "A cut link loses nothing: sync again and it resumes (docs/SYNC.md).\n"
               "  --timeout-ms N    idle timeout (default 30000)\n"
               LIMITS_HELP);
        return CLI_OK;
    }
    for (int i = 1; i < argc; i++) {
        int t;
        if ((t = int_opt("sync", "--timeout-ms", 86400000L, argc, argv, &i, &timeout_ms)) ||
            (t = limit_opt("sync", argc, argv, &i, &lims))) {
            if (t < 0)
                return CLI_USAGE;
        } else if (n >= 64) {
            fprintf(stderr, "kope sync: at most 64 peers at once (one more: '%s')\n", argv[i]);
            return CLI_USAGE;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "kope sync: unexpected argument '%s' (see `kope sync --help`)\n", argv[i]);
            return CLI_USAGE;
        } else
            peers[n++] = argv[i];
    }
    struct kope_config *cfg = cli_config(c);
    if (!cfg)
        return CLI_FAIL;
    if (!n) {
        const cJSON *l = kope_config_node(cfg, "peers"), *e;
        cJSON_ArrayForEach(e, l)
        {
            if (cJSON_IsString(e) && n < 64)
                peers[n++] = e->valuestring;
        }
    }
    if (!n) {
        fprintf(stderr, "kope sync: no peers: name one, or list them in the config's \"peers\"\n");
        return CLI_USAGE;
    }
    /* every peer's address first: a typo is a usage error before any
     * connection (and before the fleet files are read) */
    for (int i = 0; i < n; i++) {
        char host[256], port[16];
        int hp = split_hostport(peers[i], host, sizeof host, port, sizeof port, 1);
        if (hp == -2)
            fprintf(stderr, "kope sync: '%s': the port must be 1..65535\n", peers[i]);
        else if (hp)
            fprintf(stderr, "kope sync: '%s' is not HOST:PORT\n", peers[i]);
        if (hp) {
            cli_hint("kope sync HOST:PORT (the address `kope serve` printed as \"listening on\")");
            return CLI_USAGE;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    struct fleet_ctx f;
    if (limits_bad(&lims)) {
        fprintf(stderr, "kope sync: limits are positive (0 = the default)\n");
        return CLI_USAGE;
    }
    if (fleet_ctx_load(c, 0, timeout_ms > 0 ? timeout_ms : 30000, &f))
        return CLI_FAIL;
    net_peer_conf_limits(f.conf, &lims);
    for (int i = 0; i < n; i++) {
        int r = sync_one(c, &f, peers[i]);
        if (r && code == CLI_OK)
            code = r;
    }
    fleet_ctx_free(&f);
    return code;
}
