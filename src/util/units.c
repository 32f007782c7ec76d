/* Parsing and printing of bandwidths, times and byte sizes with units. */
#include "util/units.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit {
    const char *suffix;
    double scale;
};

static int parse_with_units(const char *text, const struct unit *units, const char *what,
                            const char *examples, double *out, struct wp_err *err)
{
    if (!text || !*text)
        return wp_errorf(err, "empty %s (examples: %s)", what, examples);
    char *end;
    double value = strtod(text, &end);
    if (end == text || !isfinite(value) || value < 0)
        return wp_errorf(err, "'%s' is not a %s (examples: %s)", text, what, examples);
    while (*end == ' ')
        end++;
    if (*end == '\0') {
        *out = value;
        return 0;
    }
    for (const struct unit *u = units; u->suffix; u++) {
        if (strcmp(end, u->suffix) == 0) {
            *out = value * u->scale;
            return 0;
        }
    }
    return wp_errorf(err, "unknown unit '%s' in %s '%s' (examples: %s)", end, what, text, examples);
}

int wp_parse_bandwidth_Bps(const char *text, double *Bps, struct wp_err *err)
{
    static const struct unit units[] = {
        {"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12},
        {"bit/s", 1.0 / 8}, {"kbit/s", 1e3 / 8}, {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8},
        {"Tbit/s", 1e12 / 8}, {"kbit", 1e3 / 8}, {"Mbit", 1e6 / 8}, {"Gbit", 1e9 / 8},
        {"Tbit", 1e12 / 8}, {"Kb/s", 1e3 / 8}, {"kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8},
        {"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8}, {NULL, 0}};
    return parse_with_units(text, units, "bandwidth", "25Gbit/s, 12.5GB/s, 100MB/s", Bps, err);
}

int wp_parse_time_s(const char *text, double *seconds, struct wp_err *err)
{
    static const struct unit units[] = {
        {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {NULL, 0}};
    return parse_with_units(text, units, "time", "1.5us, 2ms, 0.1s", seconds, err);
}

int wp_parse_bytes(const char *text, double *bytes, struct wp_err *err)
{
    static const struct unit units[] = {
        {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0}, {NULL, 0}};
    return parse_with_units(text, units, "size", "16GiB, 32GB, 1048576", bytes, err);
}

static const char *format_scaled(double value, const char *const *names, double step,
                                 int count, char *buf, size_t len)
{
    int i = 0;
    while (i + 1 < count && fabs(value) >= step) {
        value /= step;
        i++;
    }
    snprintf(buf, len, "%.4g %s", value, names[i]);
    return buf;
}

const char *wp_format_bandwidth(double Bps, char *buf, size_t len)
{
    static const char *const names[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
    return format_scaled(Bps, names, 1000.0, 5, buf, len);
}

const char *wp_format_bytes(double bytes, char *buf, size_t len)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    return format_scaled(bytes, names, 1024.0, 6, buf, len);
}

const char *wp_format_time(double seconds, char *buf, size_t len)
{
    if (seconds == 0 || fabs(seconds) >= 1)
        snprintf(buf, len, "%.4g s", seconds);
    else if (fabs(seconds) >= 1e-3)
        snprintf(buf, len, "%.4g ms", seconds * 1e3);
    else if (fabs(seconds) >= 1e-6)
        snprintf(buf, len, "%.4g us", seconds * 1e6);
    else
        snprintf(buf, len, "%.4g ns", seconds * 1e9);
    return buf;
}
