/* sim_node.c: the simulated node's face to the agent (gp_sim_expose in sim.h): a fake
 * /proc and a job-mapping directory, written the way the kernel and a Slurm prolog
 * present them, so the agent attributes a simulated node through the same code as a
 * real one. Nothing here carries an allocation or a label the hardware would not show.
 *
 * Writes are plain files replaced by rename (readers never see half a file). Only
 * changes are written: a process directory when an incarnation starts or ends, a mapping
 * file when its job list changes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/sim_internal.h"

typedef struct sim_node {
    char root[512], proc[600], jobmap[600];
    int own_root;
    int64_t boot_s;
    int64_t *shown_pid_base; /* per job: the incarnation whose dirs exist; -1 none */
    uint64_t *map_hash;      /* per GPU: hash of the job list last written */
} sim_node;

static int write_file(const char *dir, const char *name, const char *data, size_t len,
                      int64_t mtime_ns) {
    char tmp[800], path[800];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    int ok = write(fd, data, len) == (ssize_t)len;
    if (mtime_ns > 0) {
        struct timespec ts[2] = {{mtime_ns / 1000000000, mtime_ns % 1000000000},
                                 {mtime_ns / 1000000000, mtime_ns % 1000000000}};
        futimens(fd, ts);
    }
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static long clk_tck(void) {
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? hz : 100;
}

static void show_process(gp_sim *s, sim_node *nd, const sim_job *j, int rank) {
    const gp_scenario_job *c = j->cfg;
    int64_t pid = j->pid_base + rank;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%lld", nd->proc, (long long)pid);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
    int64_t start_abs = s->origin + j->live_since;
    long hz = clk_tck();
    long long ticks = (long long)((start_abs - nd->boot_s * 1000000000LL) / (1000000000LL / hz));
    char buf[1024];
    /* Fields 3..21 as a Linux 6.x process shows them; 22 is its start in clock ticks. */
    int n = snprintf(buf, sizeof buf,
                     "%lld (python3) S 1 %lld %lld 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %lld "
                     "0 0\n",
                     (long long)pid, (long long)pid, (long long)pid, ticks);
    write_file(dir, "stat", buf, (size_t)n, 0);
    n = snprintf(buf, sizeof buf,
                 "Name:\tpython3\nState:\tS (sleeping)\nPid:\t%lld\nUid:\t%d\t%d\t%d\t%d\n",
                 (long long)pid, 1000 + j->idx, 1000 + j->idx, 1000 + j->idx, 1000 + j->idx);
    write_file(dir, "status", buf, (size_t)n, 0);
    const char *what = c->kind == GP_SJ_INFERENCE ? "serve.py" : "train.py";
    n = snprintf(buf, sizeof buf, "python3%c%s%c--rank%c%d", 0, what, 0, 0, rank) + 1;
    write_file(dir, "cmdline", buf, (size_t)n, 0);
    /* An instrumented workload names itself (GOODPUT_JOB), as the clients document. */
    n = snprintf(buf, sizeof buf, "HOME=/home/u%d%cGOODPUT_JOB=%s%cCUDA_VISIBLE_DEVICES=%d%c",
                 j->idx, 0, c->id, 0, c->gpus[rank], 0);
    write_file(dir, "environ", buf, (size_t)n, 0);
    if (c->scheduler_none)
        n = snprintf(buf, sizeof buf, "0::/user.slice/user-%d.slice/session-%d.scope\n",
                     1000 + j->idx, 1 + j->idx);
    else /* a Slurm step's task (cgroup v2 layout); the id is the scenario's */
        n = snprintf(buf, sizeof buf,
                     "0::/system.slice/slurmstepd.scope/job_%s/step_0/user/task_%d\n", c->id, rank);
    write_file(dir, "cgroup", buf, (size_t)n, 0);
}

static void hide_process(sim_node *nd, int64_t pid) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%lld", nd->proc, (long long)pid);
    remove_tree(dir);
}

