/* A plan as Megatron-LM's command-line arguments (`wavepipe plan --format
 * megatron`): the flags of megatron/training/arguments.py as Megatron-LM
 * core_v0.15.0 defines them (tests/megatron/arguments.txt lists them, and
 * the tests check every flag written against it). */
#ifndef WP_PLAN_PLAN_MEGATRON_ARGS_H
#define WP_PLAN_PLAN_MEGATRON_ARGS_H

#include <stdio.h>

#include "plan/layers.h"
#include "plan/plan.h"

/* Writes the arguments (one line) of plan p of table t to out, after
 * comment lines (# ...) saying what Megatron-LM derives (the data-parallel
 * size from the world size) and where a plan's per-stage choices became
 * one setting. A split of blocks other than an even one is Megatron-LM's
 * --pipeline-model-parallel-layout. -1 with why in err when Megatron-LM
 * cannot run the plan: a 2D tensor group, or data-parallel sizes that
 * differ by stage. */
int wp_plan_write_megatron_args(FILE *out, const struct wp_plan *p, const struct wp_layer_table *t,
                                struct wp_err *err);

#endif
