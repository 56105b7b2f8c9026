/*
 * The table of a handle's options (options.c), which both
 * bftblk_set_option and bftblk_options_help read; test_options walks it.
 */
#ifndef BFTBLK_OPTIONS_INT_H
#define BFTBLK_OPTIONS_INT_H

#include <stddef.h>
#include <stdint.h>

struct bftblk;

/* How a value is checked before the option's setter sees it. */
enum bftblk__option_type {
	OPT_PATH,		/* any string: a file, a name */
	OPT_NUM,		/* a decimal or 0x integer in min..max */
	OPT_SIZE,		/* "64K", "1G", ... (bft_parse_size) */
	OPT_BOOL,		/* on/off, 1/0, true/false, yes/no */
};

struct bftblk__option {
	const char *name;
	const char *arg;		/* the help's placeholder: FILE, SECS */
	enum bftblk__option_type type;
	uint64_t min, max;		/* OPT_NUM */
	const char *unit;		/* OPT_NUM: told with a refused range */
	const char *help;		/* '\n' starts an indented line */
	/* Takes the value (v its number unless OPT_PATH); 0 or failed on h. */
	int (*set)(struct bftblk *h, const char *value, uint64_t v);
};

extern const struct bftblk__option bftblk__options[];
extern const size_t bftblk__noptions;

#endif
