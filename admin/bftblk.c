/*
 * bftblk(8): the administration tool.  `bftblk keygen` creates a cluster
 * directory (keygen.c); `bftblk client` adds and revokes the clients
 * servers let in (client_keys.c); `bftblk volume-key` creates the key of an
 * encrypted volume (volume_key.c); `bftblk volume` creates, lists,
 * resizes and deletes the cluster's named volumes (volume.c); `bftblk
 * snap` takes, lists and deletes their snapshots and `bftblk export`
 * copies one out (snap.c); `bftblk ping` checks that this host
 * reaches the cluster through libbftblk (ping.c); `bftblk status` asks
 * every server how it is and judges the cluster's health (status.c);
 * `bftblk server` replaces a server (server_replace.c) or rotates its
 * channel key (server_rotate.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin.h"
#include "bftblk.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"

void
admin_usage(FILE *fp)
{
	fprintf(fp,
	    "usage: bftblk keygen --dir DIR [--t T] [--size SIZE] "
	    "[--host HOST | --hosts LIST]\n"
	    "                     [--base-port PORT] [--channel aead|plain]\n"
	    "  Creates DIR/bftblk.conf, DIR/server-I.key (I = 0..3t) and "
	    "DIR/client.key.\n"
	    "  --host puts every server on HOST, ports PORT..PORT+3t; --hosts "
	    "gives each\n"
	    "  server its own: n = 3t+1 entries HOST[:PORT] or [IPV6][:PORT], "
	    "comma-\n"
	    "  separated, server 0 first (PORT defaults to the base port).\n"
	    "  Defaults: t=1, size=1G, host=127.0.0.1, base-port=7700, "
	    "channel=aead.\n"
	    "usage: bftblk client add --dir DIR --name NAME [--role rw|ro]\n"
	    "       bftblk client revoke --dir DIR --name NAME\n"
	    "       bftblk client rotate --dir DIR --name NAME [--finish]\n"
	    "       bftblk client list --dir DIR\n"
	    "  Adds a client (writing DIR/NAME.key) to, or removes it from, "
	    "DIR/bftblk.conf.\n"
	    "  Copy bftblk.conf to every server and send them SIGHUP: they "
	    "reload the\n"
	    "  client list and drop the connections of revoked clients.\n"
	    "usage: bftblk volume-key --out FILE [--aead AEAD]\n"
	    "  Creates the key of an encrypted volume (plugin encrypt=on); "
	    "AEAD is\n"
	    "  aes256gcm (default where the CPU has AES-NI) or "
	    "xchacha20poly1305.\n"
	    "usage: bftblk volume create --dir DIR --name NAME --size SIZE "
	    "[--encrypt]\n"
	    "       bftblk volume list --dir DIR [--json]\n"
	    "       bftblk volume info --dir DIR --name NAME\n"
	    "       bftblk volume resize --dir DIR --name NAME --size SIZE "
	    "[--force]\n"
	    "       bftblk volume delete --dir DIR --name NAME [--force]\n"
	    "       bftblk volume clone --dir DIR --from VOLUME@SNAP --name "
	    "NAME\n"
	    "       bftblk volume flatten --dir DIR --name NAME\n"
	    "  The cluster's named volumes, each an NBD export of the plugin "
	    "by its name.\n"
	    "  Thin: a volume takes server space only for blocks written; "
	    "delete frees it.\n"
	    "  --encrypt creates DIR/volumes/NAME.key; shrinking needs "
	    "--force; a volume\n"
	    "  a live writer holds is not deleted without --force.  A clone "
	    "reads as its\n"
	    "  parent snapshot until written (the cluster finalized); "
	    "flatten copies the\n"
	    "  rest so the snapshot may go.  Also "
	    "--keys FILE\n"
	    "  (default DIR/client.key) and --timeout SECS (default 3).\n"
	    "usage: bftblk snap create --dir DIR --volume VOLUME --name NAME "
	    "[--verbose]\n"
	    "       bftblk snap list --dir DIR [--volume VOLUME] [--json]\n"
	    "       bftblk snap info --dir DIR --volume VOLUME --name NAME\n"
	    "       bftblk snap delete --dir DIR --volume VOLUME --name NAME\n"
	    "       bftblk snap rollback --dir DIR --volume VOLUME --name "
	    "NAME\n"
	    "  Snapshots: a volume as it was when taken, copying nothing, "
	    "also while its\n"
	    "  writer runs; read-only, exported as VOLUME@NAME (volume 0's: "
	    "@NAME, with\n"
	    "  --volume \"\").  A volume with snapshots is not deleted.  "
	    "rollback gives the\n"
	    "  volume what it held at the snapshot again (no writer may "
	    "run).\n"
	    "usage: bftblk export --dir DIR NAME FILE|-\n"
	    "  Copies volume or snapshot NAME (VOLUME, VOLUME@SNAP, @SNAP) "
	    "whole into a raw\n"
	    "  image FILE, or to stdout, with progress on stderr.\n"
	    "usage: bftblk import --dir DIR FILE|- VOLUME\n"
	    "  Writes a raw image whole into VOLUME (zeros take no space).\n"
	    "usage: bftblk export-diff --dir DIR --from-snap S1 "
	    "VOLUME[@S2] FILE|-\n"
	    "       bftblk import-diff --dir DIR FILE|- VOLUME\n"
	    "  What changed from snapshot S1 to S2 (or to the volume now), "
	    "as a stream;\n"
	    "  import-diff applies one to a copy holding S1, then takes S2 "
	    "there.\n"
	    "usage: bftblk ping --dir DIR [--keys FILE] [--timeout SECS]\n"
	    "  Connects as the client of FILE (default DIR/client.key), "
	    "lists the servers\n"
	    "  it reaches, and reads block 0; exits 0 when I/O works.\n"
	    "usage: bftblk server replace --dir DIR --index I [--host "
	    "HOST[:PORT] | [IPV6][:PORT]]\n"
	    "  Gives server I a new channel key (DIR/server-I.key; the old "
	    "file is kept\n"
	    "  as server-I.key.replaced) and address in DIR/bftblk.conf.\n"
	    "usage: bftblk server rotate --dir DIR --index I [--keys FILE] "
	    "[--timeout SECS]\n"
	    "                            [--finish]\n"
	    "  Gives server I a new channel key with nobody locked out: "
	    "writes\n"
	    "  DIR/server-I.key.new and lists its key as server.I.pk.next; "
	    "once server I\n"
	    "  runs it, --finish makes it server.I.pk.  Needs the cluster "
	    "finalized.\n"
	    "usage: bftblk keys rotate --dir DIR [--keys FILE] [--timeout "
	    "SECS]\n"
	    "  Adds the next epoch of MAC keys to the writers' and servers' "
	    "key files in\n"
	    "  DIR.  Install the writers' files, then the servers' (SIGHUP); "
	    "writers sign\n"
	    "  under it once every server accepts it.  Needs the cluster "
	    "finalized.\n"
	    "usage: bftblk keys reauth --dir DIR [--keys FILE] [--timeout "
	    "SECS] [--restart]\n"
	    "  Reads every block the servers hold and gives its version the "
	    "newest epoch's\n"
	    "  MACs at every server; resumes where it stopped unless "
	    "--restart.\n"
	    "usage: bftblk keys retire --dir DIR [--keys FILE] [--timeout "
	    "SECS] [--epoch E]\n"
	    "  Once every server counts no version under the old epoch, "
	    "writes the key\n"
	    "  files with the newest epoch alone: install writers' first, "
	    "then servers'.\n"
	    "usage: bftblk scrub --dir DIR [--keys FILE]\n"
	    "  Asks every server to check its own fragments now (a writer's "
	    "key file).\n"
	    "usage: bftblk cluster finalize --dir DIR [--keys FILE]\n"
	    "  Once every server runs this release: ends the way back to "
	    "the previous one\n"
	    "  and lets clients use what it cannot read (a writer's key "
	    "file).\n"
	    "usage: bftblk status --dir DIR [--keys FILE] [--json] "
	    "[--timeout SECS]\n"
	    "                     [--client-stats FILE]...\n"
	    "  Asks every server for its status and prints the cluster's "
	    "health: OK,\n"
	    "  DEGRADED, AT RISK or UNAVAILABLE (exit 0, 1, 1, 2; 3 when it "
	    "cannot tell).\n"
	    "usage: bftblk [COMMAND...] --help | --version\n");
}

int
main(int argc, char **argv)
{
	bft_log_init("bftblk", 0);
	if (argc < 2) {
		admin_usage(stderr);
		return 2;
	}
	/* Anywhere on the line, as every tool answers them. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			admin_usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("bftblk %s (libbftblk %s)\n",
			    BFTBLK_VERSION_STRING, bftblk_version(NULL, NULL,
			    NULL));
			return 0;
		}
	}
	if (bft_crypto_init() != 0) {
		bft_log("cannot initialise crypto");
		return 1;
	}
	if (strcmp(argv[1], "keygen") == 0)
		return admin_keygen(argc - 1, argv + 1);
	if (strcmp(argv[1], "client") == 0)
		return admin_client(argc - 1, argv + 1);
	if (strcmp(argv[1], "volume-key") == 0)
		return admin_volume_key(argc - 1, argv + 1);
	if (strcmp(argv[1], "volume") == 0)
		return admin_volume(argc - 1, argv + 1);
	if (strcmp(argv[1], "snap") == 0)
		return admin_snap(argc - 1, argv + 1);
	if (strcmp(argv[1], "export") == 0)
		return admin_export(argc - 1, argv + 1);
	if (strcmp(argv[1], "import") == 0)
		return admin_import(argc - 1, argv + 1);
	if (strcmp(argv[1], "export-diff") == 0)
		return admin_export_diff(argc - 1, argv + 1);
	if (strcmp(argv[1], "import-diff") == 0)
		return admin_import_diff(argc - 1, argv + 1);
	if (strcmp(argv[1], "ping") == 0)
		return admin_ping(argc - 1, argv + 1);
	if (strcmp(argv[1], "scrub") == 0)
		return admin_scrub(argc - 1, argv + 1);
	if (strcmp(argv[1], "cluster") == 0)
		return admin_cluster(argc - 1, argv + 1);
	if (strcmp(argv[1], "server") == 0)
		return admin_server(argc - 1, argv + 1);
	if (strcmp(argv[1], "status") == 0)
		return admin_status(argc - 1, argv + 1);
	if (strcmp(argv[1], "keys") == 0)
		return admin_keys(argc - 1, argv + 1);
	if (strcmp(argv[1], "help") == 0) {
		admin_usage(stdout);
		return 0;
	}
	bft_log("unknown command '%s'", argv[1]);
	admin_usage(stderr);
	return 2;
}
