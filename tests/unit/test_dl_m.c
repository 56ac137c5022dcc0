/* test_dl_m.c: the libm functions goodput forwards to libm.so.6 opened on first call
 * (src/util/dl_m.c) return libm's own results, bit for bit and with its errno, each from
 * the function of its name (a slot filled from the wrong symbol would differ here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <string.h>

static void *libm;

/* bits, so that NaN equals NaN and -0 differs from +0 */
static void assert_same(double a, double b) {
    uint64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    assert_int_equal(x, y);
}

static double (*ref1(const char *name))(double) {
    void *p = dlsym(libm, name);
    assert_non_null(p);
    double (*f)(double);
    memcpy(&f, &p, sizeof p);
    return f;
}

static double (*ref2(const char *name))(double, double) {
    void *p = dlsym(libm, name);
    assert_non_null(p);
    double (*f)(double, double);
    memcpy(&f, &p, sizeof p);
    return f;
}

static const double xs[] = {0.0,   -0.0,     0.3,       -0.3, 0.5,     -0.5,    0.999,
                            1.0,   -1.0,     1.5,       -2.5, 2.5,     3.14159, -7.75,
                            10.0,  1e-300,   1e10,      -1e6, 123.456, 700.0,   -745.0,
                            1e308, INFINITY, -INFINITY, NAN};

/* Through volatile pointers: the compiler must call goodput's function (the test binary
 * links src/util/dl_m.c) and may not apply what it knows of the builtin of that name. */
#define CHECK1(name)                                                                               \
    do {                                                                                           \
        double (*r)(double) = ref1(#name);                                                         \
        double (*volatile mine)(double) = name;                                                    \
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {                                    \
            double x = xs[i];                                                                      \
            errno = 0;                                                                             \
            double got = mine(x);                                                                  \
            int got_errno = errno;                                                                 \
            errno = 0;                                                                             \
            double want = r(x);                                                                    \
            assert_same(got, want);                                                                \
            assert_int_equal(got_errno, errno);                                                    \
        }                                                                                          \
    } while (0)

#define CHECK2(name)                                                                               \
    do {                                                                                           \
        double (*r)(double, double) = ref2(#name);                                                 \
        double (*volatile mine)(double, double) = name;                                            \
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)                                      \
            for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k += 3) {                             \
                double x = xs[i], y = xs[k];                                                       \
                errno = 0;                                                                         \
                double got = mine(x, y);                                                           \
                int got_errno = errno;                                                             \
                errno = 0;                                                                         \
                double want = r(x, y);                                                             \
                assert_same(got, want);                                                            \
                assert_int_equal(got_errno, errno);                                                \
            }                                                                                      \
    } while (0)

static void test_forwarded_functions(void **st) {
    (void)st;
    libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(libm);
    CHECK1(acos);
    CHECK1(acosh);
    CHECK1(asin);
    CHECK1(asinh);
    CHECK1(atan);
    CHECK1(atanh);
    CHECK1(ceil);
    CHECK1(cos);
    CHECK1(cosh);
    CHECK1(exp);
    CHECK1(floor);
    CHECK1(log);
    CHECK1(log10);
    CHECK1(log2);
    CHECK1(rint);
    CHECK1(sin);
    CHECK1(sinh);
    CHECK1(tan);
    CHECK1(tanh);
    CHECK1(trunc);
    CHECK2(atan2);
    CHECK2(pow);
    /* spot values, so that a forwarder returning its argument cannot pass */
    double (*volatile e)(double) = exp, (*volatile fl)(double) = floor;
    assert_true(e(1.0) > 2.718 && e(1.0) < 2.719);
    assert_true(fl(-0.5) == -1.0);
    dlclose(libm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forwarded_functions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
