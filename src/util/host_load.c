/* The machine's processor load from /proc/stat (host_load.h). */
#include "util/host_load.h"

#include <stdio.h>
#include <string.h>

struct wp_host_cpu_sample wp_host_cpu_sample(const char *path)
{
    struct wp_host_cpu_sample s = {0, 0, 0};
    FILE *f = fopen(path ? path : "/proc/stat", "r");
    if (!f)
        return s;
    char line[512];
    /* "cpu  user nice system idle iowait irq softirq steal guest guest_nice";
     * guest time is counted in user already */
    unsigned long long v[8] = {0};
    if (fgets(line, sizeof line, f) && strncmp(line, "cpu ", 4) == 0 &&
        sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) >= 4) {
        s.busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        s.total_ticks = s.busy_ticks + v[3] + v[4];
        s.valid = 1;
    }
    fclose(f);
    return s;
}

double wp_host_busy_fraction(struct wp_host_cpu_sample a, struct wp_host_cpu_sample b)
{
    if (!a.valid || !b.valid || b.total_ticks <= a.total_ticks || b.busy_ticks < a.busy_ticks)
        return -1;
    return (double)(b.busy_ticks - a.busy_ticks) / (double)(b.total_ticks - a.total_ticks);
}
