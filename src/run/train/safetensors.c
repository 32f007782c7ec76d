/* Writing and reading float32 safetensors files (a small, strict JSON
 * reader for the header: objects, strings, integer arrays). */
#include "run/train/safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/atomic_file.h"
#include "util/read_file.h"
#include "util/strutil.h"

int wp_safetensors_write(const char *path, const struct wp_st_tensor *tensors, int n,
                         const struct wp_st_metadata *meta, struct wp_err *err)
{
    size_t cap = 256 + (size_t)n * 256 + (meta ? (size_t)meta->n * 330 : 0), len = 0;
    char *header = malloc(cap);
    if (!header)
        return wp_errorf(err, "out of memory");
    len += (size_t)snprintf(header + len, cap - len, "{");
    if (meta && meta->n) {
        len += (size_t)snprintf(header + len, cap - len, "\"__metadata__\":{");
        for (int i = 0; i < meta->n; i++)
            len += (size_t)snprintf(header + len, cap - len, "%s\"%s\":\"%s\"", i ? "," : "", meta->key[i],
                                    meta->value[i]);
        len += (size_t)snprintf(header + len, cap - len, "}");
    }
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        const struct wp_st_tensor *t = &tensors[i];
        len += (size_t)snprintf(header + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
                                (meta && meta->n) || i ? "," : "", t->name);
        for (int d = 0; d < t->ndim; d++)
            len += (size_t)snprintf(header + len, cap - len, "%s%ld", d ? "," : "", t->shape[d]);
        len += (size_t)snprintf(header + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", offset,
                                offset + t->numel * 4);
        offset += t->numel * 4;
    }
    len += (size_t)snprintf(header + len, cap - len, "}");
    while (len % 8) /* data aligned to 8 bytes, as the format recommends */
        header[len++] = ' ';
    struct wp_atomic_file af;
    if (wp_atomic_open(&af, path, err)) {
        free(header);
        return -1;
    }
    unsigned char lenbytes[8];
    for (int b = 0; b < 8; b++)
        lenbytes[b] = (unsigned char)((unsigned long long)len >> (8 * b));
    fwrite(lenbytes, 1, 8, af.fp);
    fwrite(header, 1, len, af.fp);
    free(header);
    for (int i = 0; i < n; i++)
        fwrite(tensors[i].data, sizeof(float), tensors[i].numel, af.fp); /* x86-64 and aarch64: little-endian */
    return wp_atomic_commit(&af, err);
}

/* ---- reading -------------------------------------------------------------------------- */

struct cursor {
    const char *p, *end;
};

static void skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int expect(struct cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 0;
    }
    return -1;
}

static int string(struct cursor *c, char *out, size_t len)
{
    if (expect(c, '"'))
        return -1;
    size_t n = 0;
    while (c->p < c->end && *c->p != '"') {
        if (*c->p == '\\')
            c->p++;
        if (c->p < c->end && n + 1 < len)
            out[n++] = *c->p;
        c->p++;
    }
    out[n] = '\0';
    return c->p < c->end ? (c->p++, 0) : -1;
}

static int integer(struct cursor *c, long *out)
{
    skip_ws(c);
    char *end;
    long v = strtol(c->p, &end, 10);
    if (end == c->p || end > c->end)
        return -1;
    c->p = end;
    *out = v;
    return 0;
}

static int int_array(struct cursor *c, long *out, int max, int *n)
{
    if (expect(c, '['))
        return -1;
    *n = 0;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']')
        return (c->p++, 0);
    for (;;) {
        long v;
        if (*n >= max || integer(c, &v))
            return -1;
        out[(*n)++] = v;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        return expect(c, ']');
    }
}

