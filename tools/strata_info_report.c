/*
 * The report: lines kept for the closing verdict and --json, and printed as
 * they come in text mode (the IPC check takes seconds on a large node, and a
 * user watching should see how far it got).
 */
#include "strata_config.h"
#include "strata_info.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const strata_info_status_names[] = {
    [STRATA_INFO_OK]      = "OK",
    [STRATA_INFO_NOTE]    = "INFO",
    [STRATA_INFO_WARN]    = "WARN",
    [STRATA_INFO_MISSING] = "MISSING",
};

static int strata_info_is_problem(strata_info_status_t status)
{
    return (status == STRATA_INFO_WARN) || (status == STRATA_INFO_MISSING);
}

static int strata_info_shown(const strata_info_t *info, strata_info_status_t status)
{
    return !info->quiet || strata_info_is_problem(status);
}

void strata_info_section(strata_info_t *info, const char *title)
{
    if (info->num_sections == (int)(sizeof(info->sections) / sizeof(info->sections[0]))) {
        abort(); /* a programming error: more sections than the report holds */
    }
    info->sections[info->num_sections++] = title;
    if (!info->json && !info->quiet) {
        printf("\n%s\n", title);
        fflush(stdout);
    }
}

static char *strata_info_strdup_or_die(const char *s)
{
    char *copy = strdup(s);

    if (copy == NULL) {
        fprintf(stderr, "strata_info: out of memory\n");
        exit(2);
    }
    return copy;
}

static void strata_info_print_line(const strata_info_t *info, const strata_info_line_t *line)
{
    const char *name = strata_info_status_names[line->status];

    if (info->quiet) {
        printf("%-8s %s / %s: %s\n", name, info->sections[line->section], line->item,
               line->detail);
    } else {
        printf("  %-8s %-20s %s\n", name, line->item, line->detail);
    }
    fflush(stdout);
}

void strata_info_line(strata_info_t *info, strata_info_status_t status, const char *item,
                      const char *fmt, ...)
{
    strata_info_line_t *line;
    char detail[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);

    if (info->num_lines == info->max_lines) {
        size_t max = info->max_lines ? 2 * info->max_lines : 64;
        strata_info_line_t *lines = realloc(info->lines, max * sizeof(*lines));

        if (lines == NULL) {
            fprintf(stderr, "strata_info: out of memory\n");
            exit(2);
        }
        info->lines     = lines;
        info->max_lines = max;
    }
    line          = &info->lines[info->num_lines++];
    line->status  = status;
    line->section = info->num_sections - 1;
    line->item    = strata_info_strdup_or_die(item);
    line->detail  = strata_info_strdup_or_die(detail);
    if (!info->json && strata_info_shown(info, status)) {
        strata_info_print_line(info, line);
    }
}

void strata_info_command(strata_info_t *info, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(info->mpirun, sizeof(info->mpirun), fmt, ap);
    va_end(ap);
    if (!info->json && !info->quiet) {
        printf("\n  %s\n", info->mpirun);
        fflush(stdout);
    }
}

size_t strata_info_count(const strata_info_t *info, strata_info_status_t status)
{
    size_t i, n = 0;

    for (i = 0; i < info->num_lines; ++i) {
        n += (info->lines[i].status == status);
    }
    return n;
}

static void strata_info_json_string(const char *s)
{
    putchar('"');
    for (; *s != '\0'; ++s) {
        unsigned char c = (unsigned char)*s;

        if ((c == '"') || (c == '\\')) {
            printf("\\%c", c);
        } else if (c == '\n') {
            fputs("\\n", stdout);
        } else if (c == '\t') {
            fputs("\\t", stdout);
        } else if (c < 0x20) {
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

static void strata_info_json_section(const strata_info_t *info, int section)
{
    const char *sep = "";
    size_t i;

    printf("    {\"title\": ");
    strata_info_json_string(info->sections[section]);
    printf(", \"checks\": [");
    for (i = 0; i < info->num_lines; ++i) {
        const strata_info_line_t *line = &info->lines[i];

        if ((line->section != section) || !strata_info_shown(info, line->status)) {
            continue;
        }
        printf("%s\n      {\"status\": \"%s\", \"item\": ", sep,
               strata_info_status_names[line->status]);
        strata_info_json_string(line->item);
        printf(", \"detail\": ");
        strata_info_json_string(line->detail);
        printf("}");
        sep = ",";
    }
    printf("%s]}", (*sep != '\0') ? "\n    " : "");
}

static void strata_info_json_report(const strata_info_t *info, int ready)
{
    int section;

    printf("{\n  \"tool\": \"strata_info\",\n  \"strata_version\": ");
    strata_info_json_string(PACKAGE_VERSION);
    printf(",\n  \"node\": ");
    strata_info_json_string(info->node);
    printf(",\n  \"builddir\": ");
    if (info->builddir[0] != '\0') {
        strata_info_json_string(info->builddir);
    } else {
        printf("null");
    }
    printf(",\n  \"ready\": %s,\n  \"exit_status\": %d,\n", ready ? "true" : "false",
           ready ? 0 : 1);
    printf("  \"missing\": %zu,\n  \"warnings\": %zu,\n",
           strata_info_count(info, STRATA_INFO_MISSING), strata_info_count(info, STRATA_INFO_WARN));
    printf("  \"sections\": [\n");
    for (section = 0; section < info->num_sections; ++section) {
        strata_info_json_section(info, section);
        printf("%s\n", (section + 1 < info->num_sections) ? "," : "");
    }
    printf("  ],\n  \"mpirun\": ");
    strata_info_json_string(info->mpirun);
    printf("\n}\n");
}

void strata_info_report_finish(strata_info_t *info)
{
    size_t missing = strata_info_count(info, STRATA_INFO_MISSING);
    size_t warnings = strata_info_count(info, STRATA_INFO_WARN);
    size_t i;

    if (info->json) {
        strata_info_json_report(info, missing == 0);
        return;
    }
    if (info->quiet) {
        return;
    }
    if (missing == 0) {
        printf("\nResult: ready for CUDA-aware MPI with Strata (%zu warning%s)\n", warnings,
               (warnings == 1) ? "" : "s");
        return;
    }
    printf("\nResult: NOT ready for CUDA-aware MPI with Strata; missing:");
    for (i = 0; i < info->num_lines; ++i) {
        if (info->lines[i].status == STRATA_INFO_MISSING) {
            printf(" [%s / %s]", info->sections[info->lines[i].section], info->lines[i].item);
        }
    }
    printf("\n");
}

void strata_info_report_free(strata_info_t *info)
{
    size_t i;

    for (i = 0; i < info->num_lines; ++i) {
        free(info->lines[i].item);
        free(info->lines[i].detail);
    }
    free(info->lines);
    info->lines     = NULL;
    info->num_lines = info->max_lines = 0;
}

const char *strata_info_bytes_str(unsigned long long bytes, char *buf, size_t max)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    size_t unit  = 0;

    while ((value >= 1024.0) && (unit + 1 < sizeof(units) / sizeof(units[0]))) {
        value /= 1024.0;
        ++unit;
    }
    snprintf(buf, max, (unit == 0) ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return buf;
}
