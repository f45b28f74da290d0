/*
 * tests/test_canon.c - the canonical JSON form record ids are hashed over.
 */
#include "testutil.h"

#include <math.h>
#include <cJSON.h>

#include "core/buf.h"
#include "core/graph/canon.h"
#include "core/err.h"

static char *canon_of(const char *json, int *rc_out)
{
    static char out[4096];
    struct buf b;
    buf_init(&b, 1 << 20);
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    int rc = canon_write(j, &b);
    if (rc_out)
        *rc_out = rc;
    snprintf(out, sizeof out, "%s", b.p ? b.p : "");
    cJSON_Delete(j);
    buf_free(&b);
    return out;
}

static void test_key_order_irrelevant(void **s)
{
    (void)s;
    char a[4096];
    strcpy(a, canon_of("{\"b\":1,\"a\":{\"z\":[1,2],\"y\":null},\"c\":\"x\"}", NULL));
    const char *b = canon_of("{ \"c\" : \"x\", \"a\" : { \"y\" : null, \"z\" : [ 1 , 2 ] }, \"b\" : 1 }", NULL);
    assert_string_equal(a, b);
    assert_string_equal(a, "{\"a\":{\"y\":null,\"z\":[1,2]},\"b\":1,\"c\":\"x\"}");
}

static void test_built_in_any_order_same_bytes(void **s)
{
    (void)s;
    struct buf b1, b2;
    buf_init(&b1, 4096);
    buf_init(&b2, 4096);
    cJSON *x = cJSON_CreateObject(), *y = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "seq", 3);
    cJSON_AddStringToObject(x, "kind", "decision");
    cJSON_AddBoolToObject(x, "ok", 1);
    cJSON_AddBoolToObject(y, "ok", 1);
    cJSON_AddStringToObject(y, "kind", "decision");
    cJSON_AddNumberToObject(y, "seq", 3.0);
    assert_int_equal(canon_write(x, &b1), 0);
    assert_int_equal(canon_write(y, &b2), 0);
    assert_string_equal(b1.p, b2.p);
    assert_string_equal(b1.p, "{\"kind\":\"decision\",\"ok\":true,\"seq\":3}");
    cJSON_Delete(x);
    cJSON_Delete(y);
    buf_free(&b1);
    buf_free(&b2);
}

static void test_numbers(void **s)
{
    (void)s;
    assert_string_equal(canon_of("[0,-0,1.0,1e3,-17,0.1,1.5e-7,123456789012,3.141592653589793,1e300]", NULL),
                        "[0,0,1,1000,-17,0.1,1.5e-07,123456789012,3.141592653589793,1e+300]");
    /* integers at and beyond 2^53 are not integral-formatted */
    assert_string_equal(canon_of("[9007199254740991,9007199254740992]", NULL),
                        "[9007199254740991,9007199254740992]");
}

static void test_nonfinite_rejected(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 4096);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "x", NAN);
    assert_int_equal(canon_write(o, &b), KOPE_ERR_CANON);
    cJSON_Delete(o);
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "x", INFINITY);
    buf_reset(&b);
    assert_int_equal(canon_write(o, &b), KOPE_ERR_CANON);
    cJSON_Delete(o);
    buf_free(&b);
}

static void test_strings(void **s)
{
    (void)s;
    assert_string_equal(canon_of("[\"a\\\"b\\\\c\\n\\t\\u0001\\u001f/\\u00e9\\u20ac\"]", NULL),
                        "[\"a\\\"b\\\\c\\n\\t\\u0001\\u001f/\xc3\xa9\xe2\x82\xac\"]");
}

static void test_bad_utf8_rejected(void **s)
{
    (void)s;
    int rc = 0;
    canon_of("[\"\xc0\xaf\"]", &rc); /* overlong '/' */
    assert_int_equal(rc, KOPE_ERR_CANON);
    canon_of("[\"\xed\xa0\x80\"]", &rc); /* surrogate */
    assert_int_equal(rc, KOPE_ERR_CANON);
    canon_of("[\"\xff\"]", &rc);
    assert_int_equal(rc, KOPE_ERR_CANON);
    assert_true(canon_utf8_valid("\xf0\x9f\x98\x80", 4));
    assert_false(canon_utf8_valid("\xf0\x9f\x98", 3));
}

static void test_duplicate_keys_rejected(void **s)
{
    (void)s;
    int rc = 0;
    canon_of("{\"a\":1,\"a\":2}", &rc);
    assert_int_equal(rc, KOPE_ERR_CANON);
}

static void test_depth_capped(void **s)
{
    (void)s;
    char deep[200];
    int n = 0;
    for (int i = 0; i < 40; i++)
        deep[n++] = '[';
    for (int i = 0; i < 40; i++)
        deep[n++] = ']';
    deep[n] = 0;
    int rc = 0;
    canon_of(deep, &rc);
    assert_int_equal(rc, KOPE_ERR_CANON);
}

static void test_buffer_cap(void **s)
{
    (void)s;
    struct buf b;
    buf_init(&b, 10);
    cJSON *o = cJSON_CreateString("this is longer than ten bytes");
    assert_int_equal(canon_write(o, &b), KOPE_ERR_TOOBIG);
    cJSON_Delete(o);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_order_irrelevant),
        cmocka_unit_test(test_built_in_any_order_same_bytes),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_nonfinite_rejected),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_bad_utf8_rejected),
        cmocka_unit_test(test_duplicate_keys_rejected),
        cmocka_unit_test(test_depth_capped),
        cmocka_unit_test(test_buffer_cap),
    };
    return cmocka_run_group_tests_name("canon", tests, NULL, NULL);
}
