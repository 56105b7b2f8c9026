/* The subcommands of bftblk(8), one file each. */
#ifndef BFTBLK_ADMIN_H
#define BFTBLK_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

void admin_usage(FILE *fp);
/* dir/name into out; 0, or -ENAMETOOLONG when it does not fit. */
int admin_path_in(char *out, size_t len, const char *dir, const char *name);
/*
 * The files a command that talks to the cluster needs: DIR/bftblk.conf
 * into conf, and keys (or DIR/client.key when NULL) into keypath, each
 * ADMIN_PATH_MAX bytes.  0, or -ENAMETOOLONG when a path does not fit.
 */
#define ADMIN_PATH_MAX	4096
int admin_cluster_paths(const char *dir, const char *keys, char *conf,
    char *keypath);
/*
 * Those two files loaded: DIR/bftblk.conf into cfg and the key file
 * into key (wipe it after).  0; -ENAMETOOLONG when a path does not fit;
 * or another negative errno with why in err.
 */
struct bft_config;
struct bft_client_key;
int admin_load_cluster(const char *dir, const char *keys,
    struct bft_config *cfg, struct bft_client_key *key, char *err,
    size_t errlen);
/*
 * HOST, HOST:PORT, [V6ADDR] or [V6ADDR]:PORT into host (BFT_HOST_LEN
 * bytes, without the brackets) and *port (0 when not given).  An IPv6
 * address needs its brackets only to be followed by a port, but one
 * with a port and no brackets cannot be told apart: a host with more
 * than one colon is taken whole, without a port.  0, or -1.
 */
int admin_parse_hostport(const char *s, char *host, unsigned *port);
/*
 * Rewrites conf (bftblk.conf): every line of it through fn, which
 * writes to out what it keeps of the line, then append and a newline
 * (unless NULL), into tmp, which must load as a configuration before it
 * is renamed over conf.  0, or -1 after logging why (conf unchanged).
 */
typedef void admin_conf_line_fn(const char *line, FILE *out, void *arg);
int admin_conf_edit(const char *conf, const char *tmp, admin_conf_line_fn *fn,
    void *arg, const char *append);
/* --timeout SECS, 1..3600; 0, or -1 after logging why. */
int admin_parse_timeout(const char *s, unsigned *out);
/*
 * The options of the commands that copy a volume out or in (export,
 * import, export-diff, import-diff, snap.c): --dir, --keys, --timeout
 * (timeout_s, default 10) and --help, and --from-snap with from_snap.
 * Returns -1 to go on with the operands from optind, or the exit status
 * to return: 0 after --help, 2 for an option it does not take.
 */
struct admin_copy_opts {
	const char *dir, *keys, *from;
	unsigned timeout_s;
};
int admin_copy_options(int argc, char **argv, bool from_snap,
    struct admin_copy_opts *o);

int admin_keygen(int argc, char **argv);
int admin_client(int argc, char **argv);
int admin_volume_key(int argc, char **argv);
int admin_volume(int argc, char **argv);
int admin_snap(int argc, char **argv);
int admin_export(int argc, char **argv);
int admin_export_diff(int argc, char **argv);
int admin_import(int argc, char **argv);
int admin_import_diff(int argc, char **argv);
/*
 * A handle on the cluster of DIR (keys: the key file, NULL for
 * DIR/client.key) for volume and snapshot commands: short timeouts, no
 * cache, no lease of volume 0.  NULL after saying why.
 */
struct bftblk;
struct bftblk *admin_open_cluster(const char *dir, const char *keys,
    unsigned timeout_s);
/* The same, reading values sealed by encrypt=on writers as they are. */
struct bftblk *admin_open_cluster_as(const char *dir, const char *keys,
    unsigned timeout_s, bool sealed);
/* --verbose: the library's informational lines too. */
extern bool admin_verbose;
int admin_ping(int argc, char **argv);
int admin_scrub(int argc, char **argv);
int admin_cluster(int argc, char **argv);
/*
 * Whether the cluster of DIR may use feature (featureset.h): 1 when
 * every server says it is finalized at a level that has it, 0 when
 * not, -1 after saying why it cannot tell.
 */
int admin_feature_usable(const char *dir, const char *keys,
    unsigned timeout_s, unsigned feature);
int admin_server(int argc, char **argv);
/* bftblk server rotate (server_rotate.c), from admin_server. */
int admin_server_rotate(int argc, char **argv);
int admin_status(int argc, char **argv);
int admin_keys(int argc, char **argv);

#endif
