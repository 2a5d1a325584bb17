/*
 * coll/strata settings: the values a communicator runs with.
 *
 * Some coll_strata parameters decide what a rank sends or which collectives
 * it calls: the allreduce's algorithm and thresholds, the pipeline's chunk
 * and slot counts, the network figures (configured ones skip the set-up's
 * measurements, which the other ranks would wait in), the staging bound
 * (above half of it reductions and broadcasts run in pieces, with an
 * allreduce of their own).  A node's own openmpi-mca-params.conf, or `-x`
 * given to some ranks only, can make them differ between ranks; ranks that
 * decided from different values would wait for each other forever.
 *
 * So every communicator takes one agreement, at its first collective that
 * reads one of them (every blocking entry that does calls
 * mca_coll_strata_settings_ready before anything else; the nonblocking ones
 * read none: they never wait for a peer of their own): one allreduce of
 * three numbers per setting gives every rank the smallest, the largest and
 * rank 0's value.  Where they differ, rank 0 names the first such setting
 * and every rank runs with rank 0's values, so the job goes on, as fast as
 * rank 0's settings make it.
 */
#include "coll_strata_module.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"

typedef enum {
    MCA_COLL_STRATA_SETTING_INT,
    MCA_COLL_STRATA_SETTING_SIZE,
    MCA_COLL_STRATA_SETTING_FIGURE /* a double in [0, 1e6] (checked at open) */
} mca_coll_strata_setting_type_t;

typedef struct mca_coll_strata_setting_t {
    const char *name; /* the parameter, without coll_strata_ */
    mca_coll_strata_setting_type_t type;
    size_t offset; /* in mca_coll_strata_settings_t */
} mca_coll_strata_setting_t;

#define MCA_COLL_STRATA_SETTING(_name, _type, _field) \
    { \
        _name, MCA_COLL_STRATA_SETTING_##_type, offsetof(mca_coll_strata_settings_t, _field) \
    }

/* Every member of mca_coll_strata_settings_t a user sets. */
static const mca_coll_strata_setting_t mca_coll_strata_settings_table[] = {
    MCA_COLL_STRATA_SETTING("allreduce_algorithm", INT, decision.algorithm),
    MCA_COLL_STRATA_SETTING("allreduce_inter_algorithm", INT, decision.inter_algorithm),
    MCA_COLL_STRATA_SETTING("allreduce_small_max", SIZE, decision.small_max),
    MCA_COLL_STRATA_SETTING("allreduce_node_small_max", SIZE, decision.node_small_max),
    MCA_COLL_STRATA_SETTING("allreduce_inter_nics", INT, decision.nics),
    MCA_COLL_STRATA_SETTING("allreduce_inter_latency_us", FIGURE, inter_latency_us),
    MCA_COLL_STRATA_SETTING("allreduce_inter_bandwidth_gbs", FIGURE, inter_bandwidth_gbs),
    MCA_COLL_STRATA_SETTING("allreduce_inter_overhead_us", FIGURE, inter_overhead_us),
    MCA_COLL_STRATA_SETTING("allreduce_inter_eager_max", SIZE, inter_eager_max),
    MCA_COLL_STRATA_SETTING("segment_size", SIZE, segment_size),
    MCA_COLL_STRATA_SETTING("device_segment_size", SIZE, device_segment_size),
    MCA_COLL_STRATA_SETTING("shm_slots", INT, shm_slots),
    MCA_COLL_STRATA_SETTING("stage_max", SIZE, stage_max),
    MCA_COLL_STRATA_SETTING("allreduce_device_algorithm", INT, device_algorithm),
    MCA_COLL_STRATA_SETTING("allreduce_device_native_min", SIZE, device_native_min),
    MCA_COLL_STRATA_SETTING("device_queue", INT, device_queue),
    MCA_COLL_STRATA_SETTING("device_direct", INT, device_direct),
    MCA_COLL_STRATA_SETTING("reduce_min", SIZE, reduce_min),
    MCA_COLL_STRATA_SETTING("bcast_algorithm", INT, bcast_algorithm),
    MCA_COLL_STRATA_SETTING("bcast_min", SIZE, bcast_min),
    MCA_COLL_STRATA_SETTING("allgather_algorithm", INT, allgather_algorithm),
    MCA_COLL_STRATA_SETTING("allgather_min", SIZE, allgather_min),
    MCA_COLL_STRATA_SETTING("compress", INT, compress),
    MCA_COLL_STRATA_SETTING("compress_min", SIZE, compress_min),
};

