/* The options of a training run: defaults and the rules of which go
 * together (train_options.h). */
#include "run/train/train_options.h"

#include <stdio.h>
#include <string.h>

#include "sched/schedule.h"
#include "sched/grad_overlap.h"

void wp_train_options_default(struct wp_train_options *o)
{
    memset(o, 0, sizeof *o);
    o->command = "run";
    wp_sched_params_default(&o->sched);
    o->mesh[0] = o->mesh[1] = o->mesh[2] = 1;
    o->global_batch = o->steps = -1;
    o->seed = -1;
    o->precision = -1;
    o->progress_us = 200;
    o->dilation = o->byte_scale = 1;
    o->watchdog_s = 6;
    o->grad_overlap = 1;
    o->grad_bucket_bytes = WP_GRAD_BUCKET_BYTES_DEFAULT;
    o->adapt.every = 10;
    o->adapt.max_k = 8;
    o->adapt.min_gain = 0.10;
    o->adapt.horizon = 50;
}

static const char *rule_broken(const struct wp_train_options *o)
{
    int meshed = o->mesh[0] * o->mesh[1] * o->mesh[2] > 1;
    if (o->emulated && !o->layers_path)
        return "--compute emulated needs --layers TABLE (wavepipe profile -o TABLE, or a DAPPLE profile such as "
               "profiles/dapple-v100/bert-48-pbs-2.txt)";
    if (!o->emulated && o->layers_path)
        return "--layers goes with --compute emulated";
    if (!o->emulated && (o->dilation != 1 || o->byte_scale != 1))
        return "--dilate and --scale-bytes slow emulated compute and shrink its messages: they go with --compute "
               "emulated";
    if (o->emulated && o->recompute)
        return "--recompute recomputes GPT-2's forward: not with --compute emulated";
    if (o->plan_path && o->recompute)
        return "--plan marks the stages that recompute (wavepipe plan --recompute): not --recompute with it";
    if (o->emulated && (o->save || o->resume || o->data || o->synthetic || o->device))
        return "--compute emulated computes no model: --save, --resume, --data, --synthetic-data and --device do "
               "not apply";
    if (o->emulated && o->precision >= 0)
        return "--precision is the kernels': an emulated run's passes and message bytes are its layer table's "
               "(wavepipe profile --analytic --precision P makes a table for P)";
    if (!o->config && !o->emulated)
        return "--config FILE is required (e.g. jobs/models/gpt-tiny.cfg)";
    if (o->changes_hook && !o->changes_path)
        return "--changes-hook goes with --changes FILE";
    if (o->save_every && !o->save)
        return "--save-every needs --save DIR";
    if (o->keep && !o->save)
        return "--keep needs --save DIR";
    if (!o->adapt.k && !o->adapt.partition && (o->adapt.log_path || o->adapt.replay_path))
        return "--adapt-log and --adapt-replay go with --adapt k, partition or both";
    if (o->adapt.k && o->schedule_file)
        return "--adapt k makes kFkB plans: not with --schedule-file";
    if (o->adapt.k && o->kind_given && o->sched.kind != WP_SCHED_1F1B && o->sched.kind != WP_SCHED_KFKB)
        return "--adapt k tunes 1f1b and kfkb runs, not %s"; /* the kind, by the caller */
    if (o->plan_path && o->schedule_file)
        return "--plan and --schedule-file both give the schedule: give one";
    if (meshed && (o->emulated || o->adapt.k || o->adapt.partition))
        return "--tensor and --mesh split GPT-2's blocks computed for real: not yet with --compute emulated or "
               "--adapt";
    if (meshed && o->plan_path)
        return "--plan gives the tensor group (its `tensor`): not --tensor or --mesh with it";
    if (o->plan_path && (o->kind_given || o->partition || o->stages || o->sched.nreplicas ||
                         o->sched.data_parallel > 1 || o->micro_given || o->global_batch > 0))
        return "--plan sets the schedule, partition, replicas (--stages, --data-parallel), micro-batches and global "
               "batch; give none of those with it";
    return NULL;
}

int wp_train_options_check(const struct wp_train_options *o, char *why, size_t size)
{
    const char *rule = rule_broken(o);
    if (!rule)
        return 0;
    snprintf(why, size, rule, wp_sched_kind_name(o->sched.kind));
    return -1;
}

double wp_train_options_watch_s(const struct wp_train_options *o, double hook_timeout_s)
{
    if (o->watchdog_s <= 0)
        return 0;
    double dilation = o->dilation >= 1 ? o->dilation : 1;
    return o->watchdog_s * dilation + (o->changes_hook ? hook_timeout_s : 0);
}
