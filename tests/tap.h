/* Minimal TAP producer for the C unit tests (automake's tap-driver.sh reads
 * it): one "ok"/"not ok" line per check, the plan at the end. */
#ifndef WP_TESTS_TAP_H
#define WP_TESTS_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct tap_state {
    int count;
    int failed;
};

static struct tap_state tap;

static int tap_vcheck(int pass, const char *file, int line, const char *fmt, va_list ap)
{
    tap.count++;
    if (!pass)
        tap.failed++;
    printf("%s %d - ", pass ? "ok" : "not ok", tap.count);
    vprintf(fmt, ap);
    printf("\n");
    if (!pass)
        printf("#   failed at %s:%d\n", file, line);
    fflush(stdout);
    return pass;
}

static int tap_check(int pass, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), unused));
static int tap_check(int pass, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vcheck(pass, file, line, fmt, ap);
    va_end(ap);
    return pass;
}

#define ok(cond, ...) tap_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                                    \
    do {                                                                                          \
        long long got_ = (long long)(got), want_ = (long long)(want);                             \
        if (!tap_check(got_ == want_, __FILE__, __LINE__, __VA_ARGS__))                           \
            printf("#   got %lld, want %lld\n", got_, want_);                                     \
    } while (0)

/* Relative tolerance rel (absolute when want is 0). */
#define is_near(got, want, rel, ...)                                                              \
    do {                                                                                          \
        double got_ = (double)(got), want_ = (double)(want);                                      \
        double tol_ = want_ == 0 ? (rel) : fabs(want_) * (rel);                                   \
        if (!tap_check(fabs(got_ - want_) <= tol_, __FILE__, __LINE__, __VA_ARGS__))               \
            printf("#   got %.17g, want %.17g (tolerance %g)\n", got_, want_, tol_);              \
    } while (0)

#define is_str(got, want, ...)                                                                    \
    do {                                                                                          \
        const char *got_ = (got), *want_ = (want);                                                \
        if (!tap_check(got_ && strcmp(got_, want_) == 0, __FILE__, __LINE__, __VA_ARGS__))        \
            printf("#   got \"%s\", want \"%s\"\n", got_ ? got_ : "(null)", want_);               \
    } while (0)

#define has_substr(text, part, ...)                                                               \
    do {                                                                                          \
        const char *text_ = (text), *part_ = (part);                                              \
        if (!tap_check(text_ && strstr(text_, part_) != NULL, __FILE__, __LINE__, __VA_ARGS__))   \
            printf("#   \"%s\" does not contain \"%s\"\n", text_ ? text_ : "(null)", part_);      \
    } while (0)

static int __attribute__((unused)) tap_done(void)
{
    printf("1..%d\n", tap.count);
    return tap.failed ? 1 : 0;
}

#endif