#define MCA_COLL_STRATA_NSETTINGS \
    ((int)(sizeof(mca_coll_strata_settings_table) / sizeof(mca_coll_strata_settings_table[0])))

/* A setting as a non-negative long whose order is the value's: a size
 * beyond LONG_MAX is as good as LONG_MAX; a figure is its IEEE bit pattern
 * (for non-negative doubles the patterns order as the values do). */
static long mca_coll_strata_setting_encode(const mca_coll_strata_settings_t *settings,
                                           const mca_coll_strata_setting_t *s)
{
    const char *at = (const char *)settings + s->offset;

    switch (s->type) {
    case MCA_COLL_STRATA_SETTING_INT: {
        int v;

        memcpy(&v, at, sizeof(v));
        return (v < 0) ? 0 : v;
    }
    case MCA_COLL_STRATA_SETTING_SIZE: {
        size_t v;

        memcpy(&v, at, sizeof(v));
        return (v > (size_t)LONG_MAX) ? LONG_MAX : (long)v;
    }
    default: {
        double v;
        int64_t bits;

        memcpy(&v, at, sizeof(v));
        v = (v > 0.0) ? v : 0.0; /* -0.0 too */
        memcpy(&bits, &v, sizeof(bits));
        return (long)bits;
    }
    }
}

static void mca_coll_strata_setting_decode(mca_coll_strata_settings_t *settings,
                                           const mca_coll_strata_setting_t *s, long value)
{
    char *at = (char *)settings + s->offset;

    switch (s->type) {
    case MCA_COLL_STRATA_SETTING_INT: {
        int v = (int)value;

        memcpy(at, &v, sizeof(v));
        break;
    }
    case MCA_COLL_STRATA_SETTING_SIZE: {
        size_t v = (size_t)value;

        memcpy(at, &v, sizeof(v));
        break;
    }
    default: {
        int64_t bits = value;
        double v;

        memcpy(&v, &bits, sizeof(v));
        memcpy(at, &v, sizeof(v));
        break;
    }
    }
}

/* A setting's value as ompi_info shows it: an enumeration's name, else the
 * number. */
static void mca_coll_strata_setting_text(const mca_coll_strata_setting_t *s, long value, char *text,
                                         size_t text_len)
{
    const mca_base_var_t *var = NULL;
    char *enum_name = NULL;
    int index = mca_base_var_find("ompi", "coll", "strata", s->name);

    if (MCA_COLL_STRATA_SETTING_FIGURE == s->type) {
        mca_coll_strata_settings_t tmp;

        mca_coll_strata_setting_decode(&tmp, s, value);
        snprintf(text, text_len, "%g", *(double *)((char *)&tmp + s->offset));
        return;
    }
    if (index >= 0 && OPAL_SUCCESS == mca_base_var_get(index, &var) &&
        NULL != var->mbv_enumerator &&
        OPAL_SUCCESS ==
            var->mbv_enumerator->string_from_value(var->mbv_enumerator, (int)value, &enum_name) &&
        NULL != enum_name) {
        snprintf(text, text_len, "%s", enum_name);
    } else {
        snprintf(text, text_len, "%ld", value);
    }
    free(enum_name);
}

/* Rank 0's line for the first setting whose values differ: once per
 * process (every communicator inherits the same settings), then at
 * verbosity 10. */
