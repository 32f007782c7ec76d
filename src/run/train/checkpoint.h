/* Checkpoints of a pipeline-parallel GPT-2: model.safetensors with
 * Hugging Face GPT2LMHeadModel's tensor names and shapes (float32), a
 * matching config.json, and optimizer.safetensors with AdamW's moments
 * ("<name>.exp_avg", "<name>.exp_avg_sq"); the completed step is in both
 * files' metadata. One directory per save under DIR with an atomic
 * `latest` link (checkpoint_dir.h). Collective over the job: each tensor
 * comes from one rank that holds it (from the ranks of a mesh that hold its
 * pieces); rank 0 writes. */
#ifndef WP_RUN_CHECKPOINT_H
#define WP_RUN_CHECKPOINT_H

#include "run/core/interpreter.h"

struct wp_tensor_group;

/* steps_done: optimizer steps taken so far (the next step's index);
 * partition: blocks per stage ("n0:n1:..."), recorded in the metadata as
 * wavepipe_partition (a run that re-partitioned resumes from it); tg: the
 * stages' mesh (run --mesh), whose pieces are made whole again here, or
 * NULL; keep: step directories kept under DIR (0: all). A failed save
 * leaves DIR's previous checkpoint the latest. */
int wp_checkpoint_save(struct wp_interp *in, const struct wp_tensor_group *tg, const char *dir, long steps_done,
                       const char *partition, int keep, struct wp_err *err);
/* Loading from DIR reads DIR's latest checkpoint (or DIR itself when it
 * is one checkpoint's directory). The blocks per stage a checkpoint recorded into buf ("" when none);
 * collective: rank 0 reads, every rank gets it. */
int wp_checkpoint_partition(const char *dir, char *buf, size_t size, struct wp_err *err);
/* Loads parameters and AdamW moments into every held stage (each rank of
 * a mesh its pieces, whatever mesh saved them); *steps_done gets the step
 * to continue from. The same status on every rank. */
int wp_checkpoint_load(struct wp_interp *in, const char *dir, long *steps_done, struct wp_err *err);

#endif
