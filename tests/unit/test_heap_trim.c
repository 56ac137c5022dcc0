/* test_heap_trim.c: util/heap_trim.h. diagnose's read pool trims the heap from several
 * threads at once, each thread's first job. Under AddressSanitizer glibc's malloc_trim did
 * that on a glibc arena nothing had initialised, and the threads raced initialising it: CI
 * crashed in mtrim (analyze_prometheus.sh under ASan), and 8 threads trimming at once in a
 * fresh ASan process crashed about one time in three. So: fresh processes (forked before
 * anything trims), 8 threads each released together to trim; every process must exit 0.
 * In the plain build this checks the same calls are safe with glibc's own allocator. */
#include "testutil.h"

#include <pthread.h>
#include <sys/wait.h>

#include "util/heap_trim.h"

#define THREADS 8
#define PROCESSES 40

static pthread_barrier_t start;

static void *trim_at_once(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    gp_heap_trim();
    return NULL;
}

static int trim_from_threads(void) {
    pthread_t t[THREADS];
    if (pthread_barrier_init(&start, NULL, THREADS) != 0) return 1;
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, trim_at_once, NULL) != 0) return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return 0;
}

static void test_threads_trim_at_once(void **state) {
    (void)state;
    int failed = 0;
    for (int p = 0; p < PROCESSES; p++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) _exit(trim_from_threads());
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
    }
    if (failed)
        fail_msg("%d of %d processes failed trimming from %d threads at once", failed, PROCESSES,
                 THREADS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_trim_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
