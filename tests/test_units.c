/* Unit tests of the utilities: units, edit distance and nearest names,
 * errors, files written whole or not at all, and the host's load. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/host_load.h"
#include "util/strutil.h"
#include "util/units.h"

static void test_bandwidth(void)
{
    struct wp_err err;
    double v = 0;
    ok(wp_parse_bandwidth_Bps("25Gbit/s", &v, &err) == 0, "25Gbit/s parses");
    is_near(v, 25e9 / 8, 1e-12, "25Gbit/s is 3.125e9 B/s");
    ok(wp_parse_bandwidth_Bps("12.5GB/s", &v, &err) == 0, "12.5GB/s parses");
    is_near(v, 12.5e9, 1e-12, "12.5GB/s is 1.25e10 B/s");
    ok(wp_parse_bandwidth_Bps("100Mbit", &v, &err) == 0, "100Mbit (tc style) parses");
    is_near(v, 12.5e6, 1e-12, "100Mbit is 1.25e7 B/s");
    ok(wp_parse_bandwidth_Bps("1000", &v, &err) == 0 && v == 1000, "bare number is bytes/s");
    ok(wp_parse_bandwidth_Bps("25 furlongs", &v, &err) == -1, "unknown unit rejected");
    has_substr(err.msg, "unknown unit 'furlongs'", "error names the unit");
    ok(wp_parse_bandwidth_Bps("-3GB/s", &v, &err) == -1, "negative bandwidth rejected");
    ok(wp_parse_bandwidth_Bps("", &v, &err) == -1, "empty bandwidth rejected");
}

static void test_time_and_bytes(void)
{
    struct wp_err err;
    double v = 0;
    ok(wp_parse_time_s("1.5us", &v, &err) == 0, "1.5us parses");
    is_near(v, 1.5e-6, 1e-12, "1.5us is 1.5e-6 s");
    ok(wp_parse_time_s("2ms", &v, &err) == 0 && fabs(v - 2e-3) < 1e-15, "2ms is 2e-3 s");
    ok(wp_parse_time_s("3h", &v, &err) == -1, "hours are not a unit here");
    ok(wp_parse_bytes("16GiB", &v, &err) == 0 && v == 16.0 * 1073741824.0, "16GiB");
    ok(wp_parse_bytes("32GB", &v, &err) == 0 && v == 32e9, "32GB");
    char buf[32];
    is_str(wp_format_bandwidth(150e9, buf, sizeof buf), "150 GB/s", "format 150e9 B/s");
    is_str(wp_format_bytes(1024.0 * 1024 * 3, buf, sizeof buf), "3 MiB", "format 3 MiB");
    is_str(wp_format_time(2.5e-6, buf, sizeof buf), "2.5 us", "format 2.5 us");
}

static void test_strings(void)
{
    is_int(wp_edit_distance("kitten", "sitting"), 3, "edit distance kitten/sitting");
    is_int(wp_edit_distance("", "abc"), 3, "edit distance to empty");
    is_int(wp_edit_distance("same", "same"), 0, "edit distance of equal strings");
    static const char *const names[] = {"bandwidth_Bps", "latency_s", "name", "source", NULL};
    is_str(wp_nearest_name("bandwith_Bps", names), "bandwidth_Bps", "nearest to a typo");
    is_str(wp_nearest_name("latency", names), "latency_s", "nearest to a missing suffix");
    ok(wp_nearest_name("completely_unrelated", names) == NULL, "no suggestion when nothing is close");
    char small[4];
    wp_strlcpy(small, "abcdef", sizeof small);
    is_str(small, "abc", "bounded copy truncates and terminates");
}

static void test_errors(void)
{
    struct wp_err err;
    ok(wp_errorf(&err, "bad %d", 7) == -1, "wp_errorf returns -1");
    is_str(err.msg, "bad 7", "message formatted");
    wp_err_prefix(&err, "%s:%d: ", "f.cfg", 3);
    is_str(err.msg, "f.cfg:3: bad 7", "prefix prepended");
}

static void test_atomic_file(void)
{
    char dir[] = "/tmp/wp-test-XXXXXX";
    ok(mkdtemp(dir) != NULL, "temporary directory");
    char path[256];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    struct wp_err err;
    struct wp_atomic_file af;
    ok(wp_atomic_open(&af, path, &err) == 0, "open");
    fputs("first\n", af.fp);
    ok(wp_atomic_commit(&af, &err) == 0, "commit");
    ok(wp_atomic_open(&af, path, &err) == 0, "reopen");
    fputs("second, never committed\n", af.fp);
    ok(access(path, F_OK) == 0, "target still there while the new version is written");
    wp_atomic_abort(&af);
    FILE *fp = fopen(path, "r");
    char line[64] = "";
    if (fp) {
        if (!fgets(line, sizeof line, fp))
            line[0] = '\0';
        fclose(fp);
    }
    is_str(line, "first\n", "abort leaves the committed content");
    ok(access(af.tmp_path, F_OK) != 0, "abort removes the temporary file");
    snprintf(path, sizeof path, "%s/missing-dir/out.txt", dir);
    ok(wp_atomic_open(&af, path, &err) == -1, "open in a missing directory fails");
    has_substr(err.msg, "cannot write", "error says what failed");
    snprintf(path, sizeof path, "%s/out.txt", dir);
    unlink(path);
    rmdir(dir);
}

/* /proc/stat's first line: busy = user + nice + system + irq + softirq + steal */
static void test_host_load(void)
{
    char path[] = "/tmp/wp-test-stat-XXXXXX";
    int fd = mkstemp(path);
    ok(fd >= 0, "a scratch file for /proc/stat's format");
    FILE *f = fdopen(fd, "w");
    fputs("cpu  100 10 50 800 20 5 5 10 0 0\ncpu0 50 5 25 400 10 2 3 5 0 0\n", f);
    fclose(f);
    struct wp_host_cpu_sample a = wp_host_cpu_sample(path);
    ok(a.valid && a.busy_ticks == 180 && a.total_ticks == 1000, "busy 180 of 1000 ticks (idle and iowait apart)");
    f = fopen(path, "w");
    fputs("cpu  160 10 90 1080 40 5 5 10 0 0\n", f);
    fclose(f);
    struct wp_host_cpu_sample b = wp_host_cpu_sample(path);
    is_near(wp_host_busy_fraction(a, b), 100.0 / 400.0, 1e-12, "100 busy ticks of 400 between the samples: a quarter");
    ok(wp_host_busy_fraction(a, a) == -1, "no tick between two samples: unknown");
    f = fopen(path, "w");
    fputs("intr 1 2 3\n", f);
    fclose(f);
    ok(!wp_host_cpu_sample(path).valid, "a file without the cpu line gives no sample");
    ok(wp_host_busy_fraction(a, wp_host_cpu_sample(path)) == -1, "and no busy share");
    unlink(path);
    ok(!wp_host_cpu_sample(path).valid, "a missing file gives no sample");
    struct wp_host_cpu_sample live = wp_host_cpu_sample(NULL);
    ok(live.valid && live.total_ticks >= live.busy_ticks, "this machine's /proc/stat reads");
}

int main(void)
{
    test_host_load();
    test_bandwidth();
    test_time_and_bytes();
    test_strings();
    test_errors();
    test_atomic_file();
    return tap_done();
}