static void mca_coll_strata_settings_warn(struct ompi_communicator_t *comm,
                                          const mca_coll_strata_setting_t *s, long low, long high,
                                          long used, int ndiffer)
{
    static bool warned = false;
    char low_text[64], high_text[64], used_text[64], more[48] = "";

    mca_coll_strata_setting_text(s, low, low_text, sizeof(low_text));
    mca_coll_strata_setting_text(s, high, high_text, sizeof(high_text));
    mca_coll_strata_setting_text(s, used, used_text, sizeof(used_text));
    if (ndiffer > 1) {
        snprintf(more, sizeof(more), " (and %d more setting%s)", ndiffer - 1,
                 (ndiffer > 2) ? "s" : "");
    }
    if (!warned) {
        warned = true;
        opal_output(0,
                    "coll:strata: warning: %s: coll_strata_%s differs between ranks (%s on "
                    "some, %s on others)%s; every rank uses rank 0's settings (%s): set it the "
                    "same on every rank",
                    comm->c_name, s->name, low_text, high_text, more, used_text);
    } else {
        MCA_COLL_STRATA_VERBOSE(10,
                                "%s: coll_strata_%s differs between ranks%s; rank 0's (%s) "
                                "used",
                                comm->c_name, s->name, more, used_text);
    }
}

int mca_coll_strata_settings_agree(mca_coll_strata_module_t *module,
                                   struct ompi_communicator_t *comm)
{
    const int n = MCA_COLL_STRATA_NSETTINGS;
    long mine[3 * MCA_COLL_STRATA_NSETTINGS], all[3 * MCA_COLL_STRATA_NSETTINGS];
    const mca_coll_strata_setting_t *first = NULL;
    bool root = (0 == ompi_comm_rank(comm));
    int rc, ndiffer = 0, at = 0;

    /* module->settings: this process's values, copied when the module was
     * made (coll_strata_module.c) */
    module->settings_agreed = true;
    if (ompi_comm_size(comm) < 2) {
        return OMPI_SUCCESS;
    }
    /* per setting, in one MAX: the largest, the smallest (negated) and
     * rank 0's (everyone else LONG_MIN) */
    for (int i = 0; i < n; ++i) {
        long v = mca_coll_strata_setting_encode(&module->settings,
                                                &mca_coll_strata_settings_table[i]);

        mine[3 * i] = v;
        mine[3 * i + 1] = -v;
        mine[3 * i + 2] = root ? v : LONG_MIN;
    }
    rc = MCA_COLL_STRATA_FALLBACK(module, allreduce, comm, mine, all, 3 * n, MPI_LONG, MPI_MAX);
    if (OMPI_SUCCESS != rc) {
        opal_output(0,
                    "coll:strata: warning: %s: cannot compare the ranks' coll_strata settings "
                    "(allreduce: %d); each rank uses its own",
                    comm->c_name, rc);
        return rc;
    }
    for (int i = 0; i < n; ++i) {
        if (all[3 * i] == -all[3 * i + 1]) {
            continue;
        }
        if (0 == ndiffer++) {
            first = &mca_coll_strata_settings_table[i];
            at = i;
        }
        mca_coll_strata_setting_decode(&module->settings, &mca_coll_strata_settings_table[i],
                                       all[3 * i + 2]);
    }
    if (0 == ndiffer) {
        return OMPI_SUCCESS;
    }
    mca_coll_strata_settings_derive(&module->settings);
    module->decision = module->settings.decision;
    if (root) {
        mca_coll_strata_settings_warn(comm, first, -all[3 * at + 1], all[3 * at], all[3 * at + 2],
                                      ndiffer);
    }
    return OMPI_SUCCESS;
}

void mca_coll_strata_settings_derive(mca_coll_strata_settings_t *settings)
{
    settings->decision.rail_share_extra = 0.0;
    /* folds run memory-bound on one core: about 4 GB/s */
    settings->decision.gamma = 1.0 / 4e9;
    /* configured or fallback figures; a module replaces those to be
     * measured (mca_coll_strata_network_setup) */
    mca_coll_strata_network_params(settings->inter_latency_us, settings->inter_bandwidth_gbs, NULL,
                                   &settings->decision);
    settings->decision.overhead = settings->inter_overhead_us * 1e-6;
}
