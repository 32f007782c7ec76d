/* Sweeping a campaign: every point rendered into its own directory under
 * RESULTS/<campaign>/ (point.cfg, model.cfg, changes.txt, probe.sbatch,
 * job.sbatch) and, on request, submitted with sbatch as probe then run
 * (afterok). Everything is rendered in memory before anything is written. */
#ifndef WP_CAMPAIGN_SWEEP_H
#define WP_CAMPAIGN_SWEEP_H

#include <stdio.h>

#include "util/error.h"

struct wp_sweep_options {
    const char *campaign;  /* the campaign file */
    const char *results;   /* where point directories go */
    const char *templates; /* the templates' folder; NULL: ./templates, else the templates/ folder
                            * two levels above the campaign file, else the installed ones */
    const char *wavepipe;  /* the program the jobs run; NULL: this one */
    int dry_run;           /* render, and print the sbatch commands submit would run */
    int submit;            /* render and submit each point not DONE and not in the queue */
    int max_concurrent;    /* with submit: run i also waits for run i-N (0: no limit) */
};

/* Reads and expands the campaign, decides per point (DONE: skipped; FAILED,
 * or out of the queue without DONE: rendered again; submitted and not
 * finished: left alone), renders every point in memory, then writes (and
 * submits) them, one line per point and a summary on out. 0, or -1 with
 * err; a bad campaign writes nothing. */
int wp_sweep(const struct wp_sweep_options *o, FILE *out, struct wp_err *err);

#endif
