/*
 * strata_info: can this node run CUDA-aware MPI with Strata?
 *
 * One check per concern, each in its own file, all writing lines of one
 * report: a status, the thing checked, and one line saying why.  Checks run
 * in order and later ones read what earlier ones found (the UCT component
 * the plugin check loaded, the devices the CUDA check listed), through the
 * one strata_info_t every check gets.
 */
#ifndef STRATA_INFO_H
#define STRATA_INFO_H

#include <limits.h>
#include <stddef.h>

#define STRATA_INFO_MAX_GPUS 64
#define STRATA_INFO_MAX_RDMA 32

typedef enum strata_info_status {
    STRATA_INFO_OK = 0,
    STRATA_INFO_NOTE,    /* a fact, or what was not checked here and why */
    STRATA_INFO_WARN,    /* CUDA-aware MPI works, slower or with less */
    STRATA_INFO_MISSING, /* CUDA-aware MPI with Strata will not work */
} strata_info_status_t;

typedef struct strata_info_line {
    strata_info_status_t status;
    int section;
    char *item;
    char *detail;
} strata_info_line_t;

typedef struct strata_info_gpu {
    char name[128];
    char bus_id[32];
} strata_info_gpu_t;

typedef struct strata_info_rdma_dev {
    char name[256]; /* as long as a sysfs directory entry's */
    int active; /* a port is ACTIVE */
} strata_info_rdma_dev_t;

typedef struct strata_info {
    /* what to check, from the command line */
    int json;
    int quiet;
    char builddir[PATH_MAX];   /* empty: the installed Strata */
    char srcdir[PATH_MAX];     /* the build tree's sources (its cuda-aware.conf) */
    char uct_module[PATH_MAX];
    char ompi_component_dir[PATH_MAX];
    int paths_given;           /* --uct-module or --ompi-components */
    char node[256];            /* this node's host name */
    char self_exe[PATH_MAX];   /* for the IPC peer process */

    /* what the checks found, for the checks after them */
    unsigned ompi_version[3]; /* the Open MPI this node runs; 0.0.0: unknown */
    unsigned ucx_version[3];
    int ucx_loaded;            /* UCX's libraries, see strata_info_ucx.h */
    void *uct_component;       /* uct_component_h of "strata", once registered */
    int cuda_ready;
    int num_gpus;
    strata_info_gpu_t gpus[STRATA_INFO_MAX_GPUS];
    int num_rdma;
    strata_info_rdma_dev_t rdma[STRATA_INFO_MAX_RDMA];
    int rdma_up;               /* some RDMA port is ACTIVE */
    int need_component_path;   /* Open MPI does not search the components' dir */
    int accel_loads;           /* Strata's accelerator/cuda loads (Open MPI 5) */

    /* the report */
    const char *sections[16];
    int num_sections;
    strata_info_line_t *lines;
    size_t num_lines;
    size_t max_lines;
    char mpirun[4 * PATH_MAX];
} strata_info_t;

/* ---- the report (strata_info_report.c) ---- */

/* Starts a section; text mode prints its title at once. */
void strata_info_section(strata_info_t *info, const char *title);

/* One line of the current section: text mode prints it at once. */
void strata_info_line(strata_info_t *info, strata_info_status_t status, const char *item,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The command the report ends with (the mpirun line). */
void strata_info_command(strata_info_t *info, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

size_t strata_info_count(const strata_info_t *info, strata_info_status_t status);

/* The closing verdict (text), or the whole report as one JSON object. */
void strata_info_report_finish(strata_info_t *info);
void strata_info_report_free(strata_info_t *info);

/* ---- the checks, in the order they run ---- */
void strata_info_check_versions(strata_info_t *info);  /* strata_info_versions.c */
void strata_info_check_plugins(strata_info_t *info);   /* strata_info_plugins.c */
void strata_info_check_cuda(strata_info_t *info);      /* strata_info_cuda.c */
void strata_info_check_memtypes(strata_info_t *info);  /* strata_info_memtypes.c */
void strata_info_check_ipc(strata_info_t *info);       /* strata_info_ipc.c */
void strata_info_check_rdma(strata_info_t *info);      /* strata_info_rdma.c */
void strata_info_check_locality(strata_info_t *info);  /* strata_info_topo.c, from _rdma */
void strata_info_check_apps(strata_info_t *info);      /* strata_info_apps.c */
void strata_info_check_mpirun(strata_info_t *info);    /* strata_info_mpirun.c */

/* The major version of the Open MPI this node runs (4: ORTE's mpirun, 5:
 * PRRTE's), or where it cannot be loaded the one Strata was built for; 0 if
 * neither is known (strata_info_versions.c). */
unsigned strata_info_ompi_major(const strata_info_t *info);

/* The IPC peer: runs in the process strata_info_check_ipc starts. */
int strata_info_ipc_peer_main(int sock);

/* An entry point of the loaded CUDA driver that common/strata_cuda's table
 * does not hold (strata_info_cuda.c); NULL if the driver lacks it. */
void *strata_info_cuda_symbol(const char *name);

/* "12.3 GiB" */
const char *strata_info_bytes_str(unsigned long long bytes, char *buf, size_t max);

#endif /* STRATA_INFO_H */
