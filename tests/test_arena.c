/*
 * tests/test_arena.c - the per-iteration arena (core/arena.c): zeroed,
 * aligned memory; a reset hands the same memory out again (what one trial
 * of the loop allocated is gone, and the next reuses it); big requests get
 * their own block; the cap and overflow give NULL, never a short block.
 * ASan (CI's sanitizer build) checks that nothing outlives arena_free.
 */
#include "testutil.h"

#include <stdalign.h>
#include <stdint.h>

#include "core/arena.h"

static void test_alloc_zero_aligned(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 0);
    for (size_t n = 1; n < 200; n += 7) {
        unsigned char *p = arena_alloc(&a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(p[i], 0);
        memset(p, 0xAB, n); /* the next allocation must not overlap it */
    }
    char *s = arena_strndup(&a, "kernel source", 6);
    assert_string_equal(s, "kernel");
    assert_non_null(arena_alloc(&a, 0));
    arena_free(&a);
    assert_null(a.head);
}

static void test_reset_reuses(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 0);
    void *first = arena_alloc(&a, 100);
    memset(first, 0x5A, 100);
    for (int i = 0; i < 100; i++) /* several blocks' worth */
        assert_non_null(arena_alloc(&a, ARENA_BLOCK / 8));
    assert_true(a.used >= 100 + 100 * (ARENA_BLOCK / 8));
    arena_reset(&a);
    assert_int_equal(a.used, 0);
    /* one block kept, and the iteration after starts at its beginning */
    assert_non_null(a.head);
    unsigned char *again = arena_alloc(&a, 100);
    assert_ptr_equal(again, first);
    for (int i = 0; i < 100; i++)
        assert_int_equal(again[i], 0); /* zeroed again */
    arena_free(&a);
}

static void test_big_and_cap(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 3 * ARENA_BLOCK);
    char *big = arena_alloc(&a, 2 * ARENA_BLOCK + 5); /* its own block */
    assert_non_null(big);
    memset(big, 1, 2 * ARENA_BLOCK + 5);
    assert_null(arena_alloc(&a, ARENA_BLOCK)); /* past the cap */
    assert_non_null(arena_alloc(&a, 1000));    /* still under it */
    assert_null(arena_alloc(&a, (size_t)-1));  /* no overflow into a short block */
    assert_null(arena_strndup(&a, "x", (size_t)-1));
    arena_reset(&a);
    assert_non_null(arena_alloc(&a, 2 * ARENA_BLOCK)); /* the cap is per iteration */
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_zero_aligned),
        cmocka_unit_test(test_reset_reuses),
        cmocka_unit_test(test_big_and_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
