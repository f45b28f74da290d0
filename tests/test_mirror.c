/*
 * tests/test_mirror.c - where the dependency and board-VM recipes take their
 * Debian mirror from (cross/apt-private.sh apt_mirror): KOPE_DEBIAN_MIRROR
 * first, else the first plain Debian release entry of the machine's own apt
 * sources, one-line or deb822, skipping -security/-updates suites, disabled
 * stanzas, comments and vendor repositories; with none, exit 1 and a message
 * naming KOPE_DEBIAN_MIRROR. The sources are fixture trees under the test's
 * temp dir (APT_SOURCES_ROOT), never this machine's /etc/apt.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "testutil.h"

static char out[8192];

/* apt_mirror with APT_SOURCES_ROOT=root (and the override when given) */
static int mirror(const char *root, const char *override)
{
    int rc = run_cmd(out, sizeof out, "env -u KOPE_DEBIAN_MIRROR %s%s APT_SOURCES_ROOT=%s bash -c "
                     "'. \"%s/cross/apt-private.sh\" && apt_mirror'",
                     override ? "KOPE_DEBIAN_MIRROR=" : "", override ? override : "", root, test_src_root());
    size_t n = strlen(out);
    while (n && out[n - 1] == '\n')
        out[--n] = '\0';
    return rc;
}

static void tree(const char *root)
{
    char d[4200];
    snprintf(d, sizeof d, "%s/sources.list.d", root);
    assert_int_equal(mkdir(root, 0755), 0);
    assert_int_equal(mkdir(d, 0755), 0);
}

static void test_override_wins(void **state)
{
    (void)state;
    tree("ov");
    test_write_text("ov/sources.list", "deb http://deb.example/debian bookworm main\n");
    assert_int_equal(mirror("ov", "http://corp.example/debian/"), 0);
    assert_string_equal(out, "http://corp.example/debian"); /* no trailing slash */
}

static void test_one_line(void **state)
{
    (void)state;
    tree("one");
    test_write_text("one/sources.list",
                    "# deb http://commented.example/debian bookworm main\n"
                    "deb http://security.example/debian-security bookworm-security main\n"
                    "deb http://vendor.example/repo vendor-suite main\n"
                    "deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://deb.example/debian/ bookworm main\n"
                    "deb http://late.example/debian bookworm main\n");
    assert_int_equal(mirror("one", NULL), 0);
    assert_string_equal(out, "http://deb.example/debian");
}

static void test_deb822(void **state)
{
    (void)state;
    tree("d822");
    test_write_text("d822/sources.list.d/debian.sources",
                    "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n\n"
                    "Types: deb deb-src\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\n\n"
                    "Types: deb\nURIs: http://d822.example/debian/ http://second.example/debian\n"
                    "Suites: bookworm bookworm-updates\nComponents: main\n");
    assert_int_equal(mirror("d822", NULL), 0);
    assert_string_equal(out, "http://d822.example/debian");
    /* a one-line sources.list is read first when there is one */
    test_write_text("d822/sources.list", "deb-src http://src.example/debian trixie main\n");
    assert_int_equal(mirror("d822", NULL), 0);
    assert_string_equal(out, "http://src.example/debian");
}

static void test_none_says_what_to_set(void **state)
{
    (void)state;
    tree("none");
    test_write_text("none/sources.list", "deb http://vendor.example/repo noble main\n");
    assert_int_equal(mirror("none", NULL), 1);
    assert_non_null(strstr(out, "no Debian mirror found"));
    assert_non_null(strstr(out, "KOPE_DEBIAN_MIRROR="));
    tree("empty");
    assert_int_equal(mirror("empty", NULL), 1);
    assert_non_null(strstr(out, "KOPE_DEBIAN_MIRROR="));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_override_wins),
        cmocka_unit_test(test_one_line),
        cmocka_unit_test(test_deb822),
        cmocka_unit_test(test_none_says_what_to_set),
    };
    return cmocka_run_group_tests_name("test_mirror", tests, NULL, NULL);
}
