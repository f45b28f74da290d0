/*
 * core/cli_report.c - `kope report --html FILE`.
 */
#include <stdio.h>

#include "core/cli.h"

int cli_report(struct cli *c, int argc, char **argv)
{
    (void)c;
    (void)argc;
    (void)argv;
    fprintf(stderr, "kope report: not yet\n");
    return CLI_FAIL;
}
