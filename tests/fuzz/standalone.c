/*
 * A main() for the fuzz harnesses without libFuzzer, so the normal gcc
 * build (and its ASan variant) runs them as unit tests: every file in
 * the directories or files given, or, with no arguments, in the
 * harness's regression and seed directories (FUZZ_DIRS, compiled in),
 * goes through LLVMFuzzerTestOneInput once.  A failed check aborts.
 * With no arguments, test_fuzz_NAME runs FUZZ_SRCDIR (compiled in)
 * tests/fuzz/regressions/fuzz_NAME and tests/fuzz/corpus/fuzz_NAME.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static unsigned ran;

static int
run_file(const char *path)
{
	struct stat sb;
	uint8_t *buf;
	FILE *f;
	int rc = -1;

	if ((f = fopen(path, "rb")) == NULL || fstat(fileno(f), &sb) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		goto out;
	}
	/* Exactly the file's size, as libFuzzer gives it. */
	buf = malloc(sb.st_size ? (size_t)sb.st_size : 1);
	if (buf == NULL || fread(buf, 1, (size_t)sb.st_size, f) !=
	    (size_t)sb.st_size) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		goto out;
	}
	LLVMFuzzerTestOneInput(buf, (size_t)sb.st_size);
	free(buf);
	ran++;
	rc = 0;
out:
	if (f)
		fclose(f);
	return rc;
}

/* A missing directory is fine: a harness may have no regressions yet. */
static int
run_path(const char *path)
{
	char sub[4096];
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int rc = 0;

	if (stat(path, &sb) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(sb.st_mode))
		return run_file(path);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
		if (run_file(sub) < 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int
main(int argc, char **argv)
{
	static const char *const kinds[] = { "regressions", "corpus" };
	const char *name = strrchr(argv[0], '/');
	char path[4096];
	int rc = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (run_path(argv[i]) < 0)
				rc = 1;
	} else {
		/* test_fuzz_frame runs the files of fuzz_frame. */
		name = name ? name + 1 : argv[0];
		if (strncmp(name, "test_", 5) == 0)
			name += 5;
		for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
			snprintf(path, sizeof path, "%s/tests/fuzz/%s/%s",
			    FUZZ_SRCDIR, kinds[i], name);
			if (run_path(path) < 0)
				rc = 1;
		}
	}
	printf("%u inputs ran, %s\n", ran, rc ? "some unreadable" : "all ok");
	/* Without arguments, running nothing means the seeds went missing. */
	return rc || (argc == 1 && ran == 0);
}
