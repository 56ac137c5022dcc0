/* jobmap.c: see jobmap.h. */
#include "attribution/jobmap.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/event.h"

static int job_id_ok(const char *s, size_t n) {
    if (n == 0 || n >= GP_JOB_ID_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._:@/-", s[i])) return 0;
    return 1;
}

static const char *uuid_for(const char *name, const gp_device *devs, size_t n_devs) {
    char *e;
    long idx = strtol(name, &e, 10);
    if (*e == '\0' && e != name) {
        for (size_t i = 0; i < n_devs; i++)
            if (devs[i].index == idx && !devs[i].parent_uuid[0]) return devs[i].uuid;
        return NULL;
    }
    if (!strncmp(name, "GPU-", 4) || !strncmp(name, "MIG-", 4)) return name;
    return NULL;
}

int gp_jobmap_read(const char *dir, const gp_device *devs, size_t n_devs, gp_jobmap_fn fn,
                   void *ctx) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int pairs = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue; /* also a writer's temporary file */
        const char *uuid = uuid_for(de->d_name, devs, n_devs);
        if (!uuid) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp) continue;
        struct stat sb;
        int64_t mtime = fstat(fileno(fp), &sb) == 0
                            ? (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec
                            : 0;
        char line[256];
        while (fgets(line, sizeof line, fp)) {
            size_t n = strcspn(line, " \t\r\n");
            if (!job_id_ok(line, n)) continue;
            line[n] = '\0';
            fn(ctx, line, uuid, mtime);
            pairs++;
        }
        fclose(fp);
    }
    closedir(d);
    return pairs;
}
