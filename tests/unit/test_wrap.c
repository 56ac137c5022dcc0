/* test_wrap.c: gp_wrap_print keeps lines within the width, never cuts a word, and keeps
 * every word in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/wrap.h"

static char *render(const char *first, int indent, const char *text, int width) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gp_wrap_print(f, first, indent, text, width);
    fclose(f);
    return buf;
}

static void test_width_and_words(void **st) {
    (void)st;
    const char *text =
        "Feed the GPU faster: more DataLoader workers (num_workers), pin_memory=True "
        "with non_blocking copies, prefetch_factor and persistent_workers.";
    char *out = render("   fix: ", 8, text, 40);
    int lines = 0;
    for (char *l = out, *nl; *l; l = nl + 1) {
        nl = strchr(l, '\n');
        assert_non_null(nl);
        assert_true(nl - l <= 40);
        if (lines > 0) assert_memory_equal(l, "        ", 8);
        lines++;
    }
    assert_true(lines >= 4);
    /* the words, in order, once the wrapping is undone */
    char joined[512] = "";
    for (char *tok = strtok(out + strlen("   fix: "), " \n"); tok; tok = strtok(NULL, " \n")) {
        if (joined[0]) strcat(joined, " ");
        strcat(joined, tok);
    }
    assert_string_equal(joined, text);
    free(out);
}

static void test_long_word_whole(void **st) {
    (void)st;
    char *out = render("> ", 2, "a verylongwordthatdoesnotfit b", 10);
    assert_string_equal(out, "> a\n  verylongwordthatdoesnotfit\n  b\n");
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_width_and_words),
                                       cmocka_unit_test(test_long_word_whole)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
