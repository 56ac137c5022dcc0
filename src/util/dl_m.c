/* dl_m.c: the libm functions whose glibc versions pick their code by CPU at load time
 * (IFUNC: exp, log, pow, the trigonometric and hyperbolic ones; floor, ceil, rint and trunc,
 * which gcc mostly inlines and clang calls), forwarded to
 * libm.so.6 opened with dlopen on first call, so that the goodput binary does not map
 * libm at start (~0.35 MiB of `report`'s and `--version`'s RSS: relocating libm runs its
 * IFUNC resolvers, spread over its text; docs/benchmarks.md, "Start-up and libraries").
 * The text report calls none of these; the simulator, HTML charts, clusters and SQLite's
 * SQL math functions do, and then get libm's own code, so results are libm's, bit for bit.
 * The functions without IFUNC that `report` does call (round, fmax, fmin, llround, ...)
 * come from glibc's libm.a (mk/startup.mk links it statically); glibc's libm.a cannot
 * provide these, as its IFUNC resolvers read a loader structure a dynamic binary lacks.
 * A libm function the code starts to use that has an IFUNC must be added here: the link
 * then fails with an undefined `_dl_x86_cpu_features` until it is.
 *
 * libm.so.6 is part of libc6, so loading it cannot fail on a glibc system short of a
 * broken installation; if it does, the first call says why on stderr and aborts (there is
 * no failure value to return from exp). Loading is thread-safe (pthread_once). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "util/dl.h"

typedef double (*gp_m1)(double);
typedef double (*gp_m2)(double, double);

static struct {
    gp_m1 acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, exp, floor, log, log10, log2,
        rint, sin, sinh, tan, tanh, trunc;
    gp_m2 atan2, pow;
} fn;

static const gp_dl_sym syms[] = {
    {"acos", &fn.acos},   {"acosh", &fn.acosh}, {"asin", &fn.asin}, {"asinh", &fn.asinh},
    {"atan", &fn.atan},   {"ceil", &fn.ceil},   {"rint", &fn.rint}, {"atanh", &fn.atanh},
    {"cos", &fn.cos},     {"cosh", &fn.cosh},   {"exp", &fn.exp},   {"floor", &fn.floor},
    {"log", &fn.log},     {"log10", &fn.log10}, {"log2", &fn.log2}, {"sin", &fn.sin},
    {"sinh", &fn.sinh},   {"tan", &fn.tan},     {"tanh", &fn.tanh}, {"trunc", &fn.trunc},
    {"atan2", &fn.atan2}, {"pow", &fn.pow},
};

static gp_dl_lib lib = {"libm", "libc6", "libm.so.6", syms, sizeof syms / sizeof syms[0], 0, NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    gp_dl_open(&lib);
    if (!lib.ok) abort();
}

#define GP_M1(name)                                                                                \
    double name(double x) {                                                                        \
        pthread_once(&once, load);                                                                 \
        return fn.name(x);                                                                         \
    }
#define GP_M2(name)                                                                                \
    double name(double x, double y) {                                                              \
        pthread_once(&once, load);                                                                 \
        return fn.name(x, y);                                                                      \
    }

GP_M1(acos)
GP_M1(acosh)
GP_M1(asin)
GP_M1(asinh)
GP_M1(atan)
GP_M1(atanh)
GP_M1(ceil)
GP_M1(cos)
GP_M1(cosh)
GP_M1(exp)
GP_M1(floor)
GP_M1(log)
GP_M1(log10)
GP_M1(log2)
GP_M1(rint)
GP_M1(sin)
GP_M1(sinh)
GP_M1(tan)
GP_M1(tanh)
GP_M1(trunc)
GP_M2(atan2)
GP_M2(pow)
