/* The re-read slowdown file of emulated compute (see slowdown.h). */
#include "run/adapt/slowdown.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/read_file.h"
#include "util/strutil.h"

void wp_slowdown_init(struct wp_slowdown *s, const char *path, int rank)
{
    memset(s, 0, sizeof *s);
    wp_strlcpy(s->path, path ? path : "", sizeof s->path);
    s->rank = rank;
    s->factor = 1;
    s->size = -1;
}

double wp_slowdown_parse(const char *text, const char *name, int rank, struct wp_err *err)
{
    double mine = -1, all = 1;
    int lineno = 0;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[256];
        lineno++;
        if (len >= sizeof line)
            return wp_errorf(err, "%s:%d: line too long", name, lineno), -1;
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (eol ? 1 : 0);
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char who[32], extra[8];
        double f;
        int n = sscanf(line, "%31s %lf %7s", who, &f, extra);
        if (n <= 0)
            continue;
        if (n != 2 || !(f > 0) || f > 1e6)
            return wp_errorf(err, "%s:%d: expected 'RANK FACTOR' or '* FACTOR' with 0 < FACTOR <= 1e6", name,
                             lineno), -1;
        if (strcmp(who, "*") == 0) {
            all = f;
            continue;
        }
        char *end;
        long r = strtol(who, &end, 10);
        if (*end || r < 0)
            return wp_errorf(err, "%s:%d: '%s' is neither a rank nor *", name, lineno, who), -1;
        if (r == rank)
            mine = f;
    }
    return mine > 0 ? mine : all;
}

double wp_slowdown_factor(struct wp_slowdown *s)
{
    if (!s->path[0])
        return s->factor;
    struct stat st;
    if (stat(s->path, &st) != 0) {
        s->factor = 1;
        s->size = -1;
        return s->factor;
    }
    if (st.st_mtim.tv_sec == s->mtime.tv_sec && st.st_mtim.tv_nsec == s->mtime.tv_nsec && st.st_size == s->size)
        return s->factor;
    struct wp_err err = {""};
    size_t n = 0;
    char *text = wp_read_file(s->path, &n);
    if (!text) {
        wp_errorf(&err, "cannot read %s", s->path);
    } else {
        double f = wp_slowdown_parse(text, s->path, s->rank, &err);
        if (f > 0) {
            s->factor = f;
            s->reported = 0;
        }
    }
    free(text);
    if (err.msg[0] && !s->reported) {
        fprintf(stderr, "wavepipe run: rank %d: %s (keeping factor %g)\n", s->rank, err.msg, s->factor);
        s->reported = 1;
    }
    s->mtime = st.st_mtim;
    s->size = st.st_size;
    return s->factor;
}
