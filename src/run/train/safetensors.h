/* safetensors files of float32 tensors: an 8-byte little-endian header
 * length, a JSON header {"name": {"dtype": "F32", "shape": [...],
 * "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data.
 * Written to a temporary name and renamed; read back with every offset and
 * shape checked, so a truncated file is reported by name. */
#ifndef WP_RUN_SAFETENSORS_H
#define WP_RUN_SAFETENSORS_H

#include <stddef.h>
#include "util/error.h"

struct wp_st_tensor {
    char name[128];
    int ndim;
    long shape[4];
    size_t numel;
    const float *data;  /* writing: the values (host) */
    size_t offset;      /* reading: byte offset of the data in the file's data section */
};

struct wp_st_metadata {
    int n;
    char key[16][64];
    char value[16][256];
};

int wp_safetensors_write(const char *path, const struct wp_st_tensor *tensors, int n,
                         const struct wp_st_metadata *meta, struct wp_err *err);

/* A file read whole: tensors found, their data, metadata. */
struct wp_st_file {
    struct wp_st_tensor *tensors;
    int n;
    struct wp_st_metadata meta;
    unsigned char *bytes;
    size_t size, data_start;
};

int wp_safetensors_read(const char *path, struct wp_st_file *f, struct wp_err *err);
void wp_safetensors_free(struct wp_st_file *f);
/* The named tensor, or NULL. */
const struct wp_st_tensor *wp_safetensors_find(const struct wp_st_file *f, const char *name);
/* Copies a tensor's float32 values (numel of them) into out. */
void wp_safetensors_values(const struct wp_st_file *f, const struct wp_st_tensor *t, float *out);
const char *wp_safetensors_meta(const struct wp_st_file *f, const char *key);

#endif
