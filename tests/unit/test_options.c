/*
 * libbftblk's options (lib/options.c): one table drives both
 * bftblk_set_option and bftblk_options_help, so every option in it is
 * accepted with a value of its type, refused with one out of its range,
 * and shown in the help; a key the table lacks is refused by name, with
 * the known ones listed.  No files are read: nothing is loaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "bftblk.h"
#include "options_int.h"

/* A value each type takes; metrics= also wants a HOST:PORT. */
static const char *
good_value(const struct bftblk__option *o, char *buf, size_t len)
{
	switch (o->type) {
	case OPT_NUM:
		snprintf(buf, len, "%llu", (unsigned long long)o->min);
		return buf;
	case OPT_SIZE:
		return "1M";
	case OPT_BOOL:
		return "on";
	case OPT_PATH:
		break;
	}
	return strcmp(o->name, "metrics") == 0 ? "127.0.0.1:9100" : "x";
}

static void
test_every_option_is_accepted(void **state)
{
	char buf[32];

	(void)state;
	assert_true(bftblk__noptions > 0);
	for (size_t i = 0; i < bftblk__noptions; i++) {
		const struct bftblk__option *o = &bftblk__options[i];
		struct bftblk *h = bftblk_create();
		int r;

		assert_non_null(h);
		r = bftblk_set_option(h, o->name, good_value(o, buf,
		    sizeof buf));
		if (r != 0)
			fail_msg("%s: %s", o->name, bftblk_errmsg(h));
		bftblk_close(h);
	}
}

/* A value of the wrong kind or range is refused, naming the option. */
static void
refused(const struct bftblk__option *o, const char *value)
{
	struct bftblk *h = bftblk_create();

	assert_non_null(h);
	if (bftblk_set_option(h, o->name, value) != -EINVAL)
		fail_msg("%s=%s was not refused", o->name, value);
	if (strncmp(bftblk_errmsg(h), o->name, strlen(o->name)) != 0)
		fail_msg("%s=%s: '%s' does not name it", o->name, value,
		    bftblk_errmsg(h));
	bftblk_close(h);
}

static void
test_values_are_checked(void **state)
{
	char buf[32];

	(void)state;
	for (size_t i = 0; i < bftblk__noptions; i++) {
		const struct bftblk__option *o = &bftblk__options[i];

		switch (o->type) {
		case OPT_NUM:
			refused(o, "ten");
			if (o->min > 0) {
				snprintf(buf, sizeof buf, "%llu",
				    (unsigned long long)o->min - 1);
				refused(o, buf);
			}
			if (o->max < UINT64_MAX) {
				snprintf(buf, sizeof buf, "%llu",
				    (unsigned long long)o->max + 1);
				refused(o, buf);
			}
			break;
		case OPT_SIZE:
			refused(o, "lots");
			break;
		case OPT_BOOL:
			refused(o, "maybe");
			break;
		case OPT_PATH:
			break;
		}
	}
}

static void
test_help_lists_every_option(void **state)
{
	const char *help = bftblk_options_help(), *line, *nl;
	char want[64];

	(void)state;
	assert_non_null(help);
	assert_ptr_equal(help, bftblk_options_help());
	for (size_t i = 0; i < bftblk__noptions; i++) {
		const struct bftblk__option *o = &bftblk__options[i];
		const char *at;

		/* "name=ARG" starts a line, the text's first line after. */
		snprintf(want, sizeof want, "%s=%s ", o->name, o->arg);
		at = strstr(help, want);
		while (at != NULL && at != help && at[-1] != '\n')
			at = strstr(at + 1, want);
		if (at == NULL)
			fail_msg("the help lacks %s=", o->name);
		nl = strchr(o->help, '\n');
		at += strspn(at + strlen(want), " ") + strlen(want);
		assert_memory_equal(at, o->help, nl != NULL ?
		    (size_t)(nl - o->help) : strlen(o->help));
	}
	/* Nothing cut off: the last option's text ends the help. */
	nl = strrchr(bftblk__options[bftblk__noptions - 1].help, '\n');
	line = nl != NULL ? nl + 1 :
	    bftblk__options[bftblk__noptions - 1].help;
	assert_true(strlen(help) > strlen(line));
	assert_string_equal(help + strlen(help) - strlen(line), line);
	/* A terminal's width, as nbdkit --help prints it. */
	for (line = help; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		if ((nl != NULL ? (size_t)(nl - line) : strlen(line)) > 80)
			fail_msg("a help line passes 80 columns: %.40s...",
			    line);
		if (nl == NULL)
			break;
	}
}

static void
test_unknown_option_refused(void **state)
{
	struct bftblk *h = bftblk_create();
	const char *msg;

	(void)state;
	assert_non_null(h);
	assert_int_equal(bftblk_set_option(h, "no-such-option", "1"), -EINVAL);
	msg = bftblk_errmsg(h);
	assert_non_null(strstr(msg, "unknown option 'no-such-option'"));
	/* ... and told the ones there are. */
	for (size_t i = 0; i < bftblk__noptions; i++)
		if (strstr(msg, bftblk__options[i].name) == NULL)
			fail_msg("'%s' does not list %s", msg,
			    bftblk__options[i].name);
	/* A prefix of a key is not the key. */
	assert_int_equal(bftblk_set_option(h, "conf", "x"), -EINVAL);
	bftblk_close(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_option_is_accepted),
		cmocka_unit_test(test_values_are_checked),
		cmocka_unit_test(test_help_lists_every_option),
		cmocka_unit_test(test_unknown_option_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