/* Rewrites GPU g's mapping file when the set of scheduled jobs holding it changed. */
static void update_jobmap(gp_sim *s, sim_node *nd, int g) {
    const sim_gpu *G = &s->gpus[g];
    int64_t rel = s->last;
    char list[4096];
    size_t o = 0;
    uint64_t h = 1469598103934665603ULL;
    int64_t changed = 0; /* the latest start or end at or before now */
    for (int k = 0; k < G->n_jobs; k++) {
        const sim_job *j = &s->jobs[G->jobs[k]];
        const gp_scenario_job *c = j->cfg;
        if (c->scheduler_none) continue;
        if (c->start_ns <= rel && c->start_ns > changed) changed = c->start_ns;
        if (j->end <= rel && j->end > changed) changed = j->end;
        if (c->start_ns > rel || (j->end <= rel && j->end < s->sc.duration_ns)) continue;
        int w = snprintf(list + o, sizeof list - o, "%s\n", c->id);
        if (w < 0 || (size_t)w >= sizeof list - o) break;
        o += (size_t)w;
        h = sim_hash(c->id, h);
    }
    if (h == nd->map_hash[g]) return;
    nd->map_hash[g] = h;
    char name[16];
    snprintf(name, sizeof name, "%d", G->index);
    write_file(nd->jobmap, name, list, o, s->origin + changed);
}

void sim_node_update(gp_sim *s) {
    sim_node *nd = s->node;
    for (int i = 0; i < s->n_jobs; i++) {
        const sim_job *j = &s->jobs[i];
        int64_t want = j->live ? j->pid_base : -1;
        if (nd->shown_pid_base[i] == want) continue;
        if (nd->shown_pid_base[i] >= 0)
            for (int r = 0; r < j->cfg->n_gpus; r++)
                hide_process(nd, nd->shown_pid_base[i] + r);
        if (want >= 0)
            for (int r = 0; r < j->cfg->n_gpus; r++)
                show_process(s, nd, j, r);
        nd->shown_pid_base[i] = want;
    }
    for (int g = 0; g < s->sc.n_gpus; g++)
        update_jobmap(s, nd, g);
}

int gp_sim_expose(gp_sim *s, const char *root, char *err, size_t errlen) {
    if (s->node) return 0;
    sim_node *nd = calloc(1, sizeof *nd);
    if (!nd) goto oom;
    nd->shown_pid_base = malloc((size_t)(s->n_jobs ? s->n_jobs : 1) * sizeof *nd->shown_pid_base);
    nd->map_hash = calloc((size_t)s->sc.n_gpus, sizeof *nd->map_hash);
    if (!nd->shown_pid_base || !nd->map_hash) goto oom;
    for (int i = 0; i < s->n_jobs; i++)
        nd->shown_pid_base[i] = -1;
    if (root) {
        snprintf(nd->root, sizeof nd->root, "%s", root);
        if (mkdir(nd->root, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "simulator: cannot create %s: %s", nd->root, strerror(errno));
            goto fail;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(nd->root, sizeof nd->root, "%s/goodput-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(nd->root)) {
            snprintf(err, errlen, "simulator: cannot create a directory in %s: %s",
                     tmp && *tmp ? tmp : "/tmp", strerror(errno));
            goto fail;
        }
        nd->own_root = 1;
    }
    snprintf(nd->proc, sizeof nd->proc, "%s/proc", nd->root);
    snprintf(nd->jobmap, sizeof nd->jobmap, "%s/jobmap", nd->root);
    if ((mkdir(nd->proc, 0755) != 0 && errno != EEXIST) ||
        (mkdir(nd->jobmap, 0755) != 0 && errno != EEXIST)) {
        snprintf(err, errlen, "simulator: cannot create %s/{proc,jobmap}: %s", nd->root,
                 strerror(errno));
        goto fail;
    }
    /* The node booted an hour before the scenario's clock starts. */
    nd->boot_s = s->origin / 1000000000LL - 3600;
    char buf[256];
    int n = snprintf(buf, sizeof buf, "cpu  0 0 0 0 0 0 0 0 0 0\nbtime %lld\nprocesses 1\n",
                     (long long)nd->boot_s);
    if (write_file(nd->proc, "stat", buf, (size_t)n, 0) != 0) {
        snprintf(err, errlen, "simulator: cannot write %s/stat", nd->proc);
        goto fail;
    }
    s->node = nd;
    sim_node_update(s);
    return 0;
oom:
    snprintf(err, errlen, "simulator: out of memory");
fail:
    if (nd) {
        if (nd->own_root && nd->root[0]) remove_tree(nd->root);
        free(nd->shown_pid_base);
        free(nd->map_hash);
        free(nd);
    }
    return -1;
}

void gp_sim_node_paths(const gp_sim *s, const char **proc_root, const char **jobmap_dir) {
    *proc_root = s->node ? s->node->proc : NULL;
    *jobmap_dir = s->node ? s->node->jobmap : NULL;
}

void sim_node_free(gp_sim *s) {
    sim_node *nd = s->node;
    if (!nd) return;
    if (nd->own_root) remove_tree(nd->root);
    free(nd->shown_pid_base);
    free(nd->map_hash);
    free(nd);
    s->node = NULL;
}
