/* The layout of a checkpoint directory (`run --save DIR`), so that a crash
 * or a full disk during a save never costs the previous checkpoint:
 *
 *   DIR/step-00000040/   model.safetensors optimizer.safetensors config.json
 *   DIR/step-00000080/   (one directory per save, named by the steps done)
 *   DIR/latest           -> step-00000080 (a relative symbolic link)
 *   DIR/model.safetensors, optimizer.safetensors, config.json
 *                        -> latest/<file> (so DIR itself loads like one
 *                           Hugging Face checkpoint directory)
 *
 * A save writes DIR/step-N.partial/, fsyncs it, renames it to step-N and
 * then swaps `latest` by renaming a new link over it (atomic on POSIX file
 * systems, Lustre and GPFS included): a crash before the swap leaves the old
 * `latest` and its directory whole; a leftover *.partial is removed by the
 * next save. `keep` newest step directories stay (0: all).
 *
 * Plain file-system work, done by one process (rank 0); no MPI. */
#ifndef WP_RUN_CHECKPOINT_DIR_H
#define WP_RUN_CHECKPOINT_DIR_H

#include <stddef.h>

#include "util/error.h"

#define WP_CHECKPOINT_FILES 3
/* The files of one checkpoint, in the order a save writes them. */
extern const char *const wp_checkpoint_files[WP_CHECKPOINT_FILES];

/* Makes DIR and a fresh DIR/step-N.partial/ (a leftover one removed) and
 * puts its path into partial. */
int wp_checkpoint_dir_begin(const char *dir, long steps_done, char *partial, size_t size, struct wp_err *err);
/* Publishes DIR/step-N.partial as DIR/step-N and points `latest` (and the
 * top-level file links) at it, then prunes to the newest `keep` step
 * directories (0: all) and removes leftover partial ones. */
int wp_checkpoint_dir_commit(const char *dir, long steps_done, int keep, struct wp_err *err);
/* Removes a step-N.partial directory after a failed save; `latest` is untouched. */
void wp_checkpoint_dir_abort(const char *partial);

/* The directory that holds the checkpoint to load from DIR: DIR/latest's
 * target; when that is missing or incomplete (a save interrupted between
 * the rename and the swap, a deleted directory), the newest complete
 * step-N with a note in *fallback (which the caller prints; "" otherwise);
 * DIR itself when it has no step directories (a single checkpoint, as
 * wavepipe wrote them before this layout, or DIR/step-N given directly). */
int wp_checkpoint_dir_resolve(const char *dir, char *out, size_t size, char *fallback, size_t fallback_size,
                              struct wp_err *err);

#endif