static int parse_tensor(struct cursor *c, struct wp_st_tensor *t, long *begin, long *end)
{
    if (expect(c, '{'))
        return -1;
    char key[64], dtype[16] = "";
    *begin = *end = -1;
    t->ndim = -1;
    for (;;) {
        if (string(c, key, sizeof key) || expect(c, ':'))
            return -1;
        if (strcmp(key, "dtype") == 0) {
            if (string(c, dtype, sizeof dtype))
                return -1;
        } else if (strcmp(key, "shape") == 0) {
            if (int_array(c, t->shape, 4, &t->ndim))
                return -1;
        } else if (strcmp(key, "data_offsets") == 0) {
            long off[2];
            int n;
            if (int_array(c, off, 2, &n) || n != 2)
                return -1;
            *begin = off[0];
            *end = off[1];
        } else {
            return -1;
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        break;
    }
    if (expect(c, '}') || strcmp(dtype, "F32") != 0 || t->ndim < 0 || *begin < 0)
        return -1;
    t->numel = 1;
    for (int d = 0; d < t->ndim; d++)
        t->numel *= (size_t)t->shape[d];
    return 0;
}

int wp_safetensors_read(const char *path, struct wp_st_file *f, struct wp_err *err)
{
    memset(f, 0, sizeof *f);
    size_t size = 0;
    f->bytes = (unsigned char *)wp_read_file(path, &size);
    if (!f->bytes)
        return wp_errorf(err, "cannot read %s: %s", path, strerror(errno));
    if (size == 0) {
        wp_safetensors_free(f);
        return wp_errorf(err, "%s: empty", path);
    }
    f->size = size;
    unsigned long long hlen = 0;
    for (int b = 0; b < 8 && f->size >= 8; b++)
        hlen |= (unsigned long long)f->bytes[b] << (8 * b);
    if (f->size < 8 || hlen > f->size - 8) {
        wp_safetensors_free(f);
        return wp_errorf(err, "%s: truncated (header of %llu bytes in a file of %zu)", path, hlen, size);
    }
    f->data_start = 8 + (size_t)hlen;
    struct cursor c = {(const char *)f->bytes + 8, (const char *)f->bytes + 8 + hlen};
    int cap = 0, rc = expect(&c, '{');
    while (rc == 0) {
        skip_ws(&c);
        if (c.p < c.end && *c.p == '}')
            break;
        char name[128];
        if (string(&c, name, sizeof name) || expect(&c, ':')) {
            rc = -1;
            break;
        }
        if (strcmp(name, "__metadata__") == 0) {
            rc = expect(&c, '{');
            while (rc == 0) {
                skip_ws(&c);
                if (c.p < c.end && *c.p == '}') {
                    c.p++;
                    break;
                }
                int i = f->meta.n < 16 ? f->meta.n++ : 15;
                rc = string(&c, f->meta.key[i], sizeof f->meta.key[i]) || expect(&c, ':') ||
                     string(&c, f->meta.value[i], sizeof f->meta.value[i]);
                skip_ws(&c);
                if (c.p < c.end && *c.p == ',')
                    c.p++;
            }
        } else {
            if (f->n == cap) {
                cap = cap ? 2 * cap : 64;
                struct wp_st_tensor *grown = realloc(f->tensors, (size_t)cap * sizeof *grown);
                if (!grown) {
                    rc = -1;
                    break;
                }
                f->tensors = grown;
            }
            struct wp_st_tensor *t = &f->tensors[f->n];
            memset(t, 0, sizeof *t);
            wp_strlcpy(t->name, name, sizeof t->name);
            long begin, end;
            if (parse_tensor(&c, t, &begin, &end)) {
                rc = -1;
                break;
            }
            if ((size_t)(end - begin) != t->numel * 4 || f->data_start + (size_t)end > f->size) {
                wp_safetensors_free(f);
                return wp_errorf(err, "%s: tensor %s is truncated or inconsistent (bytes %ld-%ld, file data %zu)",
                                 path, name, begin, end, f->size - (8 + (size_t)hlen));
            }
            t->offset = (size_t)begin;
            f->n++;
        }
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',')
            c.p++;
    }
    if (rc) {
        wp_safetensors_free(f);
        return wp_errorf(err, "%s: not a float32 safetensors file (bad header)", path);
    }
    return 0;
}

void wp_safetensors_free(struct wp_st_file *f)
{
    free(f->tensors);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

const struct wp_st_tensor *wp_safetensors_find(const struct wp_st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

void wp_safetensors_values(const struct wp_st_file *f, const struct wp_st_tensor *t, float *out)
{
    memcpy(out, f->bytes + f->data_start + t->offset, t->numel * sizeof(float));
}

const char *wp_safetensors_meta(const struct wp_st_file *f, const char *key)
{
    for (int i = 0; i < f->meta.n; i++)
        if (strcmp(f->meta.key[i], key) == 0)
            return f->meta.value[i];
    return NULL;
}
