/* Quantities with units on the command line and in reports: bandwidths
 * ("25Gbit/s", "12.5GB/s"), times ("1.5us"), byte sizes ("16GiB"). */
#ifndef WP_UTIL_UNITS_H
#define WP_UTIL_UNITS_H

#include <stddef.h>
#include "util/error.h"

/* Bandwidth in bytes per second. Accepts B/s, KB/s, MB/s, GB/s, TB/s (powers
 * of 1000, bytes), bit/s with k/M/G/T prefixes ("25Gbit/s", "25Gb/s"), and a
 * bare number (bytes per second). */
int wp_parse_bandwidth_Bps(const char *text, double *Bps, struct wp_err *err);
/* Time in seconds: s, ms, us, ns; a bare number is seconds. */
int wp_parse_time_s(const char *text, double *seconds, struct wp_err *err);
/* Byte size: B, KB/MB/GB/TB (1000^n), KiB/MiB/GiB/TiB (1024^n); bare = bytes. */
int wp_parse_bytes(const char *text, double *bytes, struct wp_err *err);

/* "150 GB/s", "3.1 Gbit/s"-free human forms; buf must hold 32 chars. */
const char *wp_format_bandwidth(double Bps, char *buf, size_t len);
const char *wp_format_time(double seconds, char *buf, size_t len);
const char *wp_format_bytes(double bytes, char *buf, size_t len);

#endif
