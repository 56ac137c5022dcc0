/* exit_codes.h: exit codes scripts can trust, shared by every command. */
#ifndef GP_CLI_EXIT_CODES_H
#define GP_CLI_EXIT_CODES_H
enum {
    GP_EXIT_OK = 0,
    GP_EXIT_FAIL = 1,    /* the command ran and failed (I/O, store, source) */
    GP_EXIT_USAGE = 2,   /* bad options or arguments */
    GP_EXIT_INPUT = 3,   /* bad input data: file missing, malformed, wrong format */
    GP_EXIT_FINDINGS = 4 /* reserved: --fail-on thresholds met (diagnose) */
};
#endif
