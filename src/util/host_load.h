/* How busy this machine's processors are: the kernel's counters of
 * /proc/stat (its first line, every CPU together), sampled twice; the
 * share of the time between the samples they were not idle. An emulation
 * test bed reads it to show that the host was out of the way of what it
 * measured (wavepipe run's host_busy column). */
#ifndef WP_UTIL_HOST_LOAD_H
#define WP_UTIL_HOST_LOAD_H

/* The counters of one sample, in clock ticks (USER_HZ) since boot. */
struct wp_host_cpu_sample {
    unsigned long long busy_ticks;  /* user, nice, system, irq, softirq, steal */
    unsigned long long total_ticks; /* the same and idle, iowait */
    int valid;                      /* 0: /proc/stat could not be read */
};

/* Reads /proc/stat (path NULL) or a file of its format (tests). */
struct wp_host_cpu_sample wp_host_cpu_sample(const char *path);

/* The busy share of all processors from a to b (0..1), or -1 when either
 * sample is invalid or no tick passed between them. */
double wp_host_busy_fraction(struct wp_host_cpu_sample a, struct wp_host_cpu_sample b);

#endif
