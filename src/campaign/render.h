/* Rendering sbatch templates for campaign points. A template is a bash
 * script with placeholders @NAME@ (upper-case letters, digits, '_'); "@@"
 * is a literal '@', and an '@' that does not start a placeholder stays as
 * it is. Every value is shell-quoted (single quotes, ' written '\'') where
 * it is replaced, so no campaign value can become shell syntax; an unknown
 * placeholder is an error naming template:line. Placeholders:
 *   @SBATCH@          the #SBATCH lines (alone on its line): job name, nodes,
 *                     ntasks-per-node, cpus-per-task, gpus-per-node (when
 *                     > 0), time, output, error; partition, account, qos,
 *                     constraint and extra lines only when the campaign gives them;
 *                     for the run step --signal=B:USR1@<slurm.signal_warning_s>
 *                     (when > 0) and --requeue or --no-requeue (slurm.requeue)
 *   @MPI_LAUNCH@      `srun --mpi=pmi2`, or `mpiexec -n N -ppn R` when the
 *                     campaign says launcher = "mpiexec" (words, not one value)
 *   @RUN_ARGS@        the point's `wavepipe run` options, each value quoted:
 *                     --schedule, --k (kfkb), --waves (hanayo), --chunks
 *                     (interleaved), --policy (when swept), --micro-batches,
 *                     --global-batch, --steps, --data (when given)
 *   @WAVEPIPE@ @POINT_DIR@ @CAMPAIGN@ @POINT@ @STEP@ @NODES@ @RANKS_PER_NODE@
 *   @NTASKS@ @STEPS@ @SAVE_EVERY@ @KEEP@ (keep_checkpoints) @REQUEUE@ (1 or
 *   0) @SCHEDULE@ @DEVICE@ @MODEL@ (model.cfg, the point's own copy)
 *   @REPETITION@       single values, quoted */
#ifndef WP_CAMPAIGN_RENDER_H
#define WP_CAMPAIGN_RENDER_H

#include <stddef.h>

#include "campaign/campaign.h"
#include "util/error.h"

struct wp_render_input {
    const struct wp_campaign *campaign;
    const struct wp_campaign_point *point;
    const char *point_dir; /* absolute */
    const char *wavepipe;  /* absolute path of the program the jobs run */
    const char *step;      /* "probe" or "run": job name suffix, output file names */
};

/* Appends s to out (capacity size) in single quotes; -1 when it does not fit. */
int wp_shell_quote(const char *s, char *out, size_t size);

/* Renders template_path into a malloc'ed script (*script). */
int wp_render_file(const char *template_path, const struct wp_render_input *in, char **script,
                   struct wp_err *err);
/* The same for template text; name stands in for the file in errors. */
int wp_render_text(const char *text, const char *name, const struct wp_render_input *in, char **script,
                   struct wp_err *err);

#endif
