/*
 * The Prometheus text format of common/promtext.c (label escaping,
 * HELP escaping, cumulative histogram buckets) and the address forms
 * common/promhttp.c accepts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "config.h"
#include "promhttp.h"
#include "promtext.h"

static void
test_label(void **state)
{
	char out[64], tiny[12];

	(void)state;
	bft_prom_label(out, sizeof out, "k", "a\"b\\c\nd");
	assert_string_equal(out, "k=\"a\\\"b\\\\c\\nd\"");
	/* Cut short, but still a closed string. */
	bft_prom_label(tiny, sizeof tiny, "k", "0123456789");
	assert_true(strlen(tiny) < sizeof tiny);
	assert_int_equal(tiny[strlen(tiny) - 1], '"');
}

static void
test_family_and_samples(void **state)
{
	struct bft_prom p = { 0 };

	(void)state;
	bft_prom_family(&p, "x_total", "counter", "a\\b\nc");
	bft_prom_u64(&p, "x_total", "k=\"v\"", 42);
	bft_prom_u64(&p, "x_total", NULL, 7);
	assert_false(p.oom);
	assert_string_equal(p.buf, "# HELP x_total a\\\\b\\nc\n"
	    "# TYPE x_total counter\nx_total{k=\"v\"} 42\nx_total 7\n");
	bft_prom_free(&p);
}

static void
test_histogram(void **state)
{
	struct bft_prom_hist h = { 0 };
	struct bft_prom p = { 0 };

	(void)state;
	bft_prom_observe(&h, 10000);		/* 10 us: first bucket */
	bft_prom_observe(&h, 50000);		/* on the first bound */
	bft_prom_observe(&h, 3000000);		/* 3 ms */
	bft_prom_observe(&h, 2000000000);	/* 2 s: +Inf only */
	bft_prom_hist(&p, "d_seconds", "op=\"r\"", &h);
	assert_false(p.oom);
	assert_non_null(strstr(p.buf, "d_seconds_bucket{op=\"r\",le=\"5e-05\"} 2\n"));
	assert_non_null(strstr(p.buf, "d_seconds_bucket{op=\"r\",le=\"0.0025\"} 2\n"));
	assert_non_null(strstr(p.buf, "d_seconds_bucket{op=\"r\",le=\"0.005\"} 3\n"));
	assert_non_null(strstr(p.buf, "d_seconds_bucket{op=\"r\",le=\"1\"} 3\n"));
	assert_non_null(strstr(p.buf, "d_seconds_bucket{op=\"r\",le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(p.buf, "d_seconds_sum{op=\"r\"} 2.00306\n"));
	assert_non_null(strstr(p.buf, "d_seconds_count{op=\"r\"} 4\n"));
	bft_prom_free(&p);
}

static void
test_grows(void **state)
{
	struct bft_prom p = { 0 };

	(void)state;
	for (int i = 0; i < 10000; i++)
		bft_prom_u64(&p, "a_long_metric_name", NULL, (uint64_t)i);
	assert_false(p.oom);
	assert_int_equal(strlen(p.buf), p.len);
	assert_non_null(strstr(p.buf, "a_long_metric_name 9999\n"));
	bft_prom_free(&p);
}

static void
test_parse_addr(void **state)
{
	char host[64];
	uint16_t port;

	(void)state;
	assert_int_equal(bft_parse_hostport("127.0.0.1:9100", host,
	    sizeof host, &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 9100);
	assert_int_equal(bft_parse_hostport("[::1]:80", host,
	    sizeof host, &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(bft_parse_hostport(":9", host, sizeof host,
	    &port), 0);
	assert_string_equal(host, "");
	assert_int_equal(bft_parse_hostport("host", host, sizeof host,
	    &port), -EINVAL);
	assert_int_equal(bft_parse_hostport("::1:80", host, sizeof host,
	    &port), -EINVAL);
	assert_int_equal(bft_parse_hostport("h:70000", host, sizeof host,
	    &port), -EINVAL);
	assert_int_equal(bft_parse_hostport("h:", host, sizeof host,
	    &port), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_family_and_samples),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_grows),
		cmocka_unit_test(test_parse_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
