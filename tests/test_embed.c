/*
 * tests/test_embed.c - the files kope carries (platform/embed.c): stored
 * compressed by cross/embedz.c, unpacked on first use.
 *
 * Every embedded file must come back byte-identical to the source tree's
 * copy (a wrong decoder or encoder fails here), and the decoder must
 * refuse a stream that reads past its end, refers before the start of the
 * output, or does not fill the output exactly (each check removed from
 * embed_unpack fails test_unpack_refuses_malformed; checked by hand).
 */
#include "testutil.h"

#include "platform/embed.h"

static void test_every_file_round_trips(void **state)
{
    (void)state;
    size_t n = 0;
    for (const struct embed_file *f; (f = embed_at(n)); n++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", test_src_root(), f->name);
        FILE *fp = fopen(path, "rb");
        if (!fp)
            fail_msg("cannot open %s", path);
        char *want = malloc(f->len + 2);
        assert_non_null(want);
        size_t got = fread(want, 1, f->len + 1, fp);
        fclose(fp);
        if (got != f->len || memcmp(want, f->data, f->len) != 0)
            fail_msg("%s: embedded copy differs (%zu bytes vs %zu in the tree)", f->name, f->len, got);
        assert_int_equal(f->data[f->len], '\0');
        free(want);
        assert_ptr_equal(embed_find(f->name), f);
    }
    assert_true(n > 20); /* templates, harness, knowledge, suites */
    assert_non_null(embed_find("platform/k3/embed/harness.c"));
    assert_null(embed_find("no/such/file"));
}

static void test_unpack_overlapping_copy(void **state)
{
    (void)state;
    /* "ab", then 6 bytes from 2 back: "abababab" */
    const unsigned char in[] = {0x01, 'a', 'b', 0x80 | 2, 2, 0};
    unsigned char out[8];
    assert_int_equal(embed_unpack(in, sizeof in, out, sizeof out), 0);
    assert_memory_equal(out, "abababab", 8);
}

/* Each stream is malformed in one way only and would otherwise fill out_len
 * exactly, so each check of embed_unpack is the only thing refusing it. */
static void test_unpack_refuses_malformed(void **state)
{
    (void)state;
    unsigned char out[256];
    const unsigned char lit_past_end[] = {0x05, 'a', 'b'}; /* 6 literals, 2 there */
    assert_int_equal(embed_unpack(lit_past_end, sizeof lit_past_end, out, 6), -1);
    const unsigned char before_start[] = {0x00, 'a', 0x80, 2, 0}; /* d=2 with 1 byte out */
    assert_int_equal(embed_unpack(before_start, sizeof before_start, out, 5), -1);
    const unsigned char d_zero[] = {0x00, 'a', 0x80, 0, 0};
    assert_int_equal(embed_unpack(d_zero, sizeof d_zero, out, 5), -1);
    const unsigned char cut_distance[] = {0x00, 'a', 0x80, 1}; /* one distance byte of two */
    assert_int_equal(embed_unpack(cut_distance, sizeof cut_distance, out, 5), -1);
    /* past out_len nothing may be written (the canary bytes stay) */
    unsigned char canary[sizeof out];
    memset(canary, 0xa5, sizeof canary);
    memset(out, 0xa5, sizeof out);
    const unsigned char overflow[] = {0x00, 'a', 0xff, 1, 0}; /* 1 + 131 > 16 */
    assert_int_equal(embed_unpack(overflow, sizeof overflow, out, 16), -1);
    assert_memory_equal(out + 16, canary, sizeof out - 16);
    const unsigned char lit_overflow[] = {0x02, 'a', 'b', 'c'};
    assert_int_equal(embed_unpack(lit_overflow, sizeof lit_overflow, out, 2), -1);
    assert_memory_equal(out + 16, canary, sizeof out - 16);
    memset(out, 0xa5, 3);
    assert_int_equal(embed_unpack(lit_overflow, sizeof lit_overflow, out, 2), -1);
    assert_int_equal(out[2], 0xa5);
    const unsigned char short_out[] = {0x00, 'a'};
    assert_int_equal(embed_unpack(short_out, sizeof short_out, out, 16), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_file_round_trips),
        cmocka_unit_test(test_unpack_overlapping_copy),
        cmocka_unit_test(test_unpack_refuses_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
