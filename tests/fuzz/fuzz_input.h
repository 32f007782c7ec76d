/* What every fuzz harness needs to hand libFuzzer's bytes to a reader: a
 * scratch directory of its own (removed at exit), the bytes as a file in it
 * or as a NUL-terminated string, and the source tree for the files a reader
 * resolves beside its input (models, layer tables). */
#ifndef WP_FUZZ_INPUT_H
#define WP_FUZZ_INPUT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* The scratch directory, made on first use (under $TMPDIR, else /dev/shm,
 * else /tmp). */
const char *wp_fuzz_dir(void);
/* Writes the bytes to name (a relative path; its folders made) in the
 * scratch directory and returns the file's path (static storage). */
const char *wp_fuzz_file(const char *name, const uint8_t *data, size_t size);
/* Removes name from the scratch directory, if there. */
void wp_fuzz_remove(const char *name);
/* The bytes as a malloc'ed string (a NUL byte within ends it early). */
char *wp_fuzz_text(const uint8_t *data, size_t size);
/* /dev/null opened for writing, for what a reader's caller prints. */
FILE *wp_fuzz_sink(void);
/* Links name in the scratch directory to the source tree's path (so that a
 * reader's relative references resolve as they do beside the repository). */
void wp_fuzz_link_source(const char *name, const char *source_path);

#endif
